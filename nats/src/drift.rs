//! [`Drift`]: how an existing stream or consumer differs from what DataJump
//! expects, reported and never corrected.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, stream};

/// A difference between what exists on the server and what DataJump expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Stream, consumer or bucket name.
    pub object: String,
    /// What differs.
    pub detail: String,
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.object, self.detail)
    }
}

pub(crate) fn stream_drift(want: &stream::Config, have: &stream::Config) -> Vec<Drift> {
    let mut drift = Vec::new();
    let mut check = |field: &str, differs: bool, detail: String| {
        if differs {
            drift.push(Drift {
                object: want.name.clone(),
                detail: format!("{field} {detail}"),
            });
        }
    };
    check(
        "subjects",
        want.subjects != have.subjects,
        format!("is {:?}, expected {:?}", have.subjects, want.subjects),
    );
    check(
        "retention",
        want.retention != have.retention,
        format!("is {:?}, expected {:?}", have.retention, want.retention),
    );
    check(
        "duplicate_window",
        want.duplicate_window != Duration::ZERO && have.duplicate_window < want.duplicate_window,
        format!(
            "is {:?}, expected at least {:?}",
            have.duplicate_window, want.duplicate_window
        ),
    );
    check(
        "max_age",
        want.max_age != have.max_age,
        format!("is {:?}, expected {:?}", have.max_age, want.max_age),
    );
    check(
        "num_replicas",
        want.num_replicas != have.num_replicas,
        replicas_differ(have.num_replicas, want.num_replicas),
    );
    drift
}

/// How a stream's copies differ from DataJump's, and the command that
/// scales them (never done on its own: see [`scale_topology`]).
///
/// [`scale_topology`]: crate::scale_topology
pub(crate) fn replicas_differ(have: usize, want: usize) -> String {
    format!(
        "is {have}, expected {want} (scale it with `datajump topology apply --replicas {want}`)"
    )
}

pub(crate) fn consumer_drift(
    stream: &str,
    want: &pull::Config,
    have: &jetstream::consumer::Config,
) -> Vec<Drift> {
    let object = format!("{stream}/{}", want.durable_name.as_deref().unwrap_or(""));
    let mut drift = Vec::new();
    let mut check = |differs: bool, detail: String| {
        if differs {
            drift.push(Drift {
                object: object.clone(),
                detail,
            });
        }
    };
    check(
        want.filter_subject != have.filter_subject,
        format!(
            "filter_subject is {:?}, expected {:?}",
            have.filter_subject, want.filter_subject
        ),
    );
    check(
        want.ack_policy != have.ack_policy,
        format!(
            "ack_policy is {:?}, expected {:?}",
            have.ack_policy, want.ack_policy
        ),
    );
    check(
        have.max_deliver > 0,
        format!(
            "max_deliver is {}, expected unlimited: messages could be dropped",
            have.max_deliver
        ),
    );
    check(
        !have.backoff.is_empty(),
        "has a backoff list, which overrides ack_wait".to_owned(),
    );
    drift
}

/// A drift entry for an object that does not exist.
pub(crate) fn missing(object: &str) -> Drift {
    Drift {
        object: object.to_owned(),
        detail: "missing".to_owned(),
    }
}
