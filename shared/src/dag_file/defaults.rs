//! What a DAG file means by a field it leaves out: the defaults serde fills
//! in, and the constants other modules read for the same meaning (a plan
//! or work message stored before a field existed reads with them).

use crate::kinds::DepType;
use crate::subjects::DEFAULT_QUEUE;

pub(super) fn default_true() -> bool {
    true
}
/// The project a DAG file means when it names none: `default`, the one
/// every installation has.
pub const DEFAULT_PROJECT: i64 = 1;

/// [`DEFAULT_PROJECT`], for serde.
pub fn default_project() -> i64 {
    DEFAULT_PROJECT
}
pub(super) fn default_max_active_runs() -> i32 {
    1
}
pub(super) fn default_catchup_limit() -> i32 {
    100
}
pub(super) fn default_misfire_grace() -> i32 {
    60
}
pub(super) fn default_biz_date_offset() -> i32 {
    crate::biz_date::DEFAULT_OFFSET_DAYS
}
pub(super) fn default_retry_max() -> i32 {
    3
}
pub(super) fn default_retry_interval() -> i32 {
    60
}
/// Default cap of an EXPONENTIAL retry's wait, in seconds: one hour.
pub const DEFAULT_RETRY_MAX_INTERVAL_SECS: i32 = 3600;
pub(super) fn default_dep_type() -> DepType {
    DepType::Strong
}
pub(super) fn default_task_type() -> String {
    "SHELL".to_owned()
}
pub(super) fn default_priority() -> i32 {
    5
}
pub(super) fn default_timeout() -> i32 {
    3600
}
/// Default wait for a cross-run dependency: one day.
pub const DEFAULT_WAIT_TIMEOUT_SECS: i32 = 86_400;

pub(super) fn default_wait_timeout() -> i32 {
    DEFAULT_WAIT_TIMEOUT_SECS
}
pub(super) fn default_queue() -> String {
    DEFAULT_QUEUE.to_owned()
}
