//! The tree on disk: the one ignore set (docs/decisions.md#ignore-set) and the walk that
//! `init`, `fsck` and `watch` share.
//!
//! Ignored: the collection's own files (recentfiles, `RECENT.recent`, their
//! `.lock` directories and `.new` temp files), rrr's state directory
//! `.rrr/`, rsync temp files (`.~tmp~/`, `.name.XXXXXX`), leftover
//! `.FRMRecent-*` files of the Perl client, and the user's `--exclude`
//! patterns, with rsync's semantics ([`crate::pattern`]), so that a
//! pattern given to rrr and passed on to rsync means the same to both.
//! Symlinks are entries of their own and are never followed.

use crate::collection::is_recentfile_name;
use crate::pattern::Pattern;
use crate::recentfile::RelPath;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What the tree walk and the watcher leave out.
#[derive(Clone, Debug)]
pub struct IgnoreSet {
    pub filenameroot: String,
    excludes: Vec<Pattern>,
}

impl IgnoreSet {
    /// The built-in rules plus the user's `--exclude` patterns (rsync's
    /// syntax, see [`crate::pattern`]). The command line and the config
    /// validate patterns with [`Pattern::parse`]; one that does not compile
    /// here is left out.
    pub fn new(filenameroot: &str, excludes: &[String]) -> IgnoreSet {
        let excludes = excludes.iter().filter_map(|p| Pattern::parse(p).ok()).collect();
        IgnoreSet { filenameroot: filenameroot.to_string(), excludes }
    }

    /// Whether `rel` (relative to the root, `/`-separated; a file, or a
    /// directory when that does not matter) is ignored.
    pub fn is_ignored(&self, rel: impl AsRef<[u8]>) -> bool {
        self.is_ignored_entry(rel, false)
    }

    /// [`IgnoreSet::is_ignored`] for an entry known to be a directory or
    /// not (patterns with a trailing `/` match directories only).
    pub fn is_ignored_entry(&self, rel: impl AsRef<[u8]>, is_dir: bool) -> bool {
        let rel = rel.as_ref();
        // rrr's and the Perl tools' own names are ASCII.
        let own = std::str::from_utf8(rel).is_ok_and(|r| is_recentfile_name(r, &self.filenameroot));
        if own || rel == b".rrr" || rel.starts_with(b".rrr/") {
            return true;
        }
        for comp in rel.split(|&b| b == b'/') {
            if comp == b".~tmp~" || comp.starts_with(b".FRMRecent-") || is_rsync_temp(comp) {
                return true;
            }
        }
        self.excludes.iter().any(|p| p.excludes(rel, is_dir))
    }
}

/// rsync's temp names: `.<name>.XXXXXX` (six characters after the last dot).
fn is_rsync_temp(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b".") else { return false };
    match rest.iter().rposition(|&b| b == b'.') {
        Some(i) if i > 0 => rest.len() - i - 1 == 6 && rest[i + 1..].iter().all(|b| b.is_ascii_alphanumeric()),
        _ => false,
    }
}

/// One file (or symlink) of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub rel: RelPath,
    /// lstat mtime, whole seconds.
    pub mtime: i64,
    /// lstat ctime, whole seconds.
    pub ctime: i64,
}

/// Walk `root` and call `each` for every file and symlink not ignored.
/// Names with any byte but NUL are recorded, control characters and names
/// that are not UTF-8 included.
///
/// Depth first, each directory's entries in the order the directory lists
/// them, a directory's contents right after the directory itself (the
/// order `walkdir` gives). Entries are stat'ed relative to their open
/// directory (`fstatat`, as `find` does), not by their full path, which
/// makes the walk of a deep tree about twice as fast.
///
/// In a short command ([`crate::sys::signals::install_for_short_command`]) a
/// SIGINT/SIGTERM ends the walk after the current directory with an
/// `Interrupted` error.
pub fn walk(
    root: &Path,
    ignore: &IgnoreSet,
    each: impl FnMut(Entry),
    skipped: impl FnMut(&Path, String),
) -> std::io::Result<()> {
    walk_with(root, ignore, |_| {}, each, skipped)
}

/// [`walk`], calling `enter` with each directory's relative path ("" for
/// the root) right before the directory is listed (`watch` adds its watch
/// there, so that a file created during the walk is either listed or seen
/// by the watch).
pub fn walk_with(
    root: &Path,
    ignore: &IgnoreSet,
    mut enter: impl FnMut(&RelPath),
    mut each: impl FnMut(Entry),
    mut skipped: impl FnMut(&Path, String),
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let io_error = |p: &Path, e: std::io::Error| format!("IO error for operation on {}: {e}", p.display());
    // Open directories, innermost last, each with its path relative to the root.
    let mut stack: Vec<(std::fs::ReadDir, Vec<u8>)> = Vec::new();
    enter(&RelPath::default());
    match std::fs::read_dir(root) {
        Ok(rd) => stack.push((rd, Vec::new())),
        Err(e) => skipped(root, io_error(root, e)),
    }
    while let Some((dir, prefix)) = stack.last_mut() {
        let Some(next) = dir.next() else {
            stack.pop();
            if crate::sys::signals::wait_interrupted() {
                return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted by a signal"));
            }
            continue;
        };
        let de = match next {
            Ok(de) => de,
            Err(e) => {
                let p = root.join(std::ffi::OsStr::from_bytes(prefix));
                skipped(&p, io_error(&p, e));
                continue;
            }
        };
        let name = de.file_name();
        let rel = RelPath::from(if prefix.is_empty() {
            name.as_bytes().to_vec()
        } else {
            [prefix.as_slice(), b"/", name.as_bytes()].concat()
        });
        let file_type = match de.file_type() {
            Ok(t) => t,
            Err(e) => {
                skipped(&de.path(), io_error(&de.path(), e));
                continue;
            }
        };
        if ignore.is_ignored_entry(&rel, file_type.is_dir()) {
            continue;
        }
        if file_type.is_dir() {
            enter(&rel);
            match std::fs::read_dir(de.path()) {
                Ok(rd) => stack.push((rd, rel.into_bytes())),
                Err(e) => skipped(&de.path(), io_error(&de.path(), e)),
            }
            continue;
        }
        if let Err(why) = crate::recentfile::check_relative_path(&rel) {
            skipped(&de.path(), why);
            continue;
        }
        match de.metadata() {
            Ok(m) => each(Entry { rel, mtime: m.mtime(), ctime: m.ctime() }),
            Err(e) => skipped(&de.path(), e.to_string()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_set() {
        let ig = IgnoreSet::new("RECENT", &["*.tmp".to_string(), "private/**".to_string()]);
        for yes in [
            "RECENT-1h.yaml",
            "RECENT.recent",
            "RECENT-Z.yaml.lock/process",
            "RECENT-6h.yaml.new",
            ".rrr/state.json",
            "a/.~tmp~/x",
            "a/.Foo-1.tar.gz.AbC123",
            ".FRMRecent-RECENT-1h.yaml-j5ue.yaml",
            "x/y.tmp",
            "private/a/b",
        ] {
            assert!(ig.is_ignored(yes), "{yes}");
        }
        for no in ["id/A/RECENT-1h.yaml.txt", "a/Foo-1.tar.gz", ".hidden", "a/.Foo.tar.gz", "RECENT-notes"] {
            assert!(!ig.is_ignored(no), "{no}");
        }
    }
}
