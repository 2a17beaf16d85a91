//! The attempt's own configuration folder, which carries a SPARK or FLINK
//! task's credential properties (a secret-looking key, or a value naming
//! `${secret:…}`) to the submitter instead of its command line: every user
//! of the host can read a process's command line (`/proc/<pid>/cmdline`,
//! `ps`), and `spark-submit --conf` and `flink run -D` would put them
//! there, in the submitter's process and the JVM it starts.
//!
//! The folder links every entry of the configuration folder the tool
//! would have read (`spark-env.sh`, `hive-site.xml`, log settings) and
//! holds a copy of its properties file (`spark-defaults.conf`; Flink's
//! `config.yaml` or `flink-conf.yaml`) with the credentials added, so the
//! submitter, pointed at it by `SPARK_CONF_DIR` or `FLINK_CONF_DIR`, reads
//! the installation's settings as before. Both tools read those variables
//! in every version, where `--properties-file` replaces the defaults
//! (before Spark 4) and Flink has no file option at all.
//!
//! The folder is the task user's, mode 0700 and the file 0600; its name
//! starts with the runner's leftover prefix, so a crashed runner's is swept
//! at the next start ([`crate::leftovers`]), and it is removed when the
//! attempt ends.

use std::path::{Path, PathBuf};

use super::Tool;
use crate::executor::task_process::Access;
use crate::executor::{ExecContext, process};

/// How an engine reads its configuration folder.
#[derive(Debug, Clone, Copy)]
pub(super) struct Engine {
    /// The variable naming the folder.
    pub(super) conf_var: &'static str,
    /// The properties files it may read, the preferred first, with their
    /// formats; the first is written when the folder has none.
    files: &'static [(&'static str, Format)],
}

/// How a properties file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Java properties (`spark-defaults.conf`).
    JavaProperties,
    /// Standard YAML (Flink's `config.yaml`, Flink 1.19 on).
    Yaml,
    /// Flink's `flink-conf.yaml` before 1.19: `key: value` lines, `#`
    /// starting a comment anywhere.
    FlatYaml,
}

pub(super) const SPARK: Engine = Engine {
    conf_var: "SPARK_CONF_DIR",
    files: &[("spark-defaults.conf", Format::JavaProperties)],
};

pub(super) const FLINK: Engine = Engine {
    conf_var: "FLINK_CONF_DIR",
    files: &[
        ("config.yaml", Format::Yaml),
        ("flink-conf.yaml", Format::FlatYaml),
    ],
};

/// The attempt's configuration folder; removed on drop.
#[derive(Debug)]
pub(super) struct ConfFolder {
    dir: tempfile::TempDir,
    file: PathBuf,
}

impl ConfFolder {
    /// The folder, for the engine's `*_CONF_DIR`.
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The properties file that carries the credentials.
    pub(super) fn file(&self) -> &Path {
        &self.file
    }

    /// Makes the folder for an attempt of `tool` (found at `program`),
    /// `credentials` added to the properties the installation gives.
    pub(super) async fn create(
        engine: Engine,
        tool: Tool,
        program: &Path,
        credentials: &[(String, String)],
        ctx: &ExecContext,
    ) -> Result<ConfFolder, String> {
        let original = original_folder(engine, tool, program, ctx);
        let (name, format) = engine
            .files
            .iter()
            .copied()
            .find(|(name, _)| original.join(name).is_file())
            .unwrap_or(engine.files[0]);
        let original_file = original.join(name);
        // The runner may read what the task user may not: it copies the
        // file only for a task user who could read it.
        if original_file.is_file()
            && !ctx
                .process
                .user_may(Access::Read, &original_file)
                .await
                .unwrap_or(false)
        {
            return Err(format!(
                "the task user may not read {}, which the credential properties are added to",
                original_file.display()
            ));
        }
        let owner = ctx.process.user().map(|user| (user.uid(), user.gid()));
        let credentials = credentials.to_vec();
        tokio::task::spawn_blocking(move || build(&original, name, format, &credentials, owner))
            .await
            .map_err(|e| format!("cannot write the configuration folder: {e}"))?
    }
}

/// The configuration folder `tool` reads: the one its variable names in
/// the task's environment, else `conf` in its home, else `conf` beside the
/// `bin` folder `program` is in (links followed).
fn original_folder(engine: Engine, tool: Tool, program: &Path, ctx: &ExecContext) -> PathBuf {
    if let Some(dir) = process::task_var(ctx, engine.conf_var) {
        return PathBuf::from(dir);
    }
    if let Some(home) = process::task_var(ctx, tool.home) {
        return Path::new(&home).join("conf");
    }
    let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_owned());
    program
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"))
        .join("conf")
}

/// Writes the folder (blocking file-system work).
fn build(
    original: &Path,
    name: &str,
    format: Format,
    credentials: &[(String, String)],
    owner: Option<(u32, u32)>,
) -> Result<ConfFolder, String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

    let cannot = |what: &str, e: &dyn std::fmt::Display| format!("cannot {what}: {e}");
    let existing = match std::fs::read_to_string(original.join(name)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(cannot(
                &format!("read {}", original.join(name).display()),
                &e,
            ));
        }
    };
    let text = render(&existing, format, credentials)?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}conf-", crate::leftovers::prefix()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| cannot("create the configuration folder", &e))?;
    if let Ok(entries) = std::fs::read_dir(original) {
        for entry in entries.flatten() {
            if entry.file_name() == name {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), dir.path().join(entry.file_name()))
                .map_err(|e| cannot("link the installation's configuration", &e))?;
        }
    }
    let file = dir.path().join(name);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&file)
        .map_err(|e| cannot(&format!("create {}", file.display()), &e))?;
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| cannot(&format!("write {}", file.display()), &e))?;
    if let Some((uid, gid)) = owner {
        let uid = Some(nix::unistd::Uid::from_raw(uid));
        let gid = Some(nix::unistd::Gid::from_raw(gid));
        for path in [dir.path(), file.as_path()] {
            nix::unistd::chown(path, uid, gid)
                .map_err(|e| cannot("hand the configuration folder to the task user", &e))?;
        }
    }
    Ok(ConfFolder { dir, file })
}

/// `existing` (the installation's properties file) with `credentials`
/// set, each over any value the file gives it.
fn render(
    existing: &str,
    format: Format,
    credentials: &[(String, String)],
) -> Result<String, String> {
    let mut text = match format {
        Format::Yaml => return yaml(existing, credentials),
        Format::JavaProperties | Format::FlatYaml => existing.to_owned(),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    // Both formats take the last line of a key.
    for (key, value) in credentials {
        if format == Format::JavaProperties {
            text.push_str(&java_escape(key, true));
            text.push('=');
            text.push_str(&java_escape(value, false));
        } else {
            if value.contains(['#', '\n', '\r']) || key.contains(['#', ':']) {
                return Err(format!(
                    "the property '{key}' cannot be written in flink-conf.yaml, which ends a \
                     value at '#' or a line break: use a value without them, or Flink's \
                     config.yaml (Flink 1.19 on)"
                ));
            }
            text.push_str(&format!("{key}: {value}"));
        }
        text.push('\n');
    }
    Ok(text)
}

/// Flink's `config.yaml` with `credentials` as top-level keys, replacing
/// the same keys: Flink refuses a file with a key twice.
fn yaml(existing: &str, credentials: &[(String, String)]) -> Result<String, String> {
    use serde_yaml_ng::{Mapping, Value};
    let mut config = match serde_yaml_ng::from_str::<Value>(existing) {
        Ok(Value::Mapping(config)) => config,
        Ok(Value::Null) => Mapping::new(),
        Ok(_) => return Err("the Flink configuration file is not a YAML mapping".to_owned()),
        Err(e) => return Err(format!("cannot read the Flink configuration file: {e}")),
    };
    for (key, value) in credentials {
        let key = Value::String(key.clone());
        config.remove(&key);
        config.insert(key, Value::String(value.clone()));
    }
    serde_yaml_ng::to_string(&config)
        .map_err(|e| format!("cannot write the Flink configuration file: {e}"))
}

/// `text` as `java.util.Properties` reads it back: a key's separators and
/// comment marks escaped, and in both keys and values backslashes,
/// line breaks and leading spaces.
fn java_escape(text: &str, key: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{c}' => out.push_str("\\f"),
            ' ' if key || i == 0 => out.push_str("\\ "),
            '=' | ':' | '#' | '!' if key => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn spark_defaults_keep_the_installations_and_escape_ours() {
        let text = render(
            "spark.master yarn\nspark.x.password old",
            Format::JavaProperties,
            &pairs(&[("spark.x.password", " a\\b\nc#=d"), ("spark.a:b", "v")]),
        )
        .unwrap();
        assert_eq!(
            text,
            "spark.master yarn\nspark.x.password old\nspark.x.password=\\ a\\\\b\\nc#=d\nspark.a\\:b=v\n"
        );
    }

    #[test]
    fn flink_yaml_replaces_a_key_the_file_has() {
        let text = render(
            "# comment\nparallelism.default: 2\ns3.secret-key: old\nenv:\n  java:\n    opts: -Dx\n",
            Format::Yaml,
            &pairs(&[("s3.secret-key", "n\"e: w#"), ("s3.access-key", "yes")]),
        )
        .unwrap();
        let back: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back["s3.secret-key"], "n\"e: w#");
        assert_eq!(back["s3.access-key"], "yes", "a YAML word stays text");
        assert_eq!(back["parallelism.default"], 2);
        assert_eq!(back["env"]["java"]["opts"], "-Dx");
        assert_eq!(text.matches("s3.secret-key").count(), 1, "{text}");
        assert!(render("- a list", Format::Yaml, &[]).is_err());
    }

    #[test]
    fn flat_flink_yaml_refuses_what_it_would_cut() {
        assert_eq!(
            render("a: 1", Format::FlatYaml, &pairs(&[("s3.secret-key", "v")])).unwrap(),
            "a: 1\ns3.secret-key: v\n"
        );
        for value in ["a#b", "a\nb"] {
            let why = render("", Format::FlatYaml, &pairs(&[("k.password", value)])).unwrap_err();
            assert!(why.contains("flink-conf.yaml"), "{why}");
        }
    }
}
