//! The dpplan language server: LSP over stdio with lsp-server and
//! lsp-types, no async runtime. The only crate that knows the protocol:
//! everything it shows comes from `dpplan-ide`, in plain data, converted here
//! (positions in UTF-16, or UTF-8 when the client offers it).
//!
//! Logs go to stderr; stdout carries only the protocol.
#![forbid(unsafe_code)]

mod convert;
mod server;
pub mod transport;

pub use convert::TOKEN_TYPES;
pub use convert::{Encoding, Lines};
pub use lsp_server::Connection;
pub use server::{run, ServerOptions, DEFAULT_DOCS_BASE};

/// Serves over standard input and output until the client says `exit` (or
/// closes standard input). Returns whether `shutdown` came first.
pub fn run_stdio() -> std::io::Result<bool> {
    let stdin = std::io::BufReader::new(std::io::stdin());
    let (connection, threads) = transport::connect(stdin, std::io::stdout());
    eprintln!("dpplan lsp: serving on stdio");
    let clean = run(connection, ServerOptions::default());
    // `run` dropped the connection: the writer drains and stops.
    threads.join_writer()?;
    Ok(clean)
}

/// Serves over any reader and writer (pipes in tests).
pub fn run_io(
    reader: impl std::io::BufRead + Send + 'static,
    writer: impl std::io::Write + Send + 'static,
    options: ServerOptions,
) -> std::io::Result<bool> {
    let (connection, threads) = transport::connect(reader, writer);
    let clean = run(connection, options);
    threads.join_writer()?;
    Ok(clean)
}
