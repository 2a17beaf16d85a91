//! The runner's lease on the tasks it runs (docs/ARCHITECTURE.md,
//! "Ownership and redelivery").
//!
//! Another runner takes a RUNNING task over once its owner's heartbeat key
//! in `dj_runners` has expired, [`RUNNER_TTL`] after the last write. A
//! runner that is alive but cannot renew it — its async runtime stuck, or
//! NATS out of its reach — must not still have the task's processes
//! running by then, or the task runs twice at once. So the heartbeat
//! renews a lease here, and a watchdog on an OS thread of its own, which
//! no stuck runtime holds up, kills every process group of this runner's
//! attempts once [`FENCE_AFTER`] has passed since the last renewal began:
//! earlier than the key can expire, so takeover never meets a live process
//! of the previous attempt.
//!
//! The shaping decision: **the lease is measured from when a heartbeat
//! write began**, not when it was answered: the server stamps the key after
//! the write began, so the key expires no earlier than `RUNNER_TTL` after
//! that instant, and the fence always comes first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datajump_nats::RUNNER_TTL;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tracing::error;

/// How long after the last renewal began the watchdog fences: a margin
/// under [`RUNNER_TTL`] for the watchdog's own period and the kills.
pub const FENCE_AFTER: Duration = RUNNER_TTL.saturating_sub(Duration::from_secs(3));

/// How often the watchdog looks.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The lease and the process groups (and control groups) it fences.
#[derive(Debug)]
pub struct Lease {
    /// What [`Lease::renewed_ms`] counts from.
    origin: Instant,
    /// When the last successful renewal began, in ms since `origin`.
    renewed_ms: AtomicU64,
    /// Set when the watchdog fenced, cleared by the next renewal.
    fenced: AtomicBool,
    /// The process groups of attempts running now, each with its control
    /// group's `cgroup.kill` where it has one.
    groups: Mutex<BTreeMap<i32, Option<PathBuf>>>,
}

impl Default for Lease {
    fn default() -> Lease {
        Lease {
            origin: Instant::now(),
            renewed_ms: AtomicU64::new(0),
            fenced: AtomicBool::new(false),
            groups: Mutex::new(BTreeMap::new()),
        }
    }
}

/// A process group registered with a [`Lease`]; dropping it unregisters
/// the group.
#[derive(Debug)]
pub struct Registered<'a> {
    lease: &'a Lease,
    group: i32,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Ok(mut groups) = self.lease.groups.lock() {
            groups.remove(&self.group);
        }
    }
}

impl Lease {
    /// Records a renewal: a heartbeat write that began at `began` and
    /// succeeded.
    pub fn renewed(&self, began: Instant) {
        let ms = u64::try_from(began.saturating_duration_since(self.origin).as_millis())
            .unwrap_or(u64::MAX);
        self.renewed_ms.fetch_max(ms, Ordering::Relaxed);
        self.fenced.store(false, Ordering::Relaxed);
    }

    /// Registers the process group `group` of a running attempt, and the
    /// `cgroup.kill` of its control group if it has one, until the returned
    /// value is dropped.
    pub fn register(&self, group: Pid, cgroup_kill: Option<&Path>) -> Registered<'_> {
        if let Ok(mut groups) = self.groups.lock() {
            groups.insert(group.as_raw(), cgroup_kill.map(Path::to_path_buf));
        }
        Registered {
            lease: self,
            group: group.as_raw(),
        }
    }

    /// Whether the watchdog fenced since the last renewal: a process group
    /// that died now was most likely killed by it.
    pub fn fenced(&self) -> bool {
        self.fenced.load(Ordering::Relaxed)
    }

    fn since_renewal(&self) -> Duration {
        self.origin.elapsed().saturating_sub(Duration::from_millis(
            self.renewed_ms.load(Ordering::Relaxed),
        ))
    }

    /// Kills every registered process group if `fence_after` has passed
    /// since the last renewal began; returns how many it killed.
    fn fence_if_lapsed(&self, fence_after: Duration) -> usize {
        let lapsed = self.since_renewal();
        if lapsed < fence_after {
            return 0;
        }
        let Ok(groups) = self.groups.lock() else {
            return 0;
        };
        if groups.is_empty() {
            return 0;
        }
        self.fenced.store(true, Ordering::Relaxed);
        for (group, cgroup_kill) in groups.iter() {
            let _ = killpg(Pid::from_raw(*group), Signal::SIGKILL);
            if let Some(file) = cgroup_kill {
                crate::executor::kill_cgroup(file);
            }
        }
        error!(
            groups = groups.len(),
            since_heartbeat_s = lapsed.as_secs(),
            "no heartbeat renewed the lease: killed this runner's task processes, so that no other \
             runner taking the tasks over runs one twice"
        );
        groups.len()
    }

    /// Starts the watchdog thread, which fences once the lease has lapsed
    /// for `fence_after` (see the module docs) until `stop` is set. The
    /// lease counts as renewed now.
    pub fn watch(self: &Arc<Lease>, fence_after: Duration, stop: Arc<AtomicBool>) {
        self.renewed(Instant::now());
        let lease = self.clone();
        let spawned = std::thread::Builder::new()
            .name("lease-watchdog".to_owned())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    lease.fence_if_lapsed(fence_after);
                    std::thread::sleep(WATCH_EVERY);
                }
            });
        if let Err(e) = spawned {
            error!(error = %e, "cannot start the lease watchdog: a stuck runner's tasks would not be fenced");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process group of `sleep`, as an attempt's would be.
    fn group() -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("sleep")
    }

    fn alive(child: &mut std::process::Child) -> bool {
        matches!(child.try_wait(), Ok(None))
    }

    fn pid(child: &std::process::Child) -> Pid {
        Pid::from_raw(i32::try_from(child.id()).expect("a pid"))
    }

    /// The fence is decided by [`Lease::fence_if_lapsed`], called here
    /// directly rather than by the watchdog's clock (which the e2e test
    /// `faults::a_runner_cut_off_from_nats_…` drives), so a loaded machine
    /// cannot change what this test sees.
    #[test]
    fn a_lapsed_lease_kills_the_registered_groups_and_only_them() {
        let lease = Lease::default();
        let (mut attempt, mut unrelated) = (group(), group());
        let registered = lease.register(pid(&attempt), None);
        lease.renewed(Instant::now());
        // Renewed within the fence period: nothing is killed.
        assert_eq!(lease.fence_if_lapsed(Duration::from_secs(3600)), 0);
        assert!(alive(&mut attempt), "killed while the lease was renewed");
        assert!(!lease.fenced());
        // Lapsed: the attempt's group dies, the other process lives.
        assert_eq!(lease.fence_if_lapsed(Duration::ZERO), 1);
        let status = attempt.wait().expect("the attempt's process ends");
        assert!(status.code().is_none(), "killed by a signal: {status:?}");
        assert!(lease.fenced());
        assert!(alive(&mut unrelated), "a process not registered was killed");
        // Once its attempt ended, a group is no longer the lease's to kill,
        // and a renewal ends the fence.
        drop(registered);
        assert_eq!(lease.fence_if_lapsed(Duration::ZERO), 0);
        lease.renewed(Instant::now());
        assert!(!lease.fenced());
        let _ = unrelated.kill();
        let _ = unrelated.wait();
    }

    #[test]
    fn the_fence_comes_before_the_heartbeat_key_expires() {
        assert!(FENCE_AFTER + WATCH_EVERY * 4 < RUNNER_TTL);
        assert!(
            FENCE_AFTER > crate::PROGRESS_EVERY * 2,
            "one failed heartbeat is not a lapse"
        );
    }
}
