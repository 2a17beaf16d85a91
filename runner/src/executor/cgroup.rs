//! A control group per attempt, so that ending an attempt ends every
//! process it started — also those that left its process group.
//!
//! Killing the task's process group misses a process that called `setsid`
//! (a daemon, `nohup setsid …`): it outlives a kill, a timeout and a
//! successful end, and may go on writing where the next attempt writes. A
//! control group cannot be left by an unprivileged process, so each
//! attempt's processes start in a group of their own under the runner's
//! ([`Cgroups`]) and end with one write to its `cgroup.kill`.
//!
//! It is cgroup v2 only (`cgroup.kill`, Linux 5.14): v2 tracks processes
//! without any controller, and kills a group whole in one step, where v1
//! would need a freezer and a kill loop. A runner that may not create
//! groups (no v2 hierarchy mounted, a read-only one, a user without the
//! right on its own group) runs without them and says so at start; process
//! groups still end the rest (docs/ARCHITECTURE.md, "Task processes").
//!
//! A process joins its group by writing its id to `cgroup.procs` before it
//! starts anything; only the runner's user may write there (moving a
//! process needs write access to the group the source and destination
//! share), so the attempt's guard joins while it is still the runner's
//! user, and drops to the task user only for the program it starts
//! (`executor/process.rs`).
//!
//! A group whose processes have all exited is kept for the next attempt:
//! creating and removing a group costs the kernel more than the rest of a
//! short task's start.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;
use tracing::{info, warn};

/// Why a runner runs attempts without control groups.
#[derive(Debug, Error)]
pub enum CgroupsUnavailable {
    /// No cgroup v2 hierarchy in `/proc/self/mountinfo`.
    #[error("no cgroup v2 hierarchy is mounted")]
    NoHierarchy,
    /// The kernel predates `cgroup.kill`.
    #[error("the kernel's control groups have no cgroup.kill (Linux 5.14 or later has it)")]
    NoKill,
    /// The runner's own group is outside the mounted hierarchy (another
    /// cgroup namespace).
    #[error("this process's control group {0} is not under the mounted hierarchy")]
    OutsideMount(String),
    /// `/proc` could not be read.
    #[error("cannot read {file}: {source}")]
    Proc {
        /// The file.
        file: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The runner may not create a group under its own.
    #[error("cannot create control group {path}: {source}")]
    Create {
        /// The group's folder.
        path: PathBuf,
        /// Why (usually: not root, and the group is not delegated).
        source: std::io::Error,
    },
}

/// The folder of one runner's attempt groups: `datajump-<pid>-<n>` under
/// the runner's own control group. Removed, with anything left in it, when
/// dropped; a runner starting later removes those of runners that are gone
/// (their process id is in the name, as in [`crate::leftovers`]).
#[derive(Debug)]
pub struct Cgroups {
    folder: PathBuf,
    next: AtomicU64,
    /// Groups of ended attempts, for the next ones.
    free: Mutex<FreeGroups>,
}

/// Groups no attempt holds: `empty` had no process left when their
/// attempt ended, `exiting` still had some dying.
#[derive(Debug, Default)]
struct FreeGroups {
    empty: Vec<PathBuf>,
    exiting: Vec<PathBuf>,
}

/// How many attempt folders this process opened: a process running two
/// runners (tests) gives each its own.
static OPENED: AtomicU64 = AtomicU64::new(0);

impl Cgroups {
    /// Creates this runner's folder of attempt groups, after removing the
    /// folders of runners that are gone.
    ///
    /// # Errors
    ///
    /// [`CgroupsUnavailable`]: the runner then kills process groups only.
    pub fn open() -> Result<Cgroups, CgroupsUnavailable> {
        let own = own_group()?;
        sweep(&own);
        let folder = own.join(format!(
            "{}{}",
            crate::leftovers::prefix(),
            OPENED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&folder).map_err(|source| CgroupsUnavailable::Create {
            path: folder.clone(),
            source,
        })?;
        // The root group has no `cgroup.kill`: look in ours.
        if !folder.join("cgroup.kill").exists() {
            let _ = std::fs::remove_dir(&folder);
            return Err(CgroupsUnavailable::NoKill);
        }
        Ok(Cgroups {
            folder,
            next: AtomicU64::new(0),
            free: Mutex::new(FreeGroups::default()),
        })
    }

    /// The folder the attempt groups are in.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// An empty group for one attempt: one an earlier attempt left empty,
    /// or a new one.
    ///
    /// # Errors
    ///
    /// A new group cannot be created.
    pub fn attempt(&self) -> std::io::Result<AttemptCgroup<'_>> {
        let reused = self.free.lock().ok().and_then(|mut free| {
            let FreeGroups { empty, exiting } = &mut *free;
            // Those that were still exiting have usually ended since.
            let (ended, dying): (Vec<_>, Vec<_>) =
                exiting.drain(..).partition(|path| is_empty(path));
            empty.extend(ended);
            *exiting = dying;
            empty.pop()
        });
        let path = match reused {
            Some(path) => path,
            None => {
                let path = self
                    .folder
                    .join(self.next.fetch_add(1, Ordering::Relaxed).to_string());
                std::fs::create_dir(&path)?;
                path
            }
        };
        Ok(AttemptCgroup {
            parent: self,
            procs: path.join("cgroup.procs"),
            kill: path.join("cgroup.kill"),
            path,
        })
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        remove_folder(&self.folder);
    }
}

/// One attempt's control group: killed whole when dropped, and kept for
/// the next attempt.
#[derive(Debug)]
pub struct AttemptCgroup<'a> {
    parent: &'a Cgroups,
    path: PathBuf,
    procs: PathBuf,
    kill: PathBuf,
}

impl AttemptCgroup<'_> {
    /// `cgroup.procs`: a process that writes its id there joins the group.
    pub fn procs_file(&self) -> &Path {
        &self.procs
    }

    /// `cgroup.kill`: writing `1` there kills every process in the group.
    pub fn kill_file(&self) -> &Path {
        &self.kill
    }

    /// Kills every process in the group (SIGKILL).
    pub fn kill(&self) {
        kill(&self.kill);
    }
}

impl Drop for AttemptCgroup<'_> {
    fn drop(&mut self) {
        self.kill();
        // The kill is delivered at once, but processes take a moment to
        // exit: a group not yet empty waits before another attempt gets it.
        let empty = is_empty(&self.path);
        if let Ok(mut free) = self.parent.free.lock() {
            let list = if empty {
                &mut free.empty
            } else {
                &mut free.exiting
            };
            list.push(std::mem::take(&mut self.path));
        }
    }
}

/// Whether no process is left in the group at `path`.
fn is_empty(path: &Path) -> bool {
    std::fs::read_to_string(path.join("cgroup.procs")).is_ok_and(|procs| procs.trim().is_empty())
}

/// Kills every process of the group whose `cgroup.kill` is `file`. Used by
/// the lease's watchdog thread as well (see [`crate::lease`]).
pub fn kill(file: &Path) {
    if let Err(e) = std::fs::write(file, b"1")
        && e.kind() != ErrorKind::NotFound
    {
        warn!(group = %file.display(), error = %e, "cannot kill an attempt's control group");
    }
}

/// This process's cgroup v2 group, as a folder.
fn own_group() -> Result<PathBuf, CgroupsUnavailable> {
    let read = |file: &'static str| {
        std::fs::read_to_string(file).map_err(|source| CgroupsUnavailable::Proc { file, source })
    };
    // `0::/path`: the v2 line of /proc/self/cgroup.
    let cgroups = read("/proc/self/cgroup")?;
    let own = cgroups
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or(CgroupsUnavailable::NoHierarchy)?;
    // Fields: id, parent, major:minor, root, mount point, options, then
    // optional fields up to `-`, then the file system type.
    let mountinfo = read("/proc/self/mountinfo")?;
    let (root, mount_point) = mountinfo
        .lines()
        .find_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            (after.split(' ').next() == Some("cgroup2")).then_some(())?;
            let mut fields = before.split(' ').skip(3);
            Some((fields.next()?, fields.next()?))
        })
        .ok_or(CgroupsUnavailable::NoHierarchy)?;
    let relative = Path::new(own)
        .strip_prefix(root)
        .map_err(|_| CgroupsUnavailable::OutsideMount(own.to_owned()))?;
    Ok(Path::new(mount_point).join(relative))
}

/// Removes the attempt folders in `own` of runners that are gone, killing
/// what still runs in them.
fn sweep(own: &Path) {
    let Ok(entries) = std::fs::read_dir(own) else {
        return;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name
            .to_str()
            .and_then(crate::leftovers::owner_of)
            .is_some_and(crate::leftovers::is_gone)
        {
            remove_folder(&entry.path());
            removed += 1;
        }
    }
    if removed > 0 {
        info!(
            removed,
            "killed and removed the control groups of runners that are gone"
        );
    }
}

/// Kills every group in `folder` and removes them and it, waiting up to a
/// second for their processes to exit.
fn remove_folder(folder: &Path) {
    let groups: Vec<PathBuf> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| entry.path())
        .collect();
    for group in &groups {
        kill(&group.join("cgroup.kill"));
    }
    for _ in 0..100 {
        let left = groups
            .iter()
            .filter(|group| {
                std::fs::remove_dir(group).is_err_and(|e| e.kind() != ErrorKind::NotFound)
            })
            .count();
        if left == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if let Err(e) = std::fs::remove_dir(folder)
        && e.kind() != ErrorKind::NotFound
    {
        warn!(folder = %folder.display(), error = %e, "cannot remove a runner's control groups");
    }
}
