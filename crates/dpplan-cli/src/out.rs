//! Writing to standard output and standard error without panicking.
//!
//! `print!` panics when stdout is closed (`dpplan account plan | head -c 10`:
//! "failed printing to stdout", exit 101). Here a closed pipe on stdout is
//! the reader's choice, not an error: the command stops writing to stdout,
//! finishes what it was doing (a run still commits and reports to stderr)
//! and exits with the code it would have had. Other write errors are
//! returned. Writes to stderr never fail the command.

use std::fmt::Arguments;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout; Ok (and nothing more is written) once the reader has
/// closed the pipe.
pub fn stdout(args: Arguments<'_>) -> io::Result<()> {
    write_bytes(args.to_string().as_bytes())
}

pub fn write_bytes(bytes: &[u8]) -> io::Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut w = io::stdout().lock();
    match w.write_all(bytes).and_then(|()| w.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        r => r,
    }
}

/// Streams what `write` produces to stdout (buffered), with the same
/// treatment of a closed pipe as [`write_bytes`].
pub fn write_stream(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut w = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match write(&mut w).and_then(|()| w.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        r => r,
    }
}

/// Writes to stderr, ignoring failures (there is nowhere left to report
/// them).
pub fn stderr(args: Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

/// `print!` that survives a closed stdout; any other write error returns
/// from the enclosing function (a `miette::Result`).
macro_rules! out {
    ($($t:tt)*) => {
        miette::IntoDiagnostic::into_diagnostic($crate::out::stdout(format_args!($($t)*)))?
    };
}
/// `println!` that survives a closed stdout; any other write error returns
/// from the enclosing function (a `miette::Result`).
macro_rules! outln {
    () => { $crate::out::outln!("") };
    ($($t:tt)*) => {
        miette::IntoDiagnostic::into_diagnostic(
            $crate::out::stdout(format_args!("{}\n", format_args!($($t)*))),
        )?
    };
}
/// `eprint!` that never panics.
macro_rules! err {
    ($($t:tt)*) => { $crate::out::stderr(format_args!($($t)*)) };
}
/// `eprintln!` that never panics.
macro_rules! errln {
    ($($t:tt)*) => { $crate::out::stderr(format_args!("{}\n", format_args!($($t)*))) };
}
pub(crate) use outln;

/// Control characters escaped, so that text from a ledger (a correction's
/// reason) cannot move the cursor, clear the screen or fake a line.
pub fn escape_control(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            o.extend(c.escape_default());
        } else {
            o.push(c);
        }
    }
    o
}

/// The width the human format is fitted to: `--width N` when given (0: no
/// limit), else `COLUMNS` when it is a number, else the terminal's when
/// standard output is one, else [`dpplan_render::DEFAULT_WIDTH`] (a file,
/// a pipe, a CI log).
pub fn width(explicit: Option<usize>) -> usize {
    width_of(explicit, io::stdout().is_terminal())
}

/// [`width`] for what goes to standard error (the summary of a plan a
/// command refuses): that stream's terminal, not standard output's.
pub fn stderr_width() -> usize {
    width_of(None, io::stderr().is_terminal())
}

fn width_of(explicit: Option<usize>, terminal: bool) -> usize {
    if let Some(w) = explicit {
        return w;
    }
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
    {
        return w;
    }
    if terminal {
        if let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size() {
            return usize::from(w);
        }
    }
    dpplan_render::DEFAULT_WIDTH
}

/// A plan's diagnostics and summary in the human format, fitted to the
/// width ([`width`]), for the commands that show them on standard error
/// when they refuse a plan.
pub fn human(file: &dpplan_render::FileResult) -> String {
    let opts = dpplan_render::HumanOptions {
        width: stderr_width(),
        ..Default::default()
    };
    dpplan_render::human_with(file, false, opts)
}
