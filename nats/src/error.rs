//! The one error type of the crate, and the helper that wraps a failed
//! JetStream call in it with what was being done.

use thiserror::Error;

/// A NATS failure.
#[derive(Debug, Error)]
pub enum NatsError {
    /// Could not connect.
    #[error("cannot connect to NATS at {url}: {source}")]
    Connect {
        /// The URL list tried.
        url: String,
        /// Why.
        source: async_nats::ConnectError,
    },
    /// The server runs without JetStream.
    #[error(
        "the NATS server does not have JetStream enabled, and DataJump keeps its streams there: start nats-server with -js (or a `jetstream {{}}` block in its configuration)"
    )]
    NoJetStream,
    /// A JetStream API call failed.
    #[error("JetStream {what}: {source}")]
    JetStream {
        /// What was being done.
        what: String,
        /// Why.
        source: async_nats::Error,
    },
    /// A credentials or NKey seed file could not be read.
    #[error("NATS credentials {path}: {source}")]
    Credentials {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

pub(crate) fn js_err(what: impl Into<String>) -> impl FnOnce(async_nats::Error) -> NatsError {
    let what = what.into();
    move |source| NatsError::JetStream { what, source }
}
