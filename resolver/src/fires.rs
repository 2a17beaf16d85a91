//! `dj.fire.p<N>.*`: fires from the ticker, triggers, backfills and events
//! become runs, a batch per transaction.

use async_nats::jetstream;
use chrono::Utc;
use datajump_engine::{Effects, FireOutcome};
use datajump_shared::messages::FireMsg;
use tracing::warn;

use crate::{Committed, Config, Settlement, decode_batch};

/// Turns a batch of fires into runs in one transaction
/// ([`datajump_engine::create_runs`]). If the batch fails, its fires are
/// tried one at a time, so one fire the database keeps refusing holds back
/// no other.
pub(crate) async fn commit_fires(config: &Config, messages: &[jetstream::Message]) -> Committed {
    let (mut settlements, fires) = decode_batch::<FireMsg>(messages);
    let all: Vec<&FireMsg> = fires.iter().map(|(_, fire)| fire).collect();
    let mut effects = Effects::default();
    let outcomes: Vec<(usize, FireOutcome)> = match datajump_engine::create_runs(
        &config.db,
        &all,
        Utc::now(),
    )
    .await
    {
        Ok((outcomes, created)) => {
            effects = created;
            fires
                .iter()
                .map(|(index, _)| *index)
                .zip(outcomes)
                .collect()
        }
        Err(e) if fires.len() == 1 => {
            settlements[fires[0].0] = Some(e.into());
            Vec::new()
        }
        Err(e) => {
            warn!(error = %e, fires = fires.len(), "a batch of fires failed; creating their runs one at a time");
            let mut outcomes = Vec::with_capacity(fires.len());
            for (index, fire) in &fires {
                match datajump_engine::create_runs(&config.db, &[fire], Utc::now()).await {
                    Ok((one, created)) => {
                        outcomes.extend(one.into_iter().map(|outcome| (*index, outcome)));
                        effects.merge(created);
                    }
                    Err(e) => settlements[*index] = Some(e.into()),
                }
            }
            outcomes
        }
    };
    for (index, outcome) in outcomes {
        settlements[index] = Some(match outcome {
            FireOutcome::UnknownDag(dag_id) => {
                Settlement::Poison(format!("DAG {dag_id} does not exist"))
            }
            FireOutcome::Created
            | FireOutcome::Ignored
            | FireOutcome::Exists
            | FireOutcome::Skipped => Settlement::Ack,
        });
    }
    Committed {
        settlements,
        effects,
    }
}
