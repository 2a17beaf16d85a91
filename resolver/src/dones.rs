//! `dj.done.*`: completions of ends made outside a runner's own commit
//! (kills, takeovers of a lost runner's task) and completions republished
//! after a crash. Propagating one twice is a no-op.

use async_nats::jetstream;
use chrono::Utc;
use datajump_engine::{Completion, CompletionCheck, Effects};
use datajump_shared::messages::DoneMsg;

use crate::{Committed, Config, Settlement, decode_batch};

/// Settles a batch of completions: one transaction propagates every
/// decodable one (a completion naming an instance that does not exist, or
/// not in its run, is poison). A database error retries the batch.
pub(crate) async fn commit_dones(config: &Config, messages: &[jetstream::Message]) -> Committed {
    let (mut settlements, dones) = decode_batch::<DoneMsg>(messages);
    let completions: Vec<Completion> = dones
        .iter()
        .map(|(_, done)| Completion {
            task_instance_id: done.task_instance_id,
            dag_run_id: done.dag_run_id,
        })
        .collect();
    let effects =
        match datajump_engine::propagate_completions(&config.db, &completions, Utc::now()).await {
            Ok((checks, effects)) => {
                for ((index, done), check) in dones.iter().zip(checks) {
                    settlements[*index] = Some(match check {
                        CompletionCheck::Known => Settlement::Ack,
                        CompletionCheck::UnknownInstance => Settlement::Poison(format!(
                            "task instance {} does not exist",
                            done.task_instance_id
                        )),
                        CompletionCheck::WrongRun => Settlement::Poison(format!(
                            "task instance {} is not in run {}",
                            done.task_instance_id, done.dag_run_id
                        )),
                    });
                }
                effects
            }
            Err(e) => {
                let why = format!("database: {e}");
                for (index, _) in &dones {
                    settlements[*index] = Some(Settlement::Retry(why.clone()));
                }
                Effects::default()
            }
        };
    Committed {
        settlements,
        effects,
    }
}
