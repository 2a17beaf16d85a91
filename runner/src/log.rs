//! An execution's log: the `003_*` §4.5 header and footer around the output,
//! with only the tail kept for the database.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

/// Bytes of log the database keeps per execution.
pub const TAIL_BYTES: usize = 64 * 1024;

/// Collects an execution's log lines, keeping the last [`TAIL_BYTES`].
#[derive(Debug, Default)]
pub struct LogSink {
    lines: VecDeque<String>,
    bytes: usize,
    dropped_lines: usize,
}

impl LogSink {
    /// Appends one line.
    pub fn line(&mut self, line: &str) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line.to_owned());
        while self.bytes > TAIL_BYTES && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len() + 1;
                self.dropped_lines += 1;
            }
        }
    }

    /// Writes the start header.
    pub fn header(&mut self, task_id: i64, name: &str, task_type: &str, start: DateTime<Utc>) {
        self.line("========== Task Execution Start ==========");
        self.line(&format!("Task ID: {task_id}"));
        self.line(&format!("Task Name: {name}"));
        self.line(&format!("Task Type: {task_type}"));
        self.line(&format!(
            "Start Time: {}",
            start.format("%Y-%m-%d %H:%M:%S%.3f UTC")
        ));
        self.line("==========================================");
        self.line("");
    }

    /// Writes the end footer.
    pub fn footer(&mut self, exit_code: Option<i32>, duration_ms: i64) {
        self.line("");
        self.line("========== Task Execution End ==========");
        self.line(&format!(
            "Exit Code: {}",
            exit_code.map_or_else(|| "none".to_owned(), |c| c.to_string())
        ));
        self.line(&format!("Duration: {duration_ms}ms"));
        self.line("=========================================");
    }

    /// The kept tail, with a note when earlier lines were cut.
    pub fn tail(&self) -> String {
        let mut text = String::with_capacity(self.bytes + 64);
        if self.dropped_lines > 0 {
            text.push_str(&format!(
                "[{} earlier lines cut: the database keeps the last {} KiB]\n",
                self.dropped_lines,
                TAIL_BYTES / 1024
            ));
        }
        for line in &self.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}
