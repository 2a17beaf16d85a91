//! Process-wide figures a metrics endpoint exports.
//!
//! Kept here, not in the role that measures them, because the endpoint (in
//! `datajump-api`, or `datajump up` serving every role) may not depend on a
//! role's crate.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Tasks waiting QUEUED per queue that no live runner serves, as of the
/// ticker's last check.
static UNSERVED_QUEUES: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// Records the ticker's latest check: waiting tasks per unserved queue.
pub fn set_unserved_queues(waiting: BTreeMap<String, u64>) {
    *UNSERVED_QUEUES.lock().unwrap_or_else(|p| p.into_inner()) = waiting;
}

/// Waiting tasks per queue that no live runner serves (empty when every
/// queue with waiting work has a runner).
pub fn unserved_queues() -> BTreeMap<String, u64> {
    UNSERVED_QUEUES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}
