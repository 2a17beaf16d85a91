//! DataJump end-to-end tests: real `nats-server`, real databases, every role
//! in-process (docs/ARCHITECTURE.md, "Testing", "Invariants").
//!
//! One test binary on purpose (each extra `tests/*.rs` links sea-orm and
//! sqlx again). Each test is generated twice by [`both_dbs!`], as
//! `<name>::sqlite` and `<name>::postgres`; heavy tests are put in a nextest
//! test group by name in `.config/nextest.toml`.
//!
//! Environment: `DATAJUMP_TEST_NATS_SERVER` (default `nats-server` on PATH),
//! `DATAJUMP_TEST_PG_URL` (admin URL, default
//! `postgres://postgres@127.0.0.1:5432/postgres`), `RUST_LOG` for role logs
//! (keep a `warn` default, e.g. `warn,datajump_resolver=debug`, so each line
//! names its role). Logs are shown for failing tests only.

/// Generates a test on both databases: `both_dbs!(name, |env| async move { … })`
/// gives `name::sqlite` and `name::postgres`, each with a fresh [`harness::TestEnv`].
macro_rules! both_dbs {
    ($name:ident, |$env:ident| $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                let $env = $crate::harness::TestEnv::new($crate::harness::Backend::Sqlite).await;
                $body.await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                let $env = $crate::harness::TestEnv::new($crate::harness::Backend::Postgres).await;
                $body.await;
            }
        }
    };
}

mod alerts;
mod api;
mod api_more;
mod big_reads;
mod bigdata;
mod bounds;
mod browser;
mod catalog;
mod cli;
mod cluster;
mod control;
mod dashboard;
mod datasets;
mod dependencies;
mod deploy_names;
mod engine;
mod executors;
mod faults;
mod file_managed;
mod fire_levels;
mod forged_messages;
mod harness;
mod hostile_params;
mod idempotence;
mod joins;
mod logs;
mod maps;
mod message_ids;
mod metrics;
mod nats_auth;
mod nats_roles;
mod operator;
mod operator_sequences;
mod outputs;
mod pages;
mod projects;
mod reliability;
mod rerun;
mod retention;
mod schedule;
mod secrets;
mod sensors;
mod task_environment;
mod timeouts;
mod tokens;
mod topology;
