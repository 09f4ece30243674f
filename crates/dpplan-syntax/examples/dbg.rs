fn main() {
    let text = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let p = dpplan_syntax::parse(&text);
    for d in p.diagnostics { println!("{} {:?} {} | {}", d.code, &text[d.primary.span.start..d.primary.span.end], d.message, d.primary.message); }
}
