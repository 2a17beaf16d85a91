//! What a task's process inherits from the runner, and as whom it runs.
//!
//! The runner holds what no task may see: `DATAJUMP_API_TOKEN`, the
//! database URL with its password, NATS credentials. A task is other
//! people's code, so its environment is built from an allow-list — the
//! variables a program needs to find its tools and speak the locale
//! ([`TaskProcess::ALWAYS`], any `LC_*`), the names an operator adds with
//! `--task-env`, then the attempt's own `DJ_*` variables and parameters —
//! and never a `DATAJUMP_*` variable, whatever is listed. The runner also
//! makes itself non-dumpable ([`protect_runner`]), which closes
//! `/proc/<runner>/environ` to processes of the same user; a runner that
//! runs as root should start tasks as another user (`--task-user`), since
//! root may read any process's memory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use thiserror::Error;
use tracing::warn;

/// Why the task process settings cannot be used.
#[derive(Debug, Error)]
pub enum TaskProcessError {
    /// `--task-env` named a variable of the runner's own settings.
    #[error(
        "--task-env may not pass {0} to tasks: DATAJUMP_* variables hold the runner's credentials"
    )]
    RunnerSetting(String),
    /// `--task-env` named something that is not a variable name.
    #[error("--task-env: '{0}' is not an environment variable name")]
    InvalidName(String),
    /// `--task-user` names no user of this machine.
    #[error("--task-user: no user named '{0}' on this machine")]
    UnknownUser(String),
    /// The user database could not be read.
    #[error("--task-user: cannot look up '{name}': {source}")]
    Lookup {
        /// The user name.
        name: String,
        /// Why.
        source: nix::Error,
    },
}

/// Another user tasks run as: name, ids and home, looked up once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskUser {
    name: String,
    uid: u32,
    gid: u32,
    /// Every group the user is in, the primary one included.
    groups: Vec<u32>,
    home: OsString,
}

impl TaskUser {
    /// The user's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The primary group id.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// Whether the user may `access` a file of `metadata` by its mode bits
    /// (owner, then group, then others, as the kernel decides; ACLs are
    /// not read, so [`TaskProcess::user_may`] has the last word).
    pub fn permits(&self, metadata: &std::fs::Metadata, access: ModeBits) -> bool {
        use std::os::unix::fs::MetadataExt;
        if self.uid == 0 {
            return true;
        }
        let mode = metadata.mode();
        let shift = if metadata.uid() == self.uid {
            6
        } else if self.groups.contains(&metadata.gid()) {
            3
        } else {
            0
        };
        let wanted = access as u32;
        (mode >> shift) & wanted == wanted
    }
}

/// Permission bits a look through the file system needs, as `rwx` counts
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeBits {
    /// Pass through a folder (`x`).
    Search = 0o1,
    /// List a folder (`r` and `x`).
    List = 0o5,
}

/// What a task would do with a file the runner opens on its behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// See that it exists.
    Exists,
    /// Read it.
    Read,
    /// Read and write it.
    ReadWrite,
}

impl Access {
    /// The access in words, for errors.
    pub fn verb(self) -> &'static str {
        match self {
            Access::Exists => "see",
            Access::Read => "read",
            Access::ReadWrite => "read and write",
        }
    }
}

/// How task processes start: the environment they inherit and the user
/// they run as. `Default` is the allow-list alone, as the runner's user.
#[derive(Debug, Clone)]
pub struct TaskProcess {
    inherited: Vec<(OsString, OsString)>,
    user: Option<TaskUser>,
    setpriv: PathBuf,
}

impl Default for TaskProcess {
    fn default() -> TaskProcess {
        TaskProcess {
            inherited: inherited(&[]),
            user: None,
            setpriv: find_setpriv(),
        }
    }
}

/// `setpriv`'s absolute path on the runner's `PATH`. The standard library
/// spawns with `posix_spawn` only when the program is a path or the
/// environment keeps the parent's `PATH`; a task's environment is always
/// built afresh, so a bare `setpriv` would make every task a `fork`, which
/// copies the runner's page tables (a third of the CPU of a SHELL bench).
fn find_setpriv() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("setpriv"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("setpriv"))
}

impl TaskProcess {
    /// Variables a task always inherits when the runner has them.
    pub const ALWAYS: [&'static str; 9] = [
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
    ];

    /// The allow-list plus `pass` (names an operator wants passed through,
    /// such as `JAVA_HOME`), run as `user` when given.
    ///
    /// # Errors
    ///
    /// A `DATAJUMP_*` or malformed name in `pass`; a user this machine does
    /// not know.
    pub fn new(pass: &[String], user: Option<&str>) -> Result<TaskProcess, TaskProcessError> {
        for name in pass {
            if name.starts_with("DATAJUMP_") {
                return Err(TaskProcessError::RunnerSetting(name.clone()));
            }
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return Err(TaskProcessError::InvalidName(name.clone()));
            }
        }
        let user = user
            .map(|name| match nix::unistd::User::from_name(name) {
                Ok(Some(found)) => Ok(TaskUser {
                    groups: groups_of(&found),
                    name: found.name,
                    uid: found.uid.as_raw(),
                    gid: found.gid.as_raw(),
                    home: found.dir.into_os_string(),
                }),
                Ok(None) => Err(TaskProcessError::UnknownUser(name.to_owned())),
                Err(source) => Err(TaskProcessError::Lookup {
                    name: name.to_owned(),
                    source,
                }),
            })
            .transpose()?;
        let mut inherited = inherited(pass);
        if let Some(user) = &user {
            inherited
                .retain(|(name, _)| !matches!(name.to_str(), Some("HOME" | "USER" | "LOGNAME")));
            inherited.extend([
                (OsString::from("HOME"), user.home.clone()),
                (OsString::from("USER"), OsString::from(&user.name)),
                (OsString::from("LOGNAME"), OsString::from(&user.name)),
            ]);
        }
        Ok(TaskProcess {
            inherited,
            user,
            setpriv: find_setpriv(),
        })
    }

    /// The variables every task of this runner starts with, before its
    /// own: the allow-list's, with a task user's `HOME`, `USER` and
    /// `LOGNAME` in place of the runner's.
    pub fn inherited(&self) -> impl Iterator<Item = (&OsString, &OsString)> {
        self.inherited.iter().map(|(name, value)| (name, value))
    }

    /// The user tasks run as, if not the runner's.
    pub fn user(&self) -> Option<&TaskUser> {
        self.user.as_ref()
    }

    /// The `setpriv` binary every task starts through.
    pub(super) fn setpriv(&self) -> &Path {
        &self.setpriv
    }

    /// Whether the task user may `access` `path`, as the kernel answers for
    /// that user (its groups, ACLs and every folder on the way included):
    /// `test -r`/`-w` run through `setpriv` as the task user. Always true
    /// without a task user: tasks then have the runner's rights.
    pub async fn user_may(&self, access: Access, path: &Path) -> std::io::Result<bool> {
        if self.user.is_none() {
            return Ok(true);
        }
        let mut test = tokio::process::Command::new(&self.setpriv);
        test.args(self.setpriv_args()).arg("--").arg("test");
        match access {
            Access::Exists => test.arg("-e").arg(path),
            Access::Read => test.arg("-r").arg(path),
            Access::ReadWrite => test.arg("-r").arg(path).arg("-a").arg("-w").arg(path),
        };
        let status = test
            .env_clear()
            .envs(self.inherited())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await?;
        Ok(status.success())
    }

    /// `setpriv` arguments that switch to the task user, if there is one.
    pub(super) fn setpriv_args(&self) -> Vec<String> {
        match &self.user {
            None => Vec::new(),
            Some(user) => vec![
                format!("--reuid={}", user.uid),
                format!("--regid={}", user.gid),
                "--init-groups".to_owned(),
            ],
        }
    }
}

/// The groups `user` is in (as `--init-groups` gives its processes); the
/// primary one alone when the group database cannot be read.
fn groups_of(user: &nix::unistd::User) -> Vec<u32> {
    std::ffi::CString::new(user.name.as_bytes())
        .ok()
        .and_then(|name| nix::unistd::getgrouplist(&name, user.gid).ok())
        .map_or_else(
            || vec![user.gid.as_raw()],
            |groups| groups.iter().map(|g| g.as_raw()).collect(),
        )
}

/// The allow-listed variables of this process, plus `pass`.
fn inherited(pass: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            !name.starts_with("DATAJUMP_")
                && (TaskProcess::ALWAYS.contains(&name.as_ref())
                    || name.starts_with("LC_")
                    || pass.iter().any(|p| *p == name))
        })
        .collect()
}

/// Makes this process non-dumpable, so that processes of the same user
/// (the tasks it starts) cannot read its environment or memory through
/// `/proc`; and warns when tasks would run as root, who can read them
/// anyway.
pub fn protect_runner(process: &TaskProcess) {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        warn!(error = %e, "cannot make the runner non-dumpable: tasks may read its environment through /proc");
    }
    if process.user.is_none() && nix::unistd::geteuid().is_root() {
        warn!(
            "tasks run as root and can read everything the runner can, its environment included: \
             start the runner as an unprivileged user or pass --task-user"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_settings_are_never_passed() {
        assert!(matches!(
            TaskProcess::new(&["DATAJUMP_API_TOKEN".to_owned()], None),
            Err(TaskProcessError::RunnerSetting(_))
        ));
        assert!(matches!(
            TaskProcess::new(&["A=B".to_owned()], None),
            Err(TaskProcessError::InvalidName(_))
        ));
        assert!(matches!(
            TaskProcess::new(&[], Some("no-such-user-here")),
            Err(TaskProcessError::UnknownUser(_))
        ));
        let process = TaskProcess::new(&["JAVA_HOME".to_owned()], None).expect("valid");
        assert!(
            process
                .inherited()
                .all(|(name, _)| !name.to_string_lossy().starts_with("DATAJUMP_"))
        );
    }
}
