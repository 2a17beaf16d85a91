//! SPARK and FLINK tasks run for real by `datajump runner` processes, one
//! per engine on a queue of its own, as an operator would set them up: a
//! PySpark job and a `spark-sql` statement in `local[1]` mode from PyPI's
//! `pyspark`, and a PyFlink job on a local mini-cluster (`flink run -t
//! local`) from PyPI's `apache-flink`. `scripts/setup-services.sh` installs
//! both into `target/venv-spark` and `target/venv-flink` when asked
//! (`DATAJUMP_NEED_BIGDATA=1`, which `scripts/test.sh` sets). They need
//! Java: where it is absent they are skipped, and the skip is printed.
//!
//! The Spark and Flink jobs also read a credential property whose value is
//! a stored secret, while a watcher reads every process's command line
//! (`/proc/<pid>/cmdline`, what any user of the host can read) for it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datajump_shared::RunStatus;
use datajump_shared::dag_file::DEFAULT_PROJECT;

use crate::harness::process::{start_resolver, start_runner};
use crate::harness::{Backend, TestEnv};

/// A JVM starting Spark or Flink on a shared 2-core machine takes tens of
/// seconds.
const TIMEOUT: Duration = Duration::from_secs(240);

fn java_present() -> bool {
    Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The virtualenv `scripts/setup-services.sh` installed `package` into
/// and named in `variable`, and the package's home in it (the installed
/// Python package's folder).
fn installed(variable: &str, package: &str) -> (PathBuf, PathBuf) {
    let venv = PathBuf::from(std::env::var_os(variable).unwrap_or_else(|| {
        panic!(
            "{variable} is not set: run `DATAJUMP_NEED_BIGDATA=1 source scripts/setup-services.sh` first (scripts/test.sh does)"
        )
    }));
    let home = std::fs::read_dir(venv.join("lib"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|python| python.path().join("site-packages").join(package))
        .find(|home| home.join("bin").is_dir())
        .unwrap_or_else(|| panic!("{package} is not installed in {}", venv.display()));
    (venv.join("bin"), home)
}

/// `bin` first on this process's `PATH`.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// What a [`CommandLineWatch`] saw.
#[derive(Debug, Default)]
struct Seen {
    /// Command lines that held the secret.
    leaks: Vec<String>,
    /// The markers some command line held: proof the watch saw the
    /// processes it is about.
    markers: Vec<&'static str>,
}

/// Reads every process's command line, over and over, until stopped.
struct CommandLineWatch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Seen>,
}

impl CommandLineWatch {
    fn start(secret: &str, markers: &'static [&'static str]) -> CommandLineWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let secret = secret.to_owned();
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen = Seen::default();
            while !stopped.load(Ordering::Relaxed) {
                for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    // A process may end between the listing and the read.
                    let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                        continue;
                    };
                    let line = String::from_utf8_lossy(&raw).replace('\0', " ");
                    if line.contains(&secret) {
                        seen.leaks.push(line.chars().take(400).collect());
                    }
                    for marker in markers {
                        if line.contains(marker) && !seen.markers.contains(marker) {
                            seen.markers.push(marker);
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        CommandLineWatch { stop, thread }
    }

    fn finish(self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the watch thread")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spark_and_flink_tasks_run_real_jobs() {
    if !java_present() {
        eprintln!("SKIPPED: no java on PATH; the SPARK and FLINK tasks need a JVM");
        return;
    }
    let (spark_bin, spark_home) = installed("DATAJUMP_SPARK_VENV", "pyspark");
    let (flink_bin, flink_home) = installed("DATAJUMP_FLINK_VENV", "pyflink");
    let env = TestEnv::new(Backend::Postgres).await;
    // The jobs print the secret reversed: proof it arrived, which the log
    // may show, unlike the value itself.
    const SECRET: &str = "s3-Secret-7f3a-from-the-store";
    datajump_store::secrets::set(&env.db, DEFAULT_PROJECT, "s3_key", SECRET, None)
        .await
        .expect("secret stored");
    let reversed: String = SECRET.chars().rev().collect();
    // Each line the jobs print is one write: with PYTHONUNBUFFERED, print()
    // writes its parts one by one, and the JVM's log lines on the same pipe
    // land between them ("key: <log line>\n<value>").
    let spark_job = env.path("count.py");
    std::fs::write(
        &spark_job,
        "import sys\nfrom pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\nsys.stdout.write(f'rows: {spark.range(5).count()} day: {sys.argv[1]}\\n')\nsys.stdout.write('key: ' + spark.sparkContext.getConf().get('spark.hadoop.fs.s3a.secret.key')[::-1] + '\\n')\nsys.stdout.flush()\nspark.stop()\n",
    )
    .expect("write the Spark job");
    let flink_job = env.path("table.py");
    std::fs::write(
        &flink_job,
        "import sys\nfrom pyflink.table import EnvironmentSettings, TableEnvironment\nt_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())\nsys.stdout.write('key: ' + t_env.get_config().get('s3.secret-key', 'none')[::-1] + '\\n')\nsys.stdout.flush()\ntable = t_env.from_elements([(1, 'a'), (2, 'b'), (3, 'c')], ['id', 'name'])\nwith table.execute().collect() as rows:\n    sys.stdout.write(f'flink rows: {len(list(rows))}\\n')\n",
    )
    .expect("write the Flink job");

    let _resolver = start_resolver(&env, "resolver").await;
    let spark_path = path_with(&spark_bin);
    let spark_home = spark_home.display().to_string();
    let _spark_runner = start_runner(
        &env,
        "runner-spark",
        2,
        &[
            ("DATAJUMP_RUNNER_QUEUES", "spark"),
            ("DATAJUMP_TASK_ENV", "SPARK_HOME"),
            ("SPARK_HOME", &spark_home),
            ("PATH", &spark_path),
        ],
    )
    .await;
    let flink_path = path_with(&flink_bin);
    let flink_home = flink_home.display().to_string();
    let _flink_runner = start_runner(
        &env,
        "runner-flink",
        1,
        &[
            ("DATAJUMP_RUNNER_QUEUES", "flink"),
            ("DATAJUMP_TASK_ENV", "FLINK_HOME"),
            ("FLINK_HOME", &flink_home),
            ("PATH", &flink_path),
        ],
    )
    .await;

    env.apply(&format!(
        r#"
name: engines
tasks:
  - name: count
    type: SPARK
    queue: spark
    retry: {{ max: 0 }}
    content:
      py_file: {spark_job}
      master: "local[1]"
      conf: {{ spark.ui.enabled: false, spark.hadoop.fs.s3a.secret.key: "${{secret:s3_key}}" }}
      app_args: ["${{bizdate}}"]
  - name: report
    type: SQL
    queue: spark
    retry: {{ max: 0 }}
    sql: "SELECT 1 + 1 AS two, ${{bizdate:literal}} AS day"
    content:
      engine: spark
      master: "local[1]"
      # spark-sql's Derby metastore and warehouse go in the test's folder,
      # not the runner's working directory.
      conf:
        spark.ui.enabled: false
        spark.driver.extraJavaOptions: "-Dderby.system.home={scratch}"
        spark.sql.warehouse.dir: "{scratch}/warehouse"
    depends_on: [count]
  - name: stream
    type: FLINK
    queue: flink
    retry: {{ max: 0 }}
    content:
      py_file: {flink_job}
      run_mode: local
      parallelism: 1
      conf: {{ s3.secret-key: "${{secret:s3_key}}" }}
"#,
        spark_job = spark_job.display(),
        flink_job = flink_job.display(),
        scratch = env.path("spark").display(),
    ))
    .await;
    let watch = CommandLineWatch::start(
        SECRET,
        &[
            "org.apache.spark.deploy.SparkSubmit",
            "org.apache.flink.client.cli.CliFrontend",
        ],
    );
    let key = env.trigger("engines").await;
    let run = env.wait_run(&key, TIMEOUT).await;
    let seen = watch.finish();
    let executions = env.executions_by_name(run.id).await;
    let log = |task: &str| {
        executions[task]
            .last()
            .and_then(|execution| execution.log_tail.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        run.status,
        RunStatus::Success,
        "count:\n{}\nreport:\n{}\nstream:\n{}",
        log("count"),
        log("report"),
        log("stream")
    );
    let day = run.biz_date.to_string();
    let count = log("count");
    assert!(
        count.contains(&format!("rows: 5 day: {day}")),
        "the PySpark job's output, with the business date as its argument:\n{count}"
    );
    assert!(
        count.contains("[datajump] command: ") && count.contains("--master local[1]"),
        "the log shows the command line:\n{count}"
    );
    let report = log("report");
    assert!(
        report.contains(&format!("2\t{day}")),
        "spark-sql printed the row:\n{report}"
    );
    let stream = log("stream");
    assert!(
        stream.contains("flink rows: 3"),
        "the PyFlink job's output:\n{stream}"
    );

    // The secret reached both jobs, and no command line nor log line.
    assert!(
        seen.leaks.is_empty(),
        "the secret was on a command line: {:#?}",
        seen.leaks
    );
    assert_eq!(
        seen.markers.len(),
        2,
        "the watch saw spark-submit's and flink's JVMs: {:?}",
        seen.markers
    );
    for (task, text) in [("count", &count), ("stream", &stream)] {
        assert!(
            text.contains(&format!("key: {reversed}")),
            "{task} read the secret:\n{text}"
        );
        assert!(
            text.contains("credential properties, in ") && !text.contains(SECRET),
            "{task}'s log names the file, never the value:\n{text}"
        );
    }
}
