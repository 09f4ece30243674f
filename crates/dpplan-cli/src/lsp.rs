//! `dpplan lsp`: the language server over standard input and output.

use std::process::ExitCode;

use miette::{miette, Result};

pub fn run() -> Result<ExitCode> {
    // stdout carries the protocol: everything else goes to stderr.
    match dpplan_lsp::run_stdio() {
        // LSP: exit code 0 after `shutdown`, 1 when `exit` came without it.
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => Ok(ExitCode::from(1)),
        Err(e) => Err(miette!("language server: {e}")),
    }
}
