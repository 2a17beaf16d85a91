//! NOOP: succeeds at once, in process. For measuring the engine itself
//! (dispatch, propagation, database round trips) without process-spawn cost.

use futures::future::BoxFuture;

use super::{ExecContext, ExecOutcome, Executor, LogSink};

/// Does nothing, successfully.
pub struct Noop;

impl Executor for Noop {
    fn execute<'a>(
        &'a self,
        _ctx: &'a ExecContext,
        _log: &'a LogSink,
    ) -> BoxFuture<'a, ExecOutcome> {
        Box::pin(async { ExecOutcome::Success })
    }
}
