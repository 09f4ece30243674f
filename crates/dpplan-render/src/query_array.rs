//! A large plan's `queries` array, rendered on two threads and spliced into
//! the streamed JSON document.
//!
//! At 10⁵ queries the array is 140 MB of pretty-printed JSON and its
//! rendering was the longest step of `dpplan check --format json` that ran
//! on one thread. serde writes a document in order through one serializer,
//! so the array cannot be handed to it already rendered; instead the
//! document is serialized with a placeholder value in its place (`"queries":
//! ` followed by u128::MAX, a 39-digit integer no other value of the
//! document can be: every other number is a u64 or an f64, and inside a
//! JSON string the key's quotes would be escaped), and [`Splicer`], the
//! writer under the serializer, replaces each placeholder by the array.
//!
//! The array's bytes are exactly what serde_json's pretty printer writes for
//! it there: each element is pretty-printed alone by the same printer
//! started at the element's depth ([`Indented`]: a pretty-printed value is
//! the same at any depth but for its lines' indentation). `tests` compare
//! both ways of writing byte for byte.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::sync_channel;

use dpplan_check::QueryReport;

/// From this many queries on, a file's array is rendered on two threads.
pub(crate) const PARALLEL_QUERIES: usize = 4096;

/// Queries rendered per block (one block is in flight per thread).
const BLOCK: usize = 1024;

/// The placeholder's value; the key comes before it.
const PLACEHOLDER: u128 = u128::MAX;

/// `"queries": <placeholder>` as the pretty printer writes it.
fn pattern() -> Vec<u8> {
    format!("\"queries\": {PLACEHOLDER}").into_bytes()
}

/// Writes the placeholder in place of the queries array.
pub(crate) fn placeholder<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(PLACEHOLDER)
}

/// The writer under the serializer: passes the document through, replacing
/// the n-th placeholder by the n-th array of `arrays`.
pub(crate) struct Splicer<'a, W: Write> {
    inner: W,
    arrays: VecDeque<&'a [QueryReport]>,
    pattern: Vec<u8>,
    /// Written but not yet passed on: at least the current line (its
    /// indentation is the array's) and the pattern's length less one.
    pending: Vec<u8>,
}

impl<'a, W: Write> Splicer<'a, W> {
    pub(crate) fn new(inner: W, arrays: impl IntoIterator<Item = &'a [QueryReport]>) -> Self {
        Splicer {
            inner,
            arrays: arrays.into_iter().collect(),
            pattern: pattern(),
            pending: Vec::with_capacity(1 << 16),
        }
    }

    /// Passes on what cannot be part of a placeholder, keeping the current
    /// line.
    fn drain(&mut self) -> io::Result<()> {
        while let Some(at) = memchr::memmem::find(&self.pending, &self.pattern) {
            self.splice(at)?;
        }
        let keep_from = self
            .pending
            .len()
            .saturating_sub(self.pattern.len() - 1)
            .min(memchr::memrchr(b'\n', &self.pending).map_or(0, |i| i + 1));
        if keep_from > 0 {
            self.inner.write_all(&self.pending[..keep_from])?;
            self.pending.drain(..keep_from);
        }
        Ok(())
    }

    /// Writes everything before the placeholder at `at`, then the array.
    fn splice(&mut self, at: usize) -> io::Result<()> {
        let line_start = memchr::memrchr(b'\n', &self.pending[..at]).map_or(0, |i| i + 1);
        let indent = self.pending[line_start..at]
            .iter()
            .take_while(|&&b| b == b' ')
            .count();
        let key = at + self.pattern.len() - PLACEHOLDER.to_string().len();
        self.inner.write_all(&self.pending[..key])?;
        let Some(queries) = self.arrays.pop_front() else {
            return Err(io::Error::other(
                "JSON output: a queries placeholder without its queries",
            ));
        };
        write_array(&mut self.inner, queries, indent)?;
        self.pending.drain(..at + self.pattern.len());
        Ok(())
    }

    /// Passes everything on; every placeholder must have been replaced.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.drain()?;
        self.inner.write_all(&self.pending)?;
        if !self.arrays.is_empty() {
            return Err(io::Error::other(
                "JSON output: queries left without their placeholder",
            ));
        }
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for Splicer<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= 1 << 16 {
            self.drain()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // The end of the document is written by `finish`; a flush in the
        // middle passes on what is certain.
        self.drain()?;
        self.inner.flush()
    }
}

/// The array as the pretty printer writes it when its key is indented by
/// `indent` spaces: `[`, each element on a new line two spaces deeper,
/// separated by commas, and `]` on a line at the key's indentation.
fn write_array(w: &mut impl Write, queries: &[QueryReport], indent: usize) -> io::Result<()> {
    if queries.is_empty() {
        return w.write_all(b"[]");
    }
    w.write_all(b"[")?;
    let blocks: Vec<&[QueryReport]> = queries.chunks(BLOCK).collect();
    let blocks = &blocks;
    let render = move |i: usize| render_block(blocks[i], i * BLOCK, indent + 2);
    std::thread::scope(|s| -> io::Result<()> {
        // the odd blocks on a second thread, the even ones here, written
        // in order; at most two blocks wait
        let (tx, rx) = sync_channel::<Vec<u8>>(2);
        s.spawn(move || {
            for i in (1..blocks.len()).step_by(2) {
                if tx.send(render(i)).is_err() {
                    return;
                }
            }
        });
        for i in 0..blocks.len() {
            let bytes = if i % 2 == 0 {
                render(i)
            } else {
                rx.recv()
                    .map_err(|_| io::Error::other("JSON output: the rendering thread stopped"))?
            };
            w.write_all(&bytes)?;
        }
        Ok(())
    })?;
    w.write_all(b"\n")?;
    write_spaces(w, indent)?;
    w.write_all(b"]")
}

/// The elements of one block, each preceded by its separator (a comma for
/// all but the array's first element) and a new line at `indent`.
fn render_block(queries: &[QueryReport], first_index: usize, indent: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(queries.len() * 1536);
    for (k, q) in queries.iter().enumerate() {
        if first_index + k > 0 {
            out.push(b',');
        }
        out.push(b'\n');
        push_spaces(&mut out, indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Indented::at(indent));
        // writing to a Vec cannot fail, and a report always serializes
        let _ = serde::Serialize::serialize(q, &mut ser);
    }
    out
}

/// serde_json's pretty printer (two spaces a level) for a value whose first
/// line is indented by `base` spaces: every later line is `base` spaces
/// deeper than the pretty printer would put it alone, which is where it
/// puts it inside the document. Writing it so saves a second pass over the
/// bytes to indent them.
struct Indented {
    /// the current line's indentation, in spaces
    spaces: usize,
    has_value: bool,
}

impl Indented {
    fn at(base: usize) -> Self {
        Indented {
            spaces: base,
            has_value: false,
        }
    }

    /// `[` or `{`: one level deeper, nothing in it yet.
    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.spaces += 2;
        self.has_value = false;
        w.write_all(bracket)
    }

    /// `]` or `}`: on a line of its own at the outer level when the value
    /// holds something (`[]` and `{}` stay on one line).
    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.spaces -= 2;
        if self.has_value {
            w.write_all(b"\n")?;
            write_spaces(w, self.spaces)?;
        }
        w.write_all(bracket)
    }

    /// The line of an element or a key: after a comma unless it is the first.
    fn next_line<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        write_spaces(w, self.spaces)
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.next_line(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.next_line(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

fn push_spaces(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, b' ');
}

fn write_spaces<W: ?Sized + Write>(w: &mut W, n: usize) -> io::Result<()> {
    const SPACES: [u8; 64] = [b' '; 64];
    let mut left = n;
    while left > 0 {
        let k = left.min(SPACES.len());
        w.write_all(&SPACES[..k])?;
        left -= k;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::machine::write_document;
    use crate::FileResult;

    /// A plan of `n` one-release queries whose name and first query carry
    /// the placeholder's text, to show it is never mistaken for one.
    fn plan(n: usize) -> String {
        let mut s = String::from(
            "plan \"\\\"queries\\\": 340282366920938463463374607431768211455\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1000 delta 1e-6\n  }\n  dataset visits {\n    column uid : id\n    column page : category { \"a\", \"b\" }\n    contribution {\n      rows_per_unit 5\n    }\n  }\n",
        );
        for i in 0..n {
            let noise = if i % 2 == 0 {
                "laplace scale"
            } else {
                "gaussian sigma"
            };
            // every so often a histogram, with its cells' nested arrays
            // and objects (and an empty list or two)
            let aggregate = if i % 97 == 5 {
                "histogram(visits by page)"
            } else {
                "count(visits)"
            };
            s += &format!(
                "  query q{i} {{\n    {aggregate}\n    noise {noise} {}\n    schedule once\n  }}\n",
                1000 + i
            );
        }
        s + "}\n"
    }

    fn document(files: &[FileResult], splice: bool) -> Vec<u8> {
        let mut out = Vec::new();
        write_document(&mut out, files, None, None, splice).expect("written");
        out
    }

    /// Two large plans around a small one: the spliced document is the
    /// plain one, byte for byte, with every block boundary and both
    /// threads' blocks in it; and it is valid JSON with every query.
    #[test]
    fn the_spliced_document_is_the_plain_one() {
        let big = plan(super::PARALLEL_QUERIES + 3 * super::BLOCK + 17);
        let small = plan(3);
        let (a, b) = (dpplan_check::analyze(&big), dpplan_check::analyze(&small));
        let files = [
            FileResult {
                path: "big.dpplan",
                text: &big,
                analysis: &a,
            },
            FileResult {
                path: "small.dpplan",
                text: &small,
                analysis: &b,
            },
            FileResult {
                path: "big2.dpplan",
                text: &big,
                analysis: &a,
            },
        ];
        let plain = document(&files, false);
        let spliced = document(&files, true);
        assert!(plain == spliced, "the spliced document differs");
        let v: serde_json::Value = serde_json::from_slice(&spliced).expect("valid JSON");
        let n = v["files"][0]["queries"].as_array().map(Vec::len);
        assert_eq!(n, Some(super::PARALLEL_QUERIES + 3 * super::BLOCK + 17));
        assert_eq!(v["files"][1]["queries"].as_array().map(Vec::len), Some(3));
        assert!(v["files"][0]["plan"]
            .as_str()
            .unwrap()
            .contains("340282366920938463463374607431768211455"));
    }

    /// Negative control: a document whose placeholder has no array (or an
    /// array without its placeholder) is an error, never a silently wrong
    /// document.
    #[test]
    fn a_missing_array_or_placeholder_is_an_error() {
        use std::io::Write;
        let mut out = Vec::new();
        let mut w = super::Splicer::new(&mut out, []);
        w.write_all(b"{\n  \"queries\": 340282366920938463463374607431768211455\n}")
            .unwrap();
        assert!(w.finish().is_err());
        let text = plan(2);
        let a = dpplan_check::analyze(&text);
        let queries = &a.report.as_ref().unwrap().queries;
        let mut out = Vec::new();
        let mut w = super::Splicer::new(&mut out, [queries.as_slice()]);
        w.write_all(b"{}").unwrap();
        assert!(w.finish().is_err());
    }
}
