//! A PostgreSQL cluster of a test's own, to crash and restart under the roles.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A PostgreSQL cluster of the test's own (`initdb` + `pg_ctl` on a free
/// port in a temporary directory), so it can be stopped and started without
/// touching the shared server. Stopped on drop. As root the PostgreSQL tools
/// run as the `postgres` user (initdb refuses root).
pub struct PgCluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

impl PgCluster {
    /// Creates the cluster (`initdb`) and starts its server.
    pub fn start() -> PgCluster {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL installed under /usr/lib/postgresql")
            .flatten()
            .map(|entry| entry.path().join("bin"))
            .filter(|bin| bin.join("pg_ctl").exists())
            .max()
            .expect("a PostgreSQL version with pg_ctl");
        let dir = tempfile::tempdir().expect("temporary directory");
        let as_postgres = std::os::unix::fs::MetadataExt::uid(
            &std::fs::metadata("/proc/self").expect("/proc/self"),
        ) == 0;
        if as_postgres {
            run_ok(Command::new("chown").arg("postgres:").arg(dir.path()));
        }
        let cluster = PgCluster {
            bin,
            dir,
            port: super::free_port(),
            as_postgres,
        };
        let data = cluster.data();
        run_ok(&mut cluster.tool(
            "initdb",
            &["-D", &data, "-U", "postgres", "-A", "trust", "--no-sync"],
        ));
        cluster.pg_ctl_start();
        cluster
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// A PostgreSQL tool, as the `postgres` user when we are root.
    fn tool(&self, name: &str, args: &[&str]) -> Command {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.args(args).stdin(Stdio::null());
        command
    }

    fn pg_ctl_start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("postgres.log").display().to_string();
        run_ok(&mut self.tool(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log,
                "-o",
                &options,
                "-w",
                "start",
            ],
        ));
    }

    /// Stops the server the way a crash would (`-m immediate`: no checkpoint,
    /// every connection cut), waits `down`, and starts it again.
    pub fn crash_and_restart(&self, down: Duration) {
        run_ok(&mut self.tool(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        ));
        std::thread::sleep(down);
        self.pg_ctl_start();
    }

    /// The URL of the cluster's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .tool("pg_ctl", &["-D", &self.data(), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs `command`, panicking with its output if it fails.
fn run_ok(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed with {}:\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
