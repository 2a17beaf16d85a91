//! Finding a path a file sensor waits for: the first path that matches a
//! glob, looked for without following links to directories and within a
//! budget of entries and time.
//!
//! The decision that shapes it: the glob is matched against a directory
//! walk that never follows a symbolic link to a directory, rather than by
//! expanding the pattern as a shell would. Expanding follows links, so a
//! task author's `ln -s .. loop` under a watched folder made `**` recurse
//! without end and hold a thread past every timeout. The walk starts at the
//! pattern's longest literal prefix and stops at the first match, at
//! [`MAX_ENTRIES`] entries or at its deadline; it runs on a blocking
//! thread (docs/SECURITY.md, "Task processes"). With a task user, the walk
//! passes only through folders that user may pass through and lists only
//! those it may list, so a sensor learns nothing its task could not.

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use glob::{MatchOptions, Pattern, PatternError};

use super::task_process::{ModeBits, TaskUser};

/// The most directory entries one check looks at.
pub const MAX_ENTRIES: usize = 100_000;
/// The longest one check may look.
pub const MAX_TIME: Duration = Duration::from_secs(30);

/// What one look found.
#[derive(Debug, PartialEq, Eq)]
pub enum Looked {
    /// The first path that matches.
    Found(PathBuf),
    /// Nothing matches.
    Nothing,
    /// The budget ran out before the walk ended, after this many entries.
    GaveUp(usize),
}

/// Looks for a path matching `pattern` that `viewer` (the task user, if
/// any) could see, with the budget of [`MAX_ENTRIES`] and [`MAX_TIME`], on
/// a blocking thread.
pub async fn first_match(pattern: &str, viewer: Option<&TaskUser>) -> Result<Looked, PatternError> {
    let pattern = pattern.to_owned();
    let viewer = viewer.cloned();
    let deadline = Instant::now() + MAX_TIME;
    tokio::task::spawn_blocking(move || look(&pattern, viewer.as_ref(), MAX_ENTRIES, deadline))
        .await
        .unwrap_or(Ok(Looked::Nothing))
}

/// Whether `viewer` may use folder `dir` for `bits`; anyone may without a
/// viewer.
fn may(viewer: Option<&TaskUser>, dir: &Path, bits: ModeBits) -> bool {
    viewer.is_none_or(|user| {
        std::fs::metadata(dir).is_ok_and(|metadata| user.permits(&metadata, bits))
    })
}

/// Whether `viewer` may pass through every folder above `path`.
fn may_reach(viewer: Option<&TaskUser>, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .filter(|dir| !dir.as_os_str().is_empty())
        .all(|dir| may(viewer, dir, ModeBits::Search))
}

/// [`first_match`] on this thread, with its budget given.
pub fn look(
    pattern: &str,
    viewer: Option<&TaskUser>,
    max_entries: usize,
    deadline: Instant,
) -> Result<Looked, PatternError> {
    let compiled = Pattern::new(pattern)?;
    let (root, rest) = literal_prefix(pattern);
    if rest == 0 {
        // No glob characters: the path itself (a link to it counts, as a
        // shell's expansion counts it).
        return Ok(match std::fs::metadata(&root) {
            Ok(_) if may_reach(viewer, &root) => Looked::Found(root),
            Ok(_) | Err(_) => Looked::Nothing,
        });
    }
    if !may_reach(viewer, &root) || !may(viewer, &root, ModeBits::List) {
        return Ok(Looked::Nothing);
    }
    // `*` never crosses a `/`, as in a shell; only `**` descends.
    let options = MatchOptions {
        require_literal_separator: true,
        ..MatchOptions::new()
    };
    let depth = if pattern.contains("**") {
        usize::MAX
    } else {
        rest
    };
    let mut walk = walkdir::WalkDir::new(&root)
        .follow_links(false)
        .min_depth(1)
        .max_depth(depth)
        .into_iter();
    let mut seen = 0;
    while let Some(entry) = walk.next() {
        if seen >= max_entries || Instant::now() >= deadline {
            return Ok(Looked::GaveUp(seen));
        }
        seen += 1;
        let Ok(entry) = entry else { continue };
        if compiled.matches_path_with(entry.path(), options) {
            return Ok(Looked::Found(entry.into_path()));
        }
        // A folder the viewer may not list is seen, but not looked into.
        if entry.file_type().is_dir() && !may(viewer, entry.path(), ModeBits::List) {
            walk.skip_current_dir();
        }
    }
    Ok(Looked::Nothing)
}

/// The directory a pattern's walk starts from (its components before the
/// first one holding a glob character) and how many components follow it.
fn literal_prefix(pattern: &str) -> (PathBuf, usize) {
    let path = Path::new(pattern);
    let mut root = PathBuf::new();
    let mut rest = 0;
    for component in path.components() {
        let globbed = rest > 0
            || matches!(component, Component::Normal(part)
                if part.to_string_lossy().contains(['*', '?', '[']));
        if globbed {
            rest += 1;
        } else {
            root.push(component);
        }
    }
    if root.as_os_str().is_empty() {
        root.push(".");
    }
    (root, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn looked(pattern: &str, max_entries: usize, deadline: Instant) -> Looked {
        look(pattern, None, max_entries, deadline).expect("a valid pattern")
    }

    #[test]
    fn finds_the_first_match_below_the_literal_prefix() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let day = dir.path().join("orders/2024-01-15");
        std::fs::create_dir_all(&day)?;
        std::fs::write(day.join("part-0.csv"), "")?;
        let base = dir.path().display();
        let found = looked(&format!("{base}/orders/*/part-*.csv"), 100, later());
        assert_eq!(found, Looked::Found(day.join("part-0.csv")));
        let found = looked(&format!("{base}/**/part-0.csv"), 100, later());
        assert_eq!(found, Looked::Found(day.join("part-0.csv")));
        assert_eq!(
            looked(&format!("{base}/*.csv"), 100, later()),
            Looked::Nothing,
            "`*` does not cross a `/`"
        );
        assert_eq!(
            looked(&format!("{base}/orders/2024-01-15"), 100, later()),
            Looked::Found(day.clone()),
            "a literal path"
        );
        assert_eq!(
            looked(&format!("{base}/orders/2024-01-16"), 100, later()),
            Looked::Nothing
        );
        Ok(())
    }

    #[test]
    fn a_link_loop_is_not_followed_and_the_budget_ends_the_walk() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let watched = dir.path().join("loop");
        std::fs::create_dir_all(watched.join("a/b"))?;
        std::os::unix::fs::symlink("..", watched.join("a/b/up"))?;
        std::os::unix::fs::symlink(dir.path(), watched.join("root"))?;
        let pattern = format!("{}/**/x", watched.display());
        assert_eq!(looked(&pattern, 1_000, later()), Looked::Nothing);

        for i in 0..50 {
            std::fs::write(watched.join(format!("file-{i}")), "")?;
        }
        assert_eq!(looked(&pattern, 10, later()), Looked::GaveUp(10));
        assert_eq!(looked(&pattern, 1_000, Instant::now()), Looked::GaveUp(0));
        Ok(())
    }

    #[test]
    fn a_pattern_that_is_not_a_glob_is_an_error() {
        assert!(look("/data/[z-a", None, 10, later()).is_err());
    }
}
