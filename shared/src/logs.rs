//! The shape of an execution's log that writers and readers share: the tail
//! the database keeps, its cut note, and the line numbers on live lines.
//!
//! A tail that lost its beginning starts with a note saying how many lines
//! were cut, so a reader can always tell the number of the tail's last line
//! and join it to the live stream without gaps or repeats.

/// Bytes of log the database keeps per execution.
pub const TAIL_BYTES: usize = 64 * 1024;

/// Header carrying a live line's number (1-based) on `dj.log.<execution_id>`.
pub const SEQ_HEADER: &str = "Dj-Seq";

const CUT_MARK: &str = " earlier lines cut";

/// The first line of a tail that lost `dropped` lines.
pub fn cut_note(dropped: u64) -> String {
    format!(
        "[{dropped}{CUT_MARK}: the database keeps the last {} KiB; `datajump logs` reads the full log]",
        TAIL_BYTES / 1024
    )
}

/// Lines cut before the tail's first kept line, read from its cut note.
pub fn dropped_lines(tail: &str) -> u64 {
    tail.strip_prefix('[')
        .and_then(|rest| rest.split_once(CUT_MARK))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

/// The number of the last line in a tail (0 for an empty one).
pub fn last_line_number(tail: &str) -> u64 {
    let dropped = dropped_lines(tail);
    let lines = tail.lines().count() as u64;
    if dropped > 0 {
        dropped + lines - 1
    } else {
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_survive_the_cut() {
        let tail = format!("{}\nl8\nl9\n", cut_note(7));
        assert_eq!(dropped_lines(&tail), 7);
        assert_eq!(last_line_number(&tail), 9);
        assert_eq!(last_line_number("a\nb\n"), 2);
        assert_eq!(last_line_number(""), 0);
        assert_eq!(dropped_lines("[not a note]\n"), 0);
    }
}
