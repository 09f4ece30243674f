//! The language server's integration tests, one binary (`cargo test -p
//! dpplan-lsp --test it`; one file: `--test it features::`): in process
//! over `Connection::memory()` and, for the transport, the real `dpplan lsp`
//! over OS pipes (`common`, `common::process`).

mod common;

mod analysis;
mod features;
mod framing;
mod policy;
mod responsive;
mod robustness;
mod typos;
