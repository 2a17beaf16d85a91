//! An execution's log: the required log header and footer around the output,
//! written three ways at once. Each line goes live to `dj.log.<execution_id>`
//! (core NATS, header `Dj-Seq` = line number, for `datajump logs --follow`,
//! which asks the sink for the lines before it subscribed),
//! into a capped tail the database keeps, and — once the tail has to cut
//! its first line — into a temporary file that becomes the full log in the
//! `dj_logs` object store when the attempt ends. Most logs fit the tail:
//! storing them twice cost every task an object-store put (three JetStream
//! round trips and a rollup), and even creating and deleting an unused
//! temporary file per task showed up in profiles (ext4 inode allocation).
//!
//! The sink is a cheap clonable handle, so the runner can snapshot the tail
//! into the database while an executor is still writing.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use tokio::sync::mpsc;

use datajump_shared::logs::{SEQ_HEADER, TAIL_BYTES, cut_note};
use datajump_shared::outputs::{self, Outputs};
use datajump_shared::subjects::{self, Namespace};
use tracing::warn;

/// Live lines waiting to be published, at most: beyond them a fast task's
/// lines are skipped on the live stream (they stay in the log), so its
/// output cannot grow the runner's memory.
const LIVE_LINES: usize = 4096;

/// The channel live lines wait in for their publisher: bounded, so lines
/// a slow publisher has not taken are skipped, not kept.
fn live_channel() -> (mpsc::Sender<LiveLine>, mpsc::Receiver<LiveLine>) {
    mpsc::channel(LIVE_LINES)
}

/// A line for the live stream: its number and its text.
type LiveLine = (u64, String);

/// The most bytes of a log kept in its full copy unless the runner says
/// otherwise (`--max-log-bytes`).
pub const DEFAULT_MAX_LOG_BYTES: u64 = 100 * 1024 * 1024;

struct Inner {
    tail: VecDeque<String>,
    tail_bytes: usize,
    seq: u64,
    /// Where the whole log goes once the tail has cut a line.
    full: Spill,
    /// The most bytes the full copy keeps.
    max_bytes: u64,
    live: Option<mpsc::Sender<LiveLine>>,
    /// What `##dj-output` lines declared.
    outputs: Outputs,
}

impl Default for Inner {
    fn default() -> Inner {
        Inner {
            tail: VecDeque::new(),
            tail_bytes: 0,
            seq: 0,
            full: Spill::NotNeeded,
            max_bytes: DEFAULT_MAX_LOG_BYTES,
            live: None,
            outputs: Outputs::new(),
        }
    }
}

/// The full copy of a log, which exists only for logs the tail cannot hold.
#[derive(Default)]
enum Spill {
    /// The tail still holds every line.
    #[default]
    NotNeeded,
    /// Every line so far is in the file, `written` bytes of it.
    Writing {
        file: tempfile::NamedTempFile,
        writer: std::io::BufWriter<std::fs::File>,
        written: u64,
    },
    /// The file reached the cap: later lines reach only the tail and the
    /// live stream, and are counted for the note that ends the file.
    Capped {
        file: tempfile::NamedTempFile,
        writer: std::io::BufWriter<std::fs::File>,
        cap: u64,
        lines: u64,
        bytes: u64,
    },
    /// The file could not be created or written: the tail is all there is.
    Failed,
}

impl Spill {
    /// Starts the file with `lines`, the whole log so far, keeping at most
    /// `cap` bytes.
    fn start<'a>(lines: impl Iterator<Item = &'a String>, cap: u64) -> Spill {
        let started = (|| {
            let file = tempfile::Builder::new()
                .prefix(&format!("{}log-", crate::leftovers::prefix()))
                .tempfile()?;
            let writer = std::io::BufWriter::new(file.reopen()?);
            let mut spill = Spill::Writing {
                file,
                writer,
                written: 0,
            };
            for line in lines {
                spill.write(line, cap);
            }
            Ok::<_, std::io::Error>(spill)
        })();
        started.unwrap_or(Spill::Failed)
    }

    fn write(&mut self, line: &str, cap: u64) {
        let size = line.len() as u64 + 1;
        match self {
            Spill::Writing { written, .. } if *written + size > cap => {
                if let Spill::Writing { file, writer, .. } = std::mem::take(self) {
                    *self = Spill::Capped {
                        file,
                        writer,
                        cap,
                        lines: 1,
                        bytes: size,
                    };
                }
            }
            Spill::Writing {
                writer, written, ..
            } => {
                if writeln!(writer, "{line}").is_err() {
                    *self = Spill::Failed;
                } else {
                    *written += size;
                }
            }
            Spill::Capped { lines, bytes, .. } => {
                *lines += 1;
                *bytes += size;
            }
            Spill::NotNeeded | Spill::Failed => {}
        }
    }

    /// The finished file. When the cap cut it, what the file holds is the
    /// log's head; `tail` (the last lines, as the database keeps them) is
    /// appended after a note of what was dropped between the two, since the
    /// error that ended a task is usually at its end.
    fn finish(self, tail: &VecDeque<String>) -> Option<tempfile::NamedTempFile> {
        match self {
            Spill::Writing {
                file, mut writer, ..
            } => writer.flush().is_ok().then_some(file),
            Spill::Capped {
                file,
                mut writer,
                cap,
                lines,
                bytes,
            } => {
                // The tail's last `lines` lines are those the file lacks;
                // a shorter tail leaves a gap.
                let kept = tail.len().min(usize::try_from(lines).unwrap_or(usize::MAX));
                let kept_lines = || tail.iter().skip(tail.len() - kept);
                let kept_bytes: u64 = kept_lines().map(|l| l.len() as u64 + 1).sum();
                let dropped_lines = lines - kept as u64;
                let dropped_bytes = bytes.saturating_sub(kept_bytes);
                let written = (|| {
                    if dropped_lines > 0 {
                        writeln!(
                            writer,
                            "[datajump] log cut at {cap} bytes (--max-log-bytes): the {dropped_lines} \
                             lines ({dropped_bytes} bytes) after this point were dropped; the last \
                             {kept} lines follow"
                        )?;
                    }
                    for line in kept_lines() {
                        writeln!(writer, "{line}")?;
                    }
                    writer.flush()
                })();
                written.is_ok().then_some(file)
            }
            Spill::NotNeeded | Spill::Failed => None,
        }
    }
}

/// What a log's header says about the attempt (the product's log format,
/// with the instance and attempt beside the task, and the start time in
/// the run's time zone, as its schedule reads times).
#[derive(Debug, Clone)]
pub struct Heading<'a> {
    /// The task definition.
    pub task_id: i64,
    /// The task instance: what `datajump logs` and `kill` take.
    pub task_instance_id: i64,
    /// The attempt, 0-based (printed 1-based).
    pub attempt: i32,
    /// The task's name.
    pub name: &'a str,
    /// SHELL, PYTHON, SQL or HTTP.
    pub task_type: &'a str,
    /// When the attempt started.
    pub start: DateTime<Utc>,
    /// The run's time zone.
    pub time_zone: chrono_tz::Tz,
}

/// Collects an execution's log lines.
#[derive(Clone, Default)]
pub struct LogSink(Arc<Mutex<Inner>>);

/// What is left of a log once the attempt has ended.
pub struct FinishedLog {
    /// The capped tail, with a note when earlier lines were cut; without
    /// that note it is the whole log.
    pub tail: String,
    /// The whole log, when the tail had to cut lines (and the disk copy
    /// could be written).
    pub full: Option<tempfile::NamedTempFile>,
    /// What its `##dj-output` lines declared.
    pub outputs: Outputs,
}

impl LogSink {
    /// A sink publishing live lines on `dj.log.<execution_id>` and answering
    /// tail requests on [`Namespace::log_tail_request`] until it finishes.
    /// Its full copy keeps at most `max_bytes`.
    pub fn new(nats: Option<(async_nats::Client, &Namespace, i64)>, max_bytes: u64) -> LogSink {
        let sink = LogSink::default();
        sink.with(|inner| inner.max_bytes = max_bytes);
        if let Some((client, names, execution_id)) = nats {
            let (sender, receiver) = live_channel();
            sink.with(|inner| inner.live = Some(sender));
            tokio::spawn(serve_live(
                client,
                names.log(execution_id),
                names.log_tail_request(execution_id),
                receiver,
                Arc::downgrade(&sink.0),
            ));
        }
        sink
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Appends one line; a `##dj-output name=value` line also declares an
    /// output (one that breaks the rules is noted in the log, not kept).
    pub fn line(&self, line: &str) {
        self.append(line);
        if let Some(written) = line.strip_prefix(outputs::LINE_PREFIX)
            && let Err(e) = self.with(|inner| outputs::add(&mut inner.outputs, written))
        {
            self.append(&format!("[datajump] output not kept: {e}"));
        }
    }

    /// Declares the output `name=value` a task wrote to its `$DJ_OUTPUT`
    /// file (one that breaks the rules is noted in the log, not kept).
    pub fn output(&self, written: &str) {
        if let Err(e) = self.with(|inner| outputs::add(&mut inner.outputs, written)) {
            self.append(&format!("[datajump] output not kept: {e}"));
        }
    }

    fn append(&self, line: &str) {
        self.with(|inner| {
            inner.seq += 1;
            if let Some(live) = &inner.live {
                // A task writing faster than NATS takes its lines loses
                // live lines, never logged ones: followers see the gap in
                // the numbers and fill it from the stored log.
                let _ = live.try_send((inner.seq, line.to_owned()));
            }
            inner.tail_bytes += line.len() + 1;
            inner.tail.push_back(line.to_owned());
            if inner.tail_bytes > TAIL_BYTES && matches!(inner.full, Spill::NotNeeded) {
                // The first cut: the tail still holds the whole log.
                inner.full = Spill::start(inner.tail.iter(), inner.max_bytes);
            } else {
                let cap = inner.max_bytes;
                inner.full.write(line, cap);
            }
            while inner.tail_bytes > TAIL_BYTES && inner.tail.len() > 1 {
                if let Some(old) = inner.tail.pop_front() {
                    inner.tail_bytes -= old.len() + 1;
                }
            }
        });
    }

    /// Writes the start header.
    pub fn header(&self, heading: &Heading<'_>) {
        self.line("========== Task Execution Start ==========");
        self.line(&format!("Task ID: {}", heading.task_id));
        self.line(&format!("Task Instance ID: {}", heading.task_instance_id));
        self.line(&format!("Attempt: {}", heading.attempt + 1));
        self.line(&format!("Task Name: {}", heading.name));
        self.line(&format!("Task Type: {}", heading.task_type));
        self.line(&format!(
            "Start Time: {} ({})",
            heading
                .start
                .with_timezone(&heading.time_zone)
                .format("%Y-%m-%d %H:%M:%S%.3f %:z"),
            heading.time_zone.name()
        ));
        self.line("==========================================");
        self.line("");
    }

    /// Writes the end footer.
    pub fn footer(&self, exit_code: Option<i32>, duration_ms: i64) {
        self.line("");
        self.line("========== Task Execution End ==========");
        self.line(&format!(
            "Exit Code: {}",
            exit_code.map_or_else(|| "none".to_owned(), |c| c.to_string())
        ));
        self.line(&format!("Duration: {duration_ms}ms"));
        self.line("=========================================");
    }

    /// The kept tail: `[N earlier lines cut …]` first when lines were dropped,
    /// so the number of the tail's last line is always derivable.
    pub fn tail(&self) -> String {
        self.with(|inner| {
            let dropped = inner.seq - inner.tail.len() as u64;
            let mut text = String::with_capacity(inner.tail_bytes + 80);
            if dropped > 0 {
                text.push_str(&cut_note(dropped));
                text.push('\n');
            }
            for line in &inner.tail {
                text.push_str(line);
                text.push('\n');
            }
            text
        })
    }

    /// Ends the log: stops live publishing and flushes the full copy, which
    /// exists only when the tail is not the whole log.
    pub fn finish(&self) -> FinishedLog {
        let (full, outputs) = self.with(|inner| {
            inner.live = None;
            (
                std::mem::take(&mut inner.full).finish(&inner.tail),
                std::mem::take(&mut inner.outputs),
            )
        });
        FinishedLog {
            tail: self.tail(),
            full,
            outputs,
        }
    }
}

/// Publishes the lines `receiver` gets and answers tail requests, until the
/// sink finishes (drops the sender) or NATS goes away. Holds the sink weakly:
/// the sink owns the sender that keeps this task alive.
async fn serve_live(
    client: async_nats::Client,
    subject: String,
    tail_requests: String,
    mut receiver: mpsc::Receiver<LiveLine>,
    sink: Weak<Mutex<Inner>>,
) {
    // Without the subscription `logs --follow` falls back to the database.
    let mut requests = client.subscribe(tail_requests).await.ok();
    loop {
        tokio::select! {
            line = receiver.recv() => {
                let Some((seq, line)) = line else { break };
                let mut headers = async_nats::HeaderMap::new();
                headers.insert(SEQ_HEADER, seq.to_string().as_str());
                if client
                    .publish_with_headers(subject.clone(), headers, line.into())
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Some(request) = async {
                match requests.as_mut() {
                    Some(requests) => requests.next().await,
                    None => std::future::pending().await,
                }
            } => {
                let (Some(reply), Some(sink)) = (request.reply, sink.upgrade()) else {
                    continue;
                };
                let tail = LogSink(sink).tail();
                let _ = client.publish(reply, tail.into()).await;
            }
        }
    }
}

/// Uploads a full log the tail could not hold to the `dj_logs` object
/// store; returns its name there, or `None` when there is none or it could
/// not be stored (the database keeps the tail either way).
pub(crate) async fn store_full_log(
    store: &async_nats::jetstream::object_store::ObjectStore,
    execution_id: i64,
    file: Option<tempfile::NamedTempFile>,
) -> Option<String> {
    let file = file?;
    let name = subjects::log_object(execution_id);
    let mut reader = tokio::fs::File::open(file.path()).await.ok()?;
    match store.put(name.as_str(), &mut reader).await {
        Ok(_) => Some(name),
        Err(e) => {
            warn!(error = %e, "cannot store the full log; the database keeps its tail");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use datajump_shared::logs::{dropped_lines, last_line_number};

    #[test]
    fn a_publisher_that_falls_behind_holds_at_most_the_live_bound() {
        // Nobody takes the live lines, as when NATS is slower than a task
        // printing as fast as it can.
        let (sender, receiver) = live_channel();
        let sink = LogSink::new(None, DEFAULT_MAX_LOG_BYTES);
        sink.with(|inner| inner.live = Some(sender));
        let lines = 3 * LIVE_LINES;
        for i in 0..lines {
            sink.line(&format!("line {i} {}", "x".repeat(40)));
        }
        assert_eq!(receiver.len(), LIVE_LINES, "waiting live lines");
        // The log itself keeps every line.
        let finished = sink.finish();
        let full = finished
            .full
            .expect("a log past the tail keeps its full copy");
        let text = std::fs::read_to_string(full.path()).expect("the full copy");
        assert_eq!(text.lines().count(), lines);
    }

    #[test]
    fn tail_is_capped_with_a_readable_note() {
        let sink = LogSink::default();
        let line = "x".repeat(1000);
        for _ in 0..200 {
            sink.line(&line);
        }
        let tail = sink.tail();
        assert!(tail.len() <= TAIL_BYTES + 200);
        let dropped = dropped_lines(&tail);
        assert!(dropped > 100, "{dropped}");
        assert_eq!(last_line_number(&tail), 200);
    }

    #[test]
    fn only_a_cut_log_keeps_its_full_copy() {
        let sink = LogSink::new(None, DEFAULT_MAX_LOG_BYTES);
        sink.line("a");
        let finished = sink.finish();
        assert!(finished.full.is_none(), "the tail is the whole log");
        assert_eq!(finished.tail, "a\n");

        let sink = LogSink::new(None, DEFAULT_MAX_LOG_BYTES);
        for i in 0..200 {
            sink.line(&format!("{i:04} {}", "x".repeat(1000)));
        }
        let finished = sink.finish();
        let full = finished.full.expect("a cut log keeps its full copy");
        let text = std::fs::read_to_string(full.path()).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 200, "lines before and after the first cut");
        assert!(lines[0].starts_with("0000 ") && lines[199].starts_with("0199 "));
        assert!(dropped_lines(&finished.tail) > 0);
    }

    #[test]
    fn a_capped_copy_keeps_the_head_and_the_tail_with_a_note_between() {
        let sink = LogSink::new(None, 150_000);
        for i in 0..400 {
            sink.line(&format!("{i:04} {}", "x".repeat(995)));
        }
        let finished = sink.finish();
        let full = finished.full.expect("a full copy");
        let text = std::fs::read_to_string(full.path()).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("0000 "), "the head");
        assert!(
            lines.last().is_some_and(|l| l.starts_with("0399 ")),
            "the last line is kept"
        );
        let note = lines
            .iter()
            .position(|l| l.contains("log cut at 150000 bytes"))
            .expect("a note where lines were dropped");
        assert!(lines[note - 1].starts_with("0148 "), "{}", lines[note - 1]);
        let tail_kept = lines.len() - note - 1;
        let dropped = 400 - 149 - tail_kept;
        assert!(
            lines[note].contains(&format!("the {dropped} lines")),
            "{}",
            lines[note]
        );
        assert!(lines[note + 1].starts_with(&format!("{:04} ", 149 + dropped)));
        assert!(text.len() < 150_000 + TAIL_BYTES + 1_000, "{}", text.len());
        // The tail still ends with the last lines.
        assert_eq!(last_line_number(&finished.tail), 400);
    }

    #[test]
    fn a_log_just_over_its_cap_loses_no_line() {
        let sink = LogSink::new(None, 150_000);
        for i in 0..160 {
            sink.line(&format!("{i:04} {}", "x".repeat(995)));
        }
        let finished = sink.finish();
        let full = finished.full.expect("a full copy");
        let text = std::fs::read_to_string(full.path()).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 160, "the tail covers what the cap cut");
        assert!(!text.contains("log cut at"));
        assert!(lines[159].starts_with("0159 "));
    }

    #[test]
    fn short_log_is_whole() {
        let sink = LogSink::default();
        sink.line("a");
        sink.line("b");
        assert_eq!(sink.tail(), "a\nb\n");
        assert_eq!(dropped_lines(&sink.tail()), 0);
    }
}
