//! The `datajump-bench` binary: parses the command line and runs the bench.
//! Everything else is in the library (`src/lib.rs`), which says what the
//! bench measures and how; this is the edge where its error is printed.

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main]
async fn main() -> ExitCode {
    let args = datajump_bench::BenchArgs::parse();
    // The roles in this process log as they would in `datajump`; the bench
    // re-runs itself with `DATAJUMP_LOG=warn` unless it is set.
    datajump::init_tracing();
    match datajump_bench::run(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
