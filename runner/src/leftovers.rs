//! What a crashed runner leaves in the temporary folder, and sweeping it.
//!
//! A runner writes task scripts, full log copies, `$DJ_OUTPUT` files and
//! SPARK and FLINK configuration folders (which hold credentials) in the
//! temporary folder and removes each when its attempt ends; a runner
//! killed mid-attempt cannot. Each such name carries the runner's process
//! id ([`prefix`]), so a runner starting on the same host removes what
//! runners whose process is gone left, and never a live one's
//! (docs/ARCHITECTURE.md, "Crashes"). Each attempt's `$DJ_OUTPUT_JSON`
//! folder goes in [`scratch_folder`], swept alike.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use tracing::info;

/// What every temporary file and folder of this runner process starts
/// with: `datajump-<pid>-`.
pub fn prefix() -> String {
    format!("datajump-{}-", std::process::id())
}

/// The process id in a name [`prefix`] started, if it is one.
pub(crate) fn owner_of(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("datajump-")?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok().filter(|pid| *pid > 0)
}

/// Whether no process has id `pid`.
pub(crate) fn is_gone(pid: i32) -> bool {
    // ESRCH: no such process. EPERM means one runs (another user's).
    kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH)
}

/// Where a folder made and removed by every SHELL or PYTHON attempt goes:
/// the temporary folder when `TMPDIR` names one, else shared memory
/// (`/dev/shm`) where the runner may write there, else the temporary
/// folder. On a disk file system a folder's creation and removal wait for
/// its journal, which the database's commits keep busy: a tenth of a
/// millisecond and more on each task's path, against a few microseconds in
/// memory.
pub fn scratch_folder() -> &'static Path {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER.get_or_init(|| {
        let shared_memory = Path::new("/dev/shm");
        let writable = || {
            nix::unistd::access(
                shared_memory,
                nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
            )
            .is_ok()
        };
        if std::env::var_os("TMPDIR").is_none() && shared_memory.is_dir() && writable() {
            shared_memory.to_owned()
        } else {
            std::env::temp_dir()
        }
    })
}

/// Removes the files and folders in `folder` that runners no longer
/// running left behind; returns how many it removed.
pub fn sweep(folder: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_of) else {
            continue;
        };
        if !is_gone(pid) {
            continue;
        }
        // A link is removed, never followed; a folder with what is in it.
        let removal = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(entry.path()),
            Ok(t) if t.is_file() || t.is_symlink() => std::fs::remove_file(entry.path()),
            _ => continue,
        };
        if removal.is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        info!(
            removed,
            folder = %folder.display(),
            "removed what runners that are gone left in the temporary folder"
        );
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_runners_that_are_gone_left_is_swept() -> std::io::Result<()> {
        let folder = tempfile::tempdir()?;
        // A process that has exited and been reaped: its id runs nothing.
        let mut child = std::process::Command::new("true").spawn()?;
        let gone = child.id();
        child.wait()?;
        let names = [
            format!("datajump-{gone}-abc.sh"),
            format!("datajump-{gone}-log-x"),
            format!("{}output-1-ff", prefix()),
            "datajump-notapid-x".to_owned(),
            "unrelated.txt".to_owned(),
        ];
        for name in &names {
            std::fs::write(folder.path().join(name), b"x")?;
        }
        let conf = folder.path().join(format!("datajump-{gone}-conf-x"));
        std::fs::create_dir(&conf)?;
        std::fs::write(conf.join("spark-defaults.conf"), b"k.password=v")?;
        // A link in it to a file elsewhere: removed, its target kept.
        let target = folder.path().join("unrelated.txt");
        std::fs::write(&target, b"x")?;
        std::os::unix::fs::symlink(&target, conf.join("spark-env.sh"))?;
        let live = folder.path().join(format!("{}conf-y", prefix()));
        std::fs::create_dir(&live)?;
        assert_eq!(sweep(folder.path()), 3);
        let mut left: Vec<String> = std::fs::read_dir(folder.path())?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        left.sort();
        let mut expected = vec![
            format!("{}conf-y", prefix()),
            format!("{}output-1-ff", prefix()),
            "datajump-notapid-x".to_owned(),
            "unrelated.txt".to_owned(),
        ];
        expected.sort();
        assert_eq!(left, expected, "a live runner's files and others stay");
        Ok(())
    }
}
