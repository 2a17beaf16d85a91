//! Group commit of a runner's claims and attempt ends.
//!
//! Every claim and every attempt's end is a small write transaction, and
//! under load dozens are due at once: a fetch fills sixteen slots together,
//! and sixteen no-op tasks end together. Paying a BEGIN and a COMMIT for
//! each (a WAL flush on PostgreSQL, a turn of the write lock on SQLite)
//! would be most of the runner's database time, so one task takes the
//! runner's writes in order and commits whatever is waiting as one
//! [`datajump_engine::record`]. Nothing waits for company: a lone write
//! commits at once, and the writes that arrive meanwhile form the next
//! batch. A batch the database refuses is redone one write per transaction,
//! so only the write at fault fails.
//!
//! The transaction that records a task's end also propagates it
//! (docs/ARCHITECTURE.md, "Propagation"). What it released is published
//! after the commit, and a task's end is answered only after that, so its
//! work message is acknowledged only once its children's work is out: a
//! runner dying in between leaves the parent's work message to be
//! redelivered, and the runner that finds the parent finished republishes
//! the children's work ([`datajump_engine::owed_by_finished`]).

use datajump_engine::{Claim, Effects, End, Ended, Recorded};
use datajump_nats::Bus;
use sea_orm::{DatabaseConnection, DbErr};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 128;

/// The instance, its new execution row and its run's outputs, if this
/// runner won the claim.
pub(crate) type ClaimOutcome = Option<datajump_engine::Claimed>;

enum Write {
    Claim(Claim),
    // Boxed: an end (its log tail, outputs and reason) is several times a
    // claim's size, and writes wait in a channel.
    End(Box<End>),
}

/// Boxed, as `Write::End` is: each carries whole instance rows.
enum Written {
    Claim(Box<ClaimOutcome>),
    End(Box<Ended>),
}

type Reply = oneshot::Sender<Result<Written, DbErr>>;

struct Pending {
    write: Write,
    reply: Reply,
}

/// The handle a runner's tasks send their writes to. The committing task
/// stops when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Committer {
    sender: mpsc::UnboundedSender<Pending>,
}

impl Committer {
    /// Starts committing writes for the runner `owner`; the work the ends
    /// release is published through `bus`.
    pub fn start(db: DatabaseConnection, bus: Bus, owner: String) -> Committer {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(serve(db, bus, owner, receiver));
        Committer { sender }
    }

    /// Claims an attempt and inserts its execution row, in the same
    /// transaction: a claimed attempt always has its row.
    pub async fn claim(&self, claim: Claim) -> Result<ClaimOutcome, DbErr> {
        match self.send(Write::Claim(claim)).await? {
            Written::Claim(claimed) => Ok(*claimed),
            Written::End(_) => Err(mismatch()),
        }
    }

    /// Commits the end of a claimed attempt — the instance's new state and
    /// its execution row — and propagates it if it is terminal; answers
    /// once the work that released is published.
    pub async fn end(&self, end: End) -> Result<Ended, DbErr> {
        match self.send(Write::End(Box::new(end))).await? {
            Written::End(ended) => Ok(*ended),
            Written::Claim(_) => Err(mismatch()),
        }
    }

    async fn send(&self, write: Write) -> Result<Written, DbErr> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Pending { write, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> DbErr {
    DbErr::Custom("the runner's committer has stopped".to_owned())
}

fn mismatch() -> DbErr {
    DbErr::Custom("the runner's committer answered another kind of write".to_owned())
}

async fn serve(
    db: DatabaseConnection,
    bus: Bus,
    owner: String,
    mut receiver: mpsc::UnboundedReceiver<Pending>,
) {
    while let Some(first) = receiver.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH
            && let Ok(next) = receiver.try_recv()
        {
            batch.push(next);
        }
        let writes: Vec<&Write> = batch.iter().map(|p| &p.write).collect();
        match write_all(&db, &owner, &writes).await {
            Ok((written, effects)) => {
                let replies = batch.into_iter().map(|pending| pending.reply);
                answer(&bus, replies.zip(written).collect(), effects);
            }
            Err(e) if batch.len() == 1 => {
                if let Some(pending) = batch.pop() {
                    let _ = pending.reply.send(Err(e));
                }
            }
            Err(e) => {
                warn!(error = %e, writes = batch.len(), "a batch of claims and ends failed; committing them one at a time");
                for pending in batch {
                    match write_all(&db, &owner, &[&pending.write]).await {
                        Ok((written, effects)) => {
                            answer(
                                &bus,
                                vec![pending.reply].into_iter().zip(written).collect(),
                                effects,
                            );
                        }
                        Err(e) => {
                            let _ = pending.reply.send(Err(e));
                        }
                    }
                }
            }
        }
    }
}

/// Answers a committed batch: claims at once, ends after what the commit
/// owes is published (in the background, so the next batch commits
/// meanwhile).
fn answer(bus: &Bus, written: Vec<(Reply, Written)>, effects: Effects) {
    abort_after_commit_if_asked(&written);
    let (claims, ends): (Vec<_>, Vec<_>) = written
        .into_iter()
        .partition(|(_, written)| matches!(written, Written::Claim(_)));
    for (reply, claimed) in claims {
        let _ = reply.send(Ok(claimed));
    }
    if ends.is_empty() {
        return;
    }
    let bus = bus.clone();
    tokio::spawn(async move {
        // A failed publish is logged; the deadline scan republishes.
        let _ = effects.publish(&bus).await;
        for (reply, ended) in ends {
            let _ = reply.send(Ok(ended));
        }
    });
}

/// Test-only fault injection, for the fault tests of `datajump-tests`: with
/// `DATAJUMP_FAULT_EXIT_AFTER_COMMIT=1` in its environment the runner process
/// aborts right after committing an attempt's terminal state, before it
/// publishes the work that released and acks the work message — the crash
/// window that redelivery must close (docs/ARCHITECTURE.md, "Crashes").
/// Never set it in production. This is the only place that reads it.
fn abort_after_commit_if_asked(written: &[(Reply, Written)]) {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let asked = *ASKED.get_or_init(|| {
        std::env::var("DATAJUMP_FAULT_EXIT_AFTER_COMMIT").is_ok_and(|value| value == "1")
    });
    let ended_a_task = || {
        written.iter().any(|(_, written)| {
            matches!(written, Written::End(ended) if ended.finished.as_ref().is_some_and(|row| row.status.is_terminal()))
        })
    };
    if asked && ended_a_task() {
        warn!("DATAJUMP_FAULT_EXIT_AFTER_COMMIT=1: aborting after the commit (test-only fault)");
        std::process::abort();
    }
}

/// Records `writes` in one transaction ([`datajump_engine::record`]) and
/// answers each in order.
async fn write_all(
    db: &DatabaseConnection,
    owner: &str,
    writes: &[&Write],
) -> Result<(Vec<Written>, Effects), DbErr> {
    let (mut claims, mut ends): (Vec<&Claim>, Vec<&End>) = (Vec::new(), Vec::new());
    for write in writes {
        match write {
            Write::Claim(claim) => claims.push(claim),
            Write::End(end) => ends.push(end),
        }
    }
    let (mut recorded, effects): (Recorded, Effects) =
        datajump_engine::record(db, owner, &claims, &ends, chrono::Utc::now()).await?;
    let written = writes
        .iter()
        .map(|write| match write {
            // Two copies of one work message in a batch: the first gets the row.
            Write::Claim(claim) => {
                Written::Claim(Box::new(recorded.claimed.remove(&claim.task_instance_id)))
            }
            Write::End(end) => Written::End(Box::new(
                recorded
                    .ended
                    .remove(&end.task_instance_id)
                    .unwrap_or_default(),
            )),
        })
        .collect();
    Ok((written, effects))
}
