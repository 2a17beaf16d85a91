//! What `/proc` says of a process: its memory and the CPU time it used, so
//! that a workload can report the cost of the roles it drives and of the
//! bench itself.

/// Linux reports `/proc/<pid>/stat` times in USER_HZ, which the kernel fixes
/// at 100 for user space on every architecture the bench runs on.
const USER_HZ: f64 = 100.0;

/// A `/proc/<pid>/status` field in MiB (`VmHWM`, `VmRSS`).
pub fn memory_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// CPU seconds (user + system, all threads) the process `pid` has used.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    cpu_seconds_of(&stat)
}

/// The user and system times of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may hold spaces and parentheses, so
/// the fields are counted from the last `)`: utime and stime are the 14th
/// and 15th fields, the 12th and 13th after it.
fn cpu_seconds_of(stat: &str) -> Option<f64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    Some((user + system) / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_are_read_after_the_command_name() {
        let stat =
            "4242 (tokio (x) y) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 9 0 1 2 3";
        assert_eq!(cpu_seconds_of(stat), Some(3.25));
        assert_eq!(cpu_seconds_of("garbage"), None);
    }

    #[test]
    fn this_process_has_a_cpu_time_and_a_memory() {
        let me = std::process::id();
        assert!(cpu_seconds(me).is_some_and(|s| s >= 0.0));
        assert!(memory_mib(me, "VmRSS").is_some_and(|m| m > 0.0));
    }
}
