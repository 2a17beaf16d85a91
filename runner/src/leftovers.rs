//! What a crashed runner leaves in the temporary folder, and sweeping it.
//!
//! A runner writes task scripts, full log copies and `$DJ_OUTPUT` files in
//! the temporary folder and removes each when its attempt ends; a runner
//! killed mid-attempt cannot. Each such file's name carries the runner's
//! process id ([`prefix`]), so a runner starting on the same host removes
//! the files of runners whose process is gone, and never a live one's
//! (docs/ARCHITECTURE.md, "Crashes").

use std::path::Path;

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use tracing::info;

/// What every temporary file of this runner process starts with:
/// `datajump-<pid>-`.
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

/// Removes the files in `folder` that runners no longer running left
/// behind; returns how many it removed.
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
        let gone = is_gone(pid);
        let is_file = entry
            .file_type()
            .is_ok_and(|t| t.is_file() || t.is_symlink());
        if gone && is_file && std::fs::remove_file(entry.path()).is_ok() {
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
    fn only_files_of_runners_that_are_gone_are_swept() -> std::io::Result<()> {
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
        std::fs::create_dir(folder.path().join(format!("datajump-{gone}-dir")))?;
        assert_eq!(sweep(folder.path()), 2);
        let mut left: Vec<String> = std::fs::read_dir(folder.path())?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        left.sort();
        let mut expected = vec![
            format!("datajump-{gone}-dir"),
            format!("{}output-1-ff", prefix()),
            "datajump-notapid-x".to_owned(),
            "unrelated.txt".to_owned(),
        ];
        expected.sort();
        assert_eq!(left, expected, "a live runner's files and others stay");
        Ok(())
    }
}
