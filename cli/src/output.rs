//! Terminal input and output shared by commands: lines and plain-text
//! tables on standard output, and secrets read without showing them.
//!
//! A command that prints and exits writes through [`out!`]: when its
//! reader has gone away (`datajump runs nightly | head -3`), the command
//! ends at once with success, as `cat` ends on SIGPIPE, instead of
//! panicking on the first line nobody reads. `up` and the roles keep
//! running when their output is closed, so they write through
//! [`status!`], which drops a line that cannot be written.

use std::fmt;
use std::io::{BufRead, ErrorKind, Write};

/// Prints a line on standard output for a command that prints and exits;
/// a closed output ends the command ([`line`]).
macro_rules! out {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use out;

/// Prints a line on standard output for `up` and the roles: a line that
/// cannot be written is dropped, and the process runs on.
macro_rules! status {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}
pub(crate) use status;

/// Writes `args` and a newline to standard output ([`out!`]).
pub fn line(args: fmt::Arguments<'_>) {
    write_or_end(format_args!("{args}\n"));
}

/// Writes `text` as it is (a log, which carries its own newlines).
pub fn text(text: &str) {
    write_or_end(format_args!("{text}"));
}

/// Writes to standard output; a reader gone away ends the process with
/// success, any other failure (a full disk) with an error.
fn write_or_end(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the output: {e}");
        std::process::exit(1);
    }
}

use anyhow::{Context, Result, bail};
pub use datajump_shared::naming::printable;

/// Prints rows under a header, each column as wide as its widest cell.
/// Padding by hand, not a table crate: the output is plain aligned text
/// that `grep`, `awk` and pipes read, with no borders, colours or wrapping
/// to turn off.
/// Names and paths are printed through
/// [`printable`](datajump_shared::naming::printable), so none can move the
/// cursor, clear the screen or fake a line of output.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| printable(cell).into_owned())
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// A secret given the way a command line can take one without showing it in
/// `ps` or shell history: from the environment variable `env` names, or from
/// the first line of standard input. `flag` (`--password`) names the options
/// in errors as `{flag}-env` and `{flag}-stdin`.
pub fn read_secret(flag: &str, env: Option<&str>, stdin: bool) -> Result<Option<String>> {
    if let Some(var) = env {
        let value = std::env::var(var)
            .with_context(|| format!("{flag}-env: environment variable {var} is not set"))?;
        if value.is_empty() {
            bail!("{flag}-env: environment variable {var} is empty");
        }
        return Ok(Some(value));
    }
    if stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .with_context(|| format!("{flag}-stdin: cannot read standard input"))?;
        let value = line.trim_end_matches(['\n', '\r']);
        if value.is_empty() {
            bail!("{flag}-stdin: standard input is empty");
        }
        return Ok(Some(value.to_owned()));
    }
    Ok(None)
}
