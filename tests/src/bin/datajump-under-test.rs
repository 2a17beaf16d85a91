//! The real `datajump` CLI, built as a binary of this package so the fault
//! tests can start the roles as separate processes and kill them:
//! `env!("CARGO_BIN_EXE_datajump-under-test")` exists only for binaries of
//! the package whose tests use it, and `cargo nextest run -p datajump-tests`
//! builds this one (not the `datajump` package's binary) before the tests.

fn main() -> std::process::ExitCode {
    datajump::main()
}
