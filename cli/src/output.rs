//! Terminal input and output shared by commands: plain-text tables and
//! secrets read without showing them.

use std::io::BufRead;

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
        println!("{}", padded.join("  ").trim_end());
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
