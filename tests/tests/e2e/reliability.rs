//! Reliability behaviours (issue #4): retry spacing and exit-code filters,
//! timeouts, priorities under saturation, queue routing, catch-up, backfill
//! and graceful drain, each measured from the rows a user would read.
