//! SPARK and FLINK: `spark-submit`, `spark-sql` and `flink run`, each built
//! as an argument list from the task's typed content (parameters substituted
//! into each argument, never joined into a shell string) and run under the
//! same guard as scripts ([`process::run`]). Credential properties (a
//! secret-looking key, or a value naming `${secret:…}`, read from the task's
//! project when the attempt starts) go in the attempt's own configuration
//! folder instead of the command line, which every user of the host can
//! read ([`conf_folder`]).
//!
//! Killing the local process stops a local job, but a job submitted to a
//! cluster goes on without it. So the output is read as it comes for what
//! names the job there — a YARN application id, a Spark driver pod, a Flink
//! job id — and a timed-out or killed attempt stops that too (`yarn
//! application -kill`, `kubectl delete pod`, `flink cancel`), as Airflow's
//! SparkSubmitHook does. Each tool is found in its home's `bin` (`SPARK_HOME`,
//! `FLINK_HOME`, `HADOOP_HOME`, given to tasks with `--task-env`) or on the
//! task's `PATH`.

mod conf_folder;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use datajump_shared::content::{FlinkContent, ScalarText, SparkContent, SparkDeployMode};
use datajump_shared::params::{Mode, SqlDialect};
use datajump_shared::secrets::is_credential_property;
use tokio::process::Command;

use super::{ExecContext, ExecOutcome, LogSink, process};
use conf_folder::{ConfFolder, Engine};

/// How long a command that stops a remote job may take.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// A tool the executor runs: its name and the variable naming its home.
#[derive(Debug, Clone, Copy)]
struct Tool {
    name: &'static str,
    home: &'static str,
}

const SPARK_SUBMIT: Tool = Tool {
    name: "spark-submit",
    home: "SPARK_HOME",
};
const SPARK_SQL: Tool = Tool {
    name: "spark-sql",
    home: "SPARK_HOME",
};
const FLINK: Tool = Tool {
    name: "flink",
    home: "FLINK_HOME",
};
const YARN: Tool = Tool {
    name: "yarn",
    home: "HADOOP_HOME",
};
const KUBECTL: Tool = Tool {
    name: "kubectl",
    home: "KUBE_HOME",
};

impl Tool {
    /// `$HOME/bin/name` when the task environment names the home, else the
    /// first `name` on the task's `PATH`.
    fn find(self, ctx: &ExecContext) -> Result<PathBuf, String> {
        if let Some(home) = process::task_var(ctx, self.home) {
            let path = Path::new(&home).join("bin").join(self.name);
            return if path.is_file() {
                Ok(path)
            } else {
                Err(format!(
                    "{} is not in {}/bin ({} = {})",
                    self.name,
                    self.home,
                    self.home,
                    path.display()
                ))
            };
        }
        process::on_path(&process::task_path(ctx), &[self.name]).ok_or_else(|| {
            format!(
                "{} is not on this runner's PATH: install it there, or set {} and pass it to tasks (`datajump runner --task-env {}`)",
                self.name, self.home, self.home
            )
        })
    }
}

/// What names a submitted job on its cluster, read from the submitter's
/// output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RemoteJob {
    /// A YARN application (`application_<cluster>_<n>`).
    Yarn(String),
    /// A Spark driver pod on Kubernetes.
    DriverPod {
        /// The pod's name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// A Flink job on a session cluster.
    FlinkJob(String),
}

/// What the submitter's output has said so far about the remote job.
#[derive(Debug, Default)]
pub(crate) struct Sightings {
    yarn: Option<String>,
    pod: Option<String>,
    namespace: Option<String>,
    flink_job: Option<String>,
}

impl Sightings {
    /// Reads one output line.
    pub(crate) fn see(&mut self, line: &str) {
        if self.yarn.is_none() {
            self.yarn = yarn_application(line);
        }
        if let Some(name) = after(line, "pod name: ") {
            self.pod = Some(name);
        }
        if let Some(namespace) = after(line, "namespace: ") {
            self.namespace = Some(namespace);
        }
        if let Some(job) = after(line, "submitted with JobID ")
            && job.len() == 32
            && job.bytes().all(|b| b.is_ascii_hexdigit())
        {
            self.flink_job = Some(job);
        }
    }
}

/// The word after `marker` in `line`.
fn after(line: &str, marker: &str) -> Option<String> {
    let (_, rest) = line.split_once(marker)?;
    let word: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The first `application_<digits>_<digits>` in `line`.
fn yarn_application(line: &str) -> Option<String> {
    let mut rest = line;
    while let Some(at) = rest.find("application_") {
        let tail = &rest[at..];
        let id: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let parts: Vec<&str> = id.split('_').collect();
        if parts.len() == 3
            && parts[1..]
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Some(id);
        }
        rest = &tail["application_".len()..];
    }
    None
}

/// Where a substituted value goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    /// An argument of its own, from this content field: a value from
    /// outside the DAG file may not put a leading `-` there, which the
    /// submitter would read as an option (docs/SECURITY.md, "Parameters
    /// from outside the DAG file").
    Argument(&'a str),
    /// Part of a `key=value` argument.
    InArgument,
    /// A `conf` value: it may name secrets, and one that does goes in the
    /// configuration file, never on the command line.
    Conf,
}

/// Substitutes parameters into a value (text rules: it is one argument, or
/// part of one, so nothing in it can become another), and in a `conf`
/// value the task's `secrets` too.
fn text(
    ctx: &ExecContext,
    secrets: &BTreeMap<String, String>,
    value: &str,
    place: Place<'_>,
) -> Result<String, String> {
    match place {
        Place::InArgument => ctx.text(value).map_err(|e| e.to_string()),
        Place::Argument(field) => ctx
            .params
            .substitute_argument(value)
            .map_err(|e| format!("'{field}': {e}")),
        Place::Conf => ctx
            .params
            .substitute_with_secrets(value, secrets)
            .map_err(|e| e.to_string()),
    }
}

/// How [`spark_args`] and [`flink_args`] substitute a value ([`text`]).
pub(crate) type Substitute<'a> = &'a dyn Fn(&str, Place<'_>) -> Result<String, String>;

/// A submitter's command: its arguments, and the credential properties
/// that go in its configuration folder instead.
#[derive(Debug, Default)]
pub(crate) struct Submission {
    /// The arguments, one each.
    pub(crate) args: Vec<OsString>,
    /// `(key, value)` of each credential property, values substituted.
    pub(crate) credentials: Vec<(String, String)>,
}

/// Whether a `conf` property is a credential: a secret-looking key, or a
/// value naming a secret.
fn is_credential(key: &str, value: &ScalarText) -> bool {
    is_credential_property(key) || value.names_a_secret()
}

/// `<dag>.<task>`, the application name when the content gives none.
fn default_name(ctx: &ExecContext) -> String {
    match (ctx.env.get("DJ_DAG_NAME"), ctx.env.get("DJ_TASK_NAME")) {
        (Some(dag), Some(task)) => format!("{dag}.{task}"),
        _ => format!("datajump.{}", ctx.params.task_name),
    }
}

/// The arguments of `spark-submit` (or `spark-sql` when `sql_file` is
/// given), in the order Airflow's SparkSubmitHook writes them.
pub(crate) fn spark_args(
    content: &SparkContent,
    name: &str,
    sql_file: Option<&Path>,
    text: Substitute<'_>,
) -> Result<Submission, String> {
    let mut args: Vec<OsString> = Vec::new();
    let mut credentials = Vec::new();
    let mut push = |flag: &str, value: String| {
        args.push(flag.into());
        args.push(value.into());
    };
    if let Some(master) = &content.master {
        push("--master", text(master, Place::Argument("master"))?);
    }
    for (key, value) in &content.conf {
        let substituted = text(&value.to_string(), Place::Conf)?;
        if is_credential(key, value) {
            credentials.push((key.clone(), substituted));
        } else {
            push("--conf", format!("{key}={substituted}"));
        }
    }
    if let Some(n) = content.num_executors {
        push("--num-executors", n.to_string());
    }
    if let Some(n) = content.executor_cores {
        push("--executor-cores", n.to_string());
    }
    if let Some(size) = &content.executor_memory {
        push("--executor-memory", size.clone());
    }
    if let Some(n) = content.driver_cores {
        push("--driver-cores", n.to_string());
    }
    if let Some(size) = &content.driver_memory {
        push("--driver-memory", size.clone());
    }
    push(
        "--name",
        match &content.app_name {
            Some(app_name) => text(app_name, Place::Argument("app_name"))?,
            None => name.to_owned(),
        },
    );
    if let Some(class) = &content.main_class {
        push("--class", text(class, Place::Argument("main_class"))?);
    }
    if let Some(queue) = &content.queue {
        push("--queue", text(queue, Place::Argument("queue"))?);
    }
    if let Some(mode) = content.deploy_mode {
        push(
            "--deploy-mode",
            match mode {
                SparkDeployMode::Client => "client",
                SparkDeployMode::Cluster => "cluster",
            }
            .to_owned(),
        );
    }
    match (sql_file, &content.jar, &content.py_file) {
        (Some(file), _, _) => {
            args.push("-f".into());
            args.push(file.into());
        }
        (None, Some(jar), _) => args.push(text(jar, Place::Argument("jar"))?.into()),
        (None, None, Some(py_file)) => {
            args.push(text(py_file, Place::Argument("py_file"))?.into());
        }
        (None, None, None) => return Err("nothing to submit: no jar, py_file or sql".to_owned()),
    }
    for (i, arg) in content.app_args.iter().enumerate() {
        args.push(text(arg, Place::Argument(&format!("app_args[{i}]")))?.into());
    }
    Ok(Submission { args, credentials })
}

/// The arguments of `flink run`.
pub(crate) fn flink_args(
    content: &FlinkContent,
    name: &str,
    text: Substitute<'_>,
) -> Result<Submission, String> {
    let mut args: Vec<OsString> = vec!["run".into()];
    if let Some(mode) = content.run_mode {
        args.push("-t".into());
        args.push(mode.target().into());
    }
    let app_name = match &content.app_name {
        Some(app_name) => text(app_name, Place::InArgument)?,
        None => name.to_owned(),
    };
    let yarn = content
        .run_mode
        .is_some_and(|mode| mode.target().starts_with("yarn"));
    let mut properties: Vec<(String, String)> =
        vec![("pipeline.name".to_owned(), app_name.clone())];
    if yarn {
        properties.push(("yarn.application.name".to_owned(), app_name));
    }
    for (key, size) in [
        (
            "jobmanager.memory.process.size",
            &content.job_manager_memory,
        ),
        (
            "taskmanager.memory.process.size",
            &content.task_manager_memory,
        ),
    ] {
        if let Some(size) = size {
            properties.push((key.to_owned(), size.clone()));
        }
    }
    if let Some(slots) = content.slots {
        properties.push((
            "taskmanager.numberOfTaskSlots".to_owned(),
            slots.to_string(),
        ));
    }
    if let Some(queue) = &content.queue {
        properties.push((
            "yarn.application.queue".to_owned(),
            text(queue, Place::InArgument)?,
        ));
    }
    let mut credentials = Vec::new();
    for (key, value) in &content.conf {
        let substituted = text(&value.to_string(), Place::Conf)?;
        if is_credential(key, value) {
            credentials.push((key.clone(), substituted));
        } else {
            properties.push((key.clone(), substituted));
        }
    }
    for (key, value) in properties {
        args.push(format!("-D{key}={value}").into());
    }
    if let Some(parallelism) = content.parallelism {
        args.push("-p".into());
        args.push(parallelism.to_string().into());
    }
    if let Some(savepoint) = &content.savepoint {
        args.push("-s".into());
        args.push(text(savepoint, Place::Argument("savepoint"))?.into());
        if content.allow_non_restored_state {
            args.push("-n".into());
        }
    }
    if content.run_mode.is_some_and(|mode| mode.owns_its_cluster()) {
        // Shut the job's own cluster down if `flink run` is stopped.
        args.push("-sae".into());
    }
    if let Some(class) = &content.main_class {
        args.push("-c".into());
        args.push(text(class, Place::Argument("main_class"))?.into());
    }
    match (&content.jar, &content.py_file) {
        (Some(jar), _) => args.push(text(jar, Place::Argument("jar"))?.into()),
        (None, Some(py_file)) => {
            args.push("--python".into());
            args.push(text(py_file, Place::Argument("py_file"))?.into());
        }
        (None, None) => return Err("nothing to run: no jar or py_file".to_owned()),
    }
    for (i, arg) in content.app_args.iter().enumerate() {
        args.push(text(arg, Place::Argument(&format!("app_args[{i}]")))?.into());
    }
    Ok(Submission { args, credentials })
}

/// The command line as the log shows it: each argument shell-quoted where
/// it needs to be, the values of secret-looking properties as `***`.
pub(crate) fn shown(program: &Path, args: &[OsString]) -> String {
    let mut words = vec![quote(&program.to_string_lossy())];
    for arg in args {
        let arg = arg.to_string_lossy();
        let masked = match arg.split_once('=') {
            Some((key, _)) if is_credential_property(key) => format!("{key}=***"),
            _ => arg.into_owned(),
        };
        words.push(quote(&masked));
    }
    words.join(" ")
}

/// `word` as a shell would need it written, for people to read and paste.
fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+[]*".contains(&b))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Runs a SPARK task, or a SQL task with `engine: spark`.
pub(super) async fn run_spark(
    content: &SparkContent,
    ctx: &ExecContext,
    log: &LogSink,
) -> ExecOutcome {
    // Removed when `sql_file` drops, whatever happens.
    let sql_file = match &content.sql {
        Some(sql) => {
            let body = match ctx.params.substitute(sql, Mode::Sql(SqlDialect::Spark)) {
                Ok(body) => body,
                Err(e) => return ExecOutcome::Invalid(e.to_string()),
            };
            match process::script_file(&body, ".sql") {
                Ok(file) => Some(file),
                Err(e) => {
                    return ExecOutcome::Invalid(format!("cannot write the SQL file: {e}"));
                }
            }
        }
        None => None,
    };
    let tool = if sql_file.is_some() {
        SPARK_SQL
    } else {
        SPARK_SUBMIT
    };
    let program = match tool.find(ctx) {
        Ok(program) => program,
        Err(e) => return ExecOutcome::Invalid(e),
    };
    let secrets = match ctx.secrets(content.conf.values()).await {
        Ok(secrets) => secrets,
        Err(outcome) => return outcome,
    };
    let sql_path = sql_file.as_ref().map(|file| file.path());
    let submission = match spark_args(content, &default_name(ctx), sql_path, &|v, place| {
        text(ctx, &secrets, v, place)
    }) {
        Ok(submission) => submission,
        Err(e) => return ExecOutcome::Invalid(e),
    };
    let namespace = content
        .conf
        .get("spark.kubernetes.namespace")
        .map(ToString::to_string);
    let submitter = Submitter {
        tool,
        engine: conf_folder::SPARK,
        program: &program,
        submission: &submission,
        owned_file: sql_path,
    };
    submit(submitter, ctx, log, |seen| {
        if let Some(id) = seen.yarn {
            Some(RemoteJob::Yarn(id))
        } else {
            seen.pod.map(|name| RemoteJob::DriverPod {
                name,
                namespace: seen
                    .namespace
                    .or(namespace)
                    .unwrap_or_else(|| "default".to_owned()),
            })
        }
    })
    .await
}

/// Runs a FLINK task.
pub(super) async fn run_flink(
    content: &FlinkContent,
    ctx: &ExecContext,
    log: &LogSink,
) -> ExecOutcome {
    let program = match FLINK.find(ctx) {
        Ok(program) => program,
        Err(e) => return ExecOutcome::Invalid(e),
    };
    let secrets = match ctx.secrets(content.conf.values()).await {
        Ok(secrets) => secrets,
        Err(outcome) => return outcome,
    };
    let submission = match flink_args(content, &default_name(ctx), &|v, place| {
        text(ctx, &secrets, v, place)
    }) {
        Ok(submission) => submission,
        Err(e) => return ExecOutcome::Invalid(e),
    };
    let mode = content.run_mode;
    let submitter = Submitter {
        tool: FLINK,
        engine: conf_folder::FLINK,
        program: &program,
        submission: &submission,
        owned_file: None,
    };
    submit(submitter, ctx, log, |seen| {
        match mode {
            // Its own cluster: stopping the application stops the job.
            Some(mode) if mode.owns_its_cluster() => seen.yarn.map(RemoteJob::Yarn),
            // A local mini-cluster dies with the process.
            Some(datajump_shared::content::FlinkRunMode::Local) => None,
            // A shared session cluster: only this job is cancelled.
            _ => seen.flink_job.map(RemoteJob::FlinkJob),
        }
    })
    .await
}

/// What a task submits, and with what.
#[derive(Debug, Clone, Copy)]
struct Submitter<'a> {
    tool: Tool,
    /// How the tool reads its configuration folder.
    engine: Engine,
    /// Where the tool is.
    program: &'a Path,
    submission: &'a Submission,
    /// A temporary file of ours it reads (`spark-sql`'s statements).
    owned_file: Option<&'a Path>,
}

/// Runs the submitter — with a configuration folder of the attempt's own
/// when the task has credential properties, kept until the job is stopped
/// too — and if the attempt was stopped, whatever it left running on the
/// cluster.
async fn submit(
    submitter: Submitter<'_>,
    ctx: &ExecContext,
    log: &LogSink,
    remote: impl FnOnce(Sightings) -> Option<RemoteJob>,
) -> ExecOutcome {
    let Submitter {
        tool,
        engine,
        program,
        submission,
        owned_file,
    } = submitter;
    let (args, credentials) = (&submission.args, &submission.credentials);
    // Removed when it drops, after the job is stopped.
    let folder = if credentials.is_empty() {
        None
    } else {
        match ConfFolder::create(engine, tool, program, credentials, ctx).await {
            Ok(folder) => Some(folder),
            Err(e) => return ExecOutcome::Invalid(e),
        }
    };
    let folder_path = folder
        .as_ref()
        .map(|f| f.path().to_string_lossy().into_owned());
    let env: Vec<(&str, &str)> = folder_path
        .iter()
        .map(|path| (engine.conf_var, path.as_str()))
        .collect();
    log.line(&format!("[datajump] command: {}", shown(program, args)));
    if let Some(folder) = &folder {
        let keys: Vec<String> = credentials
            .iter()
            .map(|(key, _)| format!("{key}=***"))
            .collect();
        log.line(&format!(
            "[datajump] credential properties, in {} rather than on the command line ({}={}): {}",
            folder.file().display(),
            engine.conf_var,
            folder.path().display(),
            keys.join(" ")
        ));
    }
    let mut seen = Sightings::default();
    let outcome = process::run(
        process::Program {
            executable: program,
            args,
            owned_file,
            env: &env,
        },
        ctx,
        log,
        &mut |line| seen.see(line),
    )
    .await;
    if matches!(
        outcome,
        ExecOutcome::TimedOut | ExecOutcome::Cancelled | ExecOutcome::Fenced
    ) && let Some(job) = remote(seen)
    {
        stop(&job, program, args, &env, ctx, log).await;
    }
    outcome
}

/// Stops a remote job, writing what was run and what it answered to the
/// log; a failure is logged, since the attempt's outcome stands.
async fn stop(
    job: &RemoteJob,
    submitter: &Path,
    submit_args: &[OsString],
    env: &[(&str, &str)],
    ctx: &ExecContext,
    log: &LogSink,
) {
    let (tool, args): (Result<PathBuf, String>, Vec<OsString>) = match job {
        RemoteJob::Yarn(id) => (
            YARN.find(ctx),
            vec!["application".into(), "-kill".into(), id.into()],
        ),
        RemoteJob::DriverPod { name, namespace } => (
            KUBECTL.find(ctx),
            vec![
                "delete".into(),
                "pod".into(),
                name.into(),
                "--namespace".into(),
                namespace.into(),
            ],
        ),
        RemoteJob::FlinkJob(id) => {
            // The same target and properties reach the same cluster.
            let mut args: Vec<OsString> = vec!["cancel".into()];
            let mut rest = submit_args.iter().skip(1);
            while let Some(arg) = rest.next() {
                if arg == "-t" {
                    args.push(arg.clone());
                    args.extend(rest.next().cloned());
                } else if arg.to_string_lossy().starts_with("-D") {
                    args.push(arg.clone());
                }
            }
            args.push(id.into());
            (Ok(submitter.to_owned()), args)
        }
    };
    let tool = match tool {
        Ok(tool) => tool,
        Err(e) => {
            log.line(&format!(
                "[datajump] cannot stop {job:?} on its cluster: {e}"
            ));
            return;
        }
    };
    log.line(&format!(
        "[datajump] stopping the job on its cluster: {}",
        shown(&tool, &args)
    ));
    // As the task user, with the task's environment and configuration
    // folder: the same credentials that submitted the job stop it.
    let run = Command::new(ctx.process.setpriv())
        .args(ctx.process.setpriv_args())
        .arg("--")
        .arg(&tool)
        .args(&args)
        .env_clear()
        .envs(ctx.process.inherited())
        .envs(&ctx.env)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(STOP_TIMEOUT, run).await {
        Ok(Ok(output)) => {
            for line in String::from_utf8_lossy(&output.stdout)
                .lines()
                .chain(String::from_utf8_lossy(&output.stderr).lines())
            {
                log.line(line);
            }
            if !output.status.success() {
                log.line(&format!("[datajump] stopping it failed: {}", output.status));
            }
        }
        Ok(Err(e)) => log.line(&format!("[datajump] cannot run {}: {e}", tool.display())),
        Err(_) => log.line(&format!(
            "[datajump] {} did not answer within {}s",
            tool.display(),
            STOP_TIMEOUT.as_secs()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datajump_shared::content::{FlinkRunMode, ScalarText};

    fn plain(value: &str, _: Place<'_>) -> Result<String, String> {
        Ok(value
            .replace("${bizdate}", "20240114")
            .replace("${secret:s3}", "s3-value"))
    }

    fn strings(submission: &Submission) -> Vec<String> {
        submission
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn spark_submit_arguments_follow_airflows_order() {
        let content = SparkContent {
            jar: Some("hdfs:///jobs/etl.jar".to_owned()),
            main_class: Some("com.acme.Etl".to_owned()),
            master: Some("yarn".to_owned()),
            deploy_mode: Some(SparkDeployMode::Cluster),
            queue: Some("root.etl".to_owned()),
            driver_cores: Some(1),
            driver_memory: Some("2g".to_owned()),
            num_executors: Some(4),
            executor_cores: Some(2),
            executor_memory: Some("4g".to_owned()),
            conf: [
                (
                    "spark.sql.shuffle.partitions".to_owned(),
                    ScalarText::Number(200.into()),
                ),
                (
                    "spark.yarn.maxAppAttempts".to_owned(),
                    ScalarText::Text("1".to_owned()),
                ),
            ]
            .into(),
            app_args: vec![
                "--date".to_owned(),
                "${bizdate}".to_owned(),
                "a b".to_owned(),
            ],
            ..SparkContent::default()
        };
        let submission = spark_args(&content, "daily.load", None, &plain).unwrap();
        assert!(submission.credentials.is_empty());
        assert_eq!(
            strings(&submission),
            [
                "--master",
                "yarn",
                "--conf",
                "spark.sql.shuffle.partitions=200",
                "--conf",
                "spark.yarn.maxAppAttempts=1",
                "--num-executors",
                "4",
                "--executor-cores",
                "2",
                "--executor-memory",
                "4g",
                "--driver-cores",
                "1",
                "--driver-memory",
                "2g",
                "--name",
                "daily.load",
                "--class",
                "com.acme.Etl",
                "--queue",
                "root.etl",
                "--deploy-mode",
                "cluster",
                "hdfs:///jobs/etl.jar",
                "--date",
                "20240114",
                "a b",
            ]
        );
    }

    #[test]
    fn spark_sql_reads_its_file_and_python_goes_last() {
        let sql = SparkContent {
            sql: Some("select 1".to_owned()),
            master: Some("local[1]".to_owned()),
            app_name: Some("report ${bizdate}".to_owned()),
            ..SparkContent::default()
        };
        assert_eq!(
            strings(&spark_args(&sql, "d.t", Some(Path::new("/tmp/q.sql")), &plain).unwrap()),
            [
                "--master",
                "local[1]",
                "--name",
                "report 20240114",
                "-f",
                "/tmp/q.sql"
            ]
        );
        let python = SparkContent {
            py_file: Some("job.py".to_owned()),
            app_args: vec!["x".to_owned()],
            ..SparkContent::default()
        };
        assert_eq!(
            strings(&spark_args(&python, "d.t", None, &plain).unwrap()),
            ["--name", "d.t", "job.py", "x"]
        );
    }

    #[test]
    fn flink_run_arguments() {
        let content = FlinkContent {
            jar: Some("/jobs/stream.jar".to_owned()),
            main_class: Some("com.acme.Stream".to_owned()),
            run_mode: Some(FlinkRunMode::YarnApplication),
            parallelism: Some(4),
            job_manager_memory: Some("1024m".to_owned()),
            task_manager_memory: Some("2g".to_owned()),
            slots: Some(2),
            queue: Some("root.rt".to_owned()),
            savepoint: Some("hdfs:///sp/1".to_owned()),
            allow_non_restored_state: true,
            app_args: vec!["--day".to_owned(), "${bizdate}".to_owned()],
            ..FlinkContent::default()
        };
        assert_eq!(
            strings(&flink_args(&content, "rt.stream", &plain).unwrap()),
            [
                "run",
                "-t",
                "yarn-application",
                "-Dpipeline.name=rt.stream",
                "-Dyarn.application.name=rt.stream",
                "-Djobmanager.memory.process.size=1024m",
                "-Dtaskmanager.memory.process.size=2g",
                "-Dtaskmanager.numberOfTaskSlots=2",
                "-Dyarn.application.queue=root.rt",
                "-p",
                "4",
                "-s",
                "hdfs:///sp/1",
                "-n",
                "-sae",
                "-c",
                "com.acme.Stream",
                "/jobs/stream.jar",
                "--day",
                "20240114",
            ]
        );
        let python = FlinkContent {
            py_file: Some("job.py".to_owned()),
            run_mode: Some(FlinkRunMode::Local),
            ..FlinkContent::default()
        };
        assert_eq!(
            strings(&flink_args(&python, "d.t", &plain).unwrap()),
            [
                "run",
                "-t",
                "local",
                "-Dpipeline.name=d.t",
                "--python",
                "job.py"
            ]
        );
    }

    #[test]
    fn credential_properties_leave_the_command_line() {
        let conf: BTreeMap<String, ScalarText> = [
            ("spark.hadoop.fs.s3a.secret.key", "${secret:s3}"),
            ("spark.hadoop.fs.s3a.access.key", "AKIA-literal"),
            ("spark.acme.endpoint.auth", "Bearer ${secret:s3}"),
            ("spark.sql.shuffle.partitions", "8"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), ScalarText::Text(v.to_owned())))
        .collect();
        let credentials = [
            ("spark.acme.endpoint.auth", "Bearer s3-value"),
            ("spark.hadoop.fs.s3a.access.key", "AKIA-literal"),
            ("spark.hadoop.fs.s3a.secret.key", "s3-value"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let spark = SparkContent {
            py_file: Some("job.py".to_owned()),
            conf: conf.clone(),
            ..SparkContent::default()
        };
        let submission = spark_args(&spark, "d.t", None, &plain).unwrap();
        assert_eq!(
            strings(&submission),
            [
                "--conf",
                "spark.sql.shuffle.partitions=8",
                "--name",
                "d.t",
                "job.py"
            ]
        );
        assert_eq!(submission.credentials, credentials);
        let flink = FlinkContent {
            py_file: Some("job.py".to_owned()),
            conf,
            ..FlinkContent::default()
        };
        let submission = flink_args(&flink, "d.t", &plain).unwrap();
        assert_eq!(
            strings(&submission),
            [
                "run",
                "-Dpipeline.name=d.t",
                "-Dspark.sql.shuffle.partitions=8",
                "--python",
                "job.py"
            ]
        );
        assert_eq!(submission.credentials, credentials);
    }

    #[test]
    fn the_shown_command_masks_secret_properties_and_quotes() {
        let args: Vec<OsString> = [
            "--conf",
            "spark.hadoop.fs.s3a.secret.key=abc",
            "--conf",
            "spark.executor.cores=2",
            "-Dpassword=hunter2",
            "it's",
        ]
        .map(OsString::from)
        .into();
        assert_eq!(
            shown(Path::new("/opt/spark/bin/spark-submit"), &args),
            r"/opt/spark/bin/spark-submit --conf spark.hadoop.fs.s3a.secret.key=*** --conf spark.executor.cores=2 -Dpassword=*** 'it'\''s'"
        );
    }

    #[test]
    fn remote_jobs_are_read_from_the_output() {
        let mut seen = Sightings::default();
        for line in [
            "24/01/15 02:00:01 INFO Client: Requesting a new application from cluster with 3 NodeManagers",
            "24/01/15 02:00:03 INFO YarnClientImpl: Submitted application application_1700000000000_0042",
            "24/01/15 02:00:04 INFO Client: Application report for application_1700000000000_0042 (state: ACCEPTED)",
        ] {
            seen.see(line);
        }
        assert_eq!(seen.yarn.as_deref(), Some("application_1700000000000_0042"));

        let mut seen = Sightings::default();
        for line in [
            "25/01/15 02:00:03 INFO LoggingPodStatusWatcherImpl: State changed, new state:",
            "\t pod name: etl-load-3f2a9c8e-driver",
            "\t namespace: data",
            "\t labels: spark-app-selector -> spark-1234, spark-role -> driver",
        ] {
            seen.see(line);
        }
        assert_eq!(seen.pod.as_deref(), Some("etl-load-3f2a9c8e-driver"));
        assert_eq!(seen.namespace.as_deref(), Some("data"));

        let mut seen = Sightings::default();
        seen.see("Job has been submitted with JobID 5e20cb6b0f357591171dfcca2eea09de");
        assert_eq!(
            seen.flink_job.as_deref(),
            Some("5e20cb6b0f357591171dfcca2eea09de")
        );
        seen.see("application_x_1 is not an id");
        assert_eq!(seen.yarn, None);
    }
}
