//! Fires JetStream dropped as duplicates. Usually that is a second
//! ticker's copy of a fire the first one published — the whole of the
//! ticker's high availability — but a message published earlier under the
//! fire's id by anything else drops the real fire just the same, and no run
//! would come of it until the duplicate window passed. So each such fire
//! is checked once, `duplicate_check_after` ([`crate::Periods`]) after its
//! publish: if the database has
//! no run of its `dedup_key`, it is published again under a fresh id,
//! which nothing can have used first (docs/ARCHITECTURE.md "Message ids").

use std::collections::VecDeque;

use datajump_nats::Bus;
use datajump_shared::entities::dag_run;
use datajump_shared::messages::FireMsg;
use datajump_shared::subjects;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::Config;

/// Fires waiting for their check at most. A second ticker sees every fire
/// as a duplicate, so a million schedules sharing a minute fill this; the
/// checks beyond it are skipped, and said so.
const WAITING_MAX: usize = 100_000;

/// `dedup_key`s looked up in one query.
const CHECK_BATCH: usize = 500;

/// Where the cron loop hands over a fire JetStream dropped as a duplicate.
#[derive(Clone)]
pub(crate) struct Dropped(mpsc::Sender<(Instant, FireMsg)>);

/// The checker's end of [`Dropped`].
pub(crate) struct ToCheck(mpsc::Receiver<(Instant, FireMsg)>);

/// A new hand-over, both ends.
pub(crate) fn channel() -> (Dropped, ToCheck) {
    let (send, receive) = mpsc::channel(WAITING_MAX);
    (Dropped(send), ToCheck(receive))
}

impl Dropped {
    /// Asks for `fire`, just dropped as a duplicate, to be checked later.
    pub(crate) fn check_later(&self, fire: FireMsg) {
        if self.0.try_send((Instant::now(), fire)).is_err() {
            warn!(
                waiting = WAITING_MAX,
                "too many fires dropped as duplicates wait for their check; not checking this one"
            );
        }
    }
}

/// Checks each dropped fire `duplicate_check_after` after it was dropped,
/// until `shutdown`.
pub(crate) async fn run(
    config: &Config,
    bus: &Bus,
    mut to_check: ToCheck,
    shutdown: &CancellationToken,
) {
    let check_after = config.periods.duplicate_check_after;
    let mut waiting: VecDeque<(Instant, FireMsg)> = VecDeque::new();
    loop {
        let next_due = waiting.front().map(|(dropped, _)| *dropped + check_after);
        let due = async {
            match next_due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            received = to_check.0.recv() => match received {
                Some(dropped) => waiting.push_back(dropped),
                None => break,
            },
            () = due => {
                let now = Instant::now();
                let ready = waiting
                    .iter()
                    .take(CHECK_BATCH)
                    .take_while(|(dropped, _)| *dropped + check_after <= now)
                    .count();
                let batch: Vec<(Instant, FireMsg)> = waiting.drain(..ready).collect();
                if let Err(e) = check(config, bus, batch.iter().map(|(_, fire)| fire)).await {
                    warn!(error = %e, fires = batch.len(), "cannot check fires dropped as duplicates; checking them again in a second");
                    for dropped in batch.into_iter().rev() {
                        waiting.push_front(dropped);
                    }
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            },
            () = shutdown.cancelled() => break,
        }
    }
}

/// Publishes again, under fresh ids, those of `fires` that have no run.
async fn check<'a>(
    config: &Config,
    bus: &Bus,
    fires: impl Iterator<Item = &'a FireMsg> + Clone,
) -> Result<(), DbErr> {
    let have_runs: std::collections::HashSet<String> = dag_run::Entity::find()
        .select_only()
        .column(dag_run::Column::DedupKey)
        .filter(dag_run::Column::DedupKey.is_in(fires.clone().map(|f| f.dedup_key.as_str())))
        .into_tuple()
        .all(&config.db)
        .await?
        .into_iter()
        .collect();
    for fire in fires.filter(|f| !have_runs.contains(&f.dedup_key)) {
        let fresh = subjects::fresh_msg_id(&bus.fire_msg_id(fire));
        warn!(dag_id = fire.dag_id, schedule_id = ?fire.schedule_id, fire = %fire.logical_time, "a fire JetStream dropped as a duplicate has no run: something else published its id first; publishing it again under a fresh id");
        match bus.publish_fire_as(fire, &fresh).await {
            Ok(_) => {
                info!(dag_id = fire.dag_id, dedup_key = %fire.dedup_key, "suppressed fire republished")
            }
            Err(e) => {
                warn!(dag_id = fire.dag_id, dedup_key = %fire.dedup_key, error = %e, "cannot republish a suppressed fire")
            }
        }
    }
    Ok(())
}
