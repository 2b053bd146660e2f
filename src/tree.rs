//! The tree of a collection on disk: the one ignore set (docs/decisions.md#ignore-set) and the walk that
//! `init`, `fsck` and `watch` share.
//!
//! Ignored: the collection's own files (recentfiles, `RECENT.recent`, their
//! `.lock` directories and rrr's and the Perl writers' temp files, by
//! their exact names: [`crate::collection::is_recentfile_name`]), rrr's
//! state directory `.rrr/`, rsync's `--delay-updates` directory `.~tmp~/`,
//! leftover `.FRMRecent-*` files of the Perl client, and the user's
//! `--exclude` patterns, with rsync's semantics ([`crate::pattern`]), so
//! that a pattern given to rrr and passed on to rsync means the same to
//! both. Names alone decide, except for rsync's temp files: `.NAME.XXXXXX`
//! (six letters or digits) is also the name of an operator's `.env.sample`
//! or `.htaccess.backup`, so the walk leaves such a file out only while it
//! is in flight, i.e. changed within the last [`RSYNC_TEMP_YOUNG`] (rsync
//! writes its temp file without pause and renames it as soon as it is
//! complete); an older one is an ordinary file. What the walk leaves out
//! that is not rrr's own nor the user's exclude is reported
//! ([`Skip::NotIndexed`]). Symlinks are entries of their own and are never
//! followed.

//!
//! Above the collection and the system layer: the ignore set knows the
//! collection's own names, and the walk reaches deep directories through
//! [`crate::sys::tree`].

use crate::collection::is_recentfile_name;
use crate::pattern::Pattern;
use crate::recentfile::RelPath;
use crate::sys::clock::Clock;
use crate::sys::tree::read_dir;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// How recently a file named like an rsync temp file (`.NAME.XXXXXX`)
/// must have changed (its ctime) to be taken as one in flight.
pub const RSYNC_TEMP_YOUNG: Duration = Duration::from_secs(60);

/// How far a file's ctime may lie ahead of the clock and still count as
/// now (a network filesystem's server clock runs ahead a little).
const CTIME_SKEW: Duration = Duration::from_secs(5);

/// What the tree walk and the watcher leave out.
#[derive(Clone, Debug)]
pub struct IgnoreSet {
    pub filenameroot: String,
    excludes: Vec<Pattern>,
    /// The clock that ages rsync temp files (`--now` pins it).
    clock: Clock,
    /// Directories rrr writes itself (a `--trace` directory), `/`-separated.
    own_dirs: Vec<Vec<u8>>,
}

/// Why a name is left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// rrr's own: the collection's files, `.rrr/`.
    Own,
    /// Another tool's working file (rsync's `.~tmp~/`, the Perl client's
    /// `.FRMRecent-*`): the reason, for `fsck`'s `not_indexed`.
    Foreign(&'static str),
    /// The user's `--exclude`.
    Excluded,
}

impl IgnoreSet {
    /// The built-in rules plus the user's `--exclude` patterns (rsync's
    /// syntax, see [`crate::pattern`]). The command line and the config
    /// validate patterns with [`Pattern::parse`]; one that does not compile
    /// here is left out.
    pub fn new(filenameroot: &str, excludes: &[String]) -> IgnoreSet {
        let excludes = excludes.iter().filter_map(|p| Pattern::parse(p).ok()).collect();
        IgnoreSet { filenameroot: filenameroot.to_string(), excludes, clock: Clock::system(), own_dirs: Vec::new() }
    }

    /// The same set with `dir` (relative to the root, e.g. `project/trace`,
    /// the `--trace` directory: crate::monitor::trace_write) and all below
    /// it as rrr's own.
    pub fn with_own_dir(mut self, dir: impl AsRef<[u8]>) -> IgnoreSet {
        let dir = dir.as_ref().strip_suffix(b"/").unwrap_or(dir.as_ref());
        self.own_dirs.push(dir.to_vec());
        self
    }

    /// The same set with the paths recorded as rrr's own in
    /// `<root>/.rrr/own-paths` (a `--trace` directory, a `--timestamp`
    /// file: `monitor::trace_write::record_own`).
    pub fn with_recorded_own(mut self, root: &Path) -> IgnoreSet {
        for p in crate::monitor::trace_write::recorded_own(root) {
            self = self.with_own_dir(p);
        }
        self
    }

    /// The same set, aging rsync temp files by `clock` (the writer's, so
    /// that `--now` pins it as it pins every file age).
    pub fn with_clock(mut self, clock: &Clock) -> IgnoreSet {
        self.clock = clock.clone();
        self
    }

    /// Whether `rel` (relative to the root, `/`-separated; a file, or a
    /// directory when that does not matter) is ignored.
    pub fn is_ignored(&self, rel: impl AsRef<[u8]>) -> bool {
        self.is_ignored_entry(rel, false)
    }

    /// [`IgnoreSet::is_ignored`] for an entry known to be a directory or
    /// not (patterns with a trailing `/` match directories only).
    pub fn is_ignored_entry(&self, rel: impl AsRef<[u8]>, is_dir: bool) -> bool {
        self.why_ignored(rel, is_dir).is_some()
    }

    /// Why `rel` is left out, if it is (see [`IgnoreSet::is_ignored_entry`]).
    pub fn why_ignored(&self, rel: impl AsRef<[u8]>, is_dir: bool) -> Option<Ignored> {
        let rel = rel.as_ref();
        // rrr's and the Perl tools' own names are ASCII.
        let own = std::str::from_utf8(rel).is_ok_and(|r| is_recentfile_name(r, &self.filenameroot));
        let own_dir = |d: &Vec<u8>| rel.strip_prefix(d.as_slice()).is_some_and(|r| r.is_empty() || r[0] == b'/');
        if own || rel == b".rrr" || rel.starts_with(b".rrr/") || self.own_dirs.iter().any(own_dir) {
            return Some(Ignored::Own);
        }
        for comp in rel.split(|&b| b == b'/') {
            if comp == b".~tmp~" {
                return Some(Ignored::Foreign("rsync's --delay-updates directory"));
            }
            if comp.starts_with(b".FRMRecent-") {
                return Some(Ignored::Foreign("a temp file of the Perl rrr-client"));
            }
        }
        self.excludes.iter().any(|p| p.excludes(rel, is_dir)).then_some(Ignored::Excluded)
    }

    /// Whether a file `name` whose ctime is `ctime` (whole seconds) is an
    /// rsync temp file in flight (see the module doc): changed within the
    /// last [`RSYNC_TEMP_YOUNG`] by the writer's clock. A ctime more than
    /// [`CTIME_SKEW`] ahead of the clock (a `--now` in the past) is not
    /// young: `--now` pins file ages here as everywhere.
    pub fn in_flight(&self, name: &[u8], ctime: i64) -> bool {
        let age = self.clock.now_f64() - ctime as f64;
        is_rsync_temp_name(name) && age > -CTIME_SKEW.as_secs_f64() && age < RSYNC_TEMP_YOUNG.as_secs_f64()
    }
}

/// Whether `name` has the shape of rsync's temp names, `.<name>.XXXXXX`
/// (six letters or digits after the last dot; rsync's `mkstemp` template):
/// the shape alone does not make a file a temp file ([`IgnoreSet::in_flight`]).
pub fn is_rsync_temp_name(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b".") else { return false };
    match rest.iter().rposition(|&b| b == b'.') {
        Some(i) if i > 0 => rest.len() - i - 1 == 6 && rest[i + 1..].iter().all(|b| b.is_ascii_alphanumeric()),
        _ => false,
    }
}

/// Why the walk did not give an entry to its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// It cannot be indexed (unreadable, a name over the limits): the message.
    Unindexable(String),
    /// Another tool's file in flight or working file: why it is not indexed.
    NotIndexed(String),
}

/// Why an entry cannot be read: the path escaped as everywhere (a name
/// with a newline must not break `fsck`'s one line per finding).
fn io_error(p: &Path, e: std::io::Error) -> Skip {
    let shown = crate::recentfile::shown_path(p.as_os_str().as_bytes());
    Skip::Unindexable(format!("IO error for operation on {shown}: {e}"))
}

/// One file (or symlink) of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub rel: RelPath,
    /// lstat mtime, whole seconds.
    pub mtime: i64,
    /// lstat ctime, whole seconds.
    pub ctime: i64,
    /// lstat size in bytes (`rrr verify` compares it with the index's).
    pub size: u64,
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
    skipped: impl FnMut(&Path, Skip),
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
    mut skipped: impl FnMut(&Path, Skip),
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // What a message shows of `rel` (the walk reads deep directories
    // through `reach`, whose paths mean nothing to the reader).
    let shown = |rel: &[u8]| root.join(std::ffi::OsStr::from_bytes(rel));
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
                let p = shown(prefix);
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
                let p = shown(rel.as_bytes());
                skipped(&p, io_error(&p, e));
                continue;
            }
        };
        match ignore.why_ignored(&rel, file_type.is_dir()) {
            None => {}
            Some(Ignored::Foreign(why)) => {
                skipped(&shown(rel.as_bytes()), Skip::NotIndexed(why.to_string()));
                continue;
            }
            Some(_) => continue,
        }
        if file_type.is_dir() {
            enter(&rel);
            match read_dir(root, &rel) {
                Ok(rd) => stack.push((rd, rel.into_bytes())),
                // Gone since it was listed (renamed or removed): nothing to index.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    let p = shown(rel.as_bytes());
                    skipped(&p, io_error(&p, e));
                }
            }
            continue;
        }
        if let Err(why) = crate::recentfile::check_relative_path(&rel) {
            skipped(&shown(rel.as_bytes()), Skip::Unindexable(why.to_string()));
            continue;
        }
        match de.metadata() {
            // Gone since it was listed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Ok(m) if ignore.in_flight(name.as_bytes(), m.ctime()) => skipped(
                &shown(rel.as_bytes()),
                Skip::NotIndexed(format!(
                    "an rsync temp file in flight (named .NAME.XXXXXX and changed within {} s)",
                    RSYNC_TEMP_YOUNG.as_secs()
                )),
            ),
            Ok(m) => each(Entry { rel, mtime: m.mtime(), ctime: m.ctime(), size: m.size() }),
            Err(e) => skipped(&shown(rel.as_bytes()), Skip::Unindexable(e.to_string())),
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
            "RECENT.recent.4242",
            "RECENT-Z.yaml.lock/process",
            "RECENT-6h.yaml.new",
            "RECENT-6h.json.31337.new",
            ".rrr/state.json",
            "a/.~tmp~/x",
            ".FRMRecent-RECENT-1h.yaml-j5ue.yaml",
            "x/y.tmp",
            "private/a/b",
        ] {
            assert!(ig.is_ignored(yes), "{yes}");
        }
        for no in [
            "id/A/RECENT-1h.yaml.txt",
            "a/Foo-1.tar.gz",
            ".hidden",
            "a/.Foo.tar.gz",
            "RECENT-notes",
            // Names of ordinary files, whatever they look like: the shape of
            // rsync's temp names, or near rrr's own.
            "a/.Foo-1.tar.gz.AbC123",
            ".env.sample",
            "www/.htaccess.backup",
            ".bashrc.custom",
            "RECENT-1h.yaml.backup",
            "RECENT-1h.yaml.x.new",
            "RECENT.recent.old",
            "RECENT-1h.txt",
            "notes.new",
            "x.lock/process",
        ] {
            assert!(!ig.is_ignored(no), "{no}");
        }
        assert_eq!(ig.why_ignored("a/.~tmp~", true), Some(Ignored::Foreign("rsync's --delay-updates directory")));
        assert_eq!(ig.why_ignored("x/y.tmp", false), Some(Ignored::Excluded));
        assert_eq!(ig.why_ignored("RECENT-1h.yaml", false), Some(Ignored::Own));
    }

    #[test]
    fn io_errors_show_the_path_escaped() {
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/t/a\nb\xff"));
        let Skip::Unindexable(why) = io_error(p, std::io::Error::from_raw_os_error(13)) else { panic!() };
        assert!(why.starts_with("IO error for operation on /t/a\\nb\\377: "), "{why}");
        assert!(!why.contains('\n'), "{why}");
    }

    #[test]
    fn rsync_temp_files_only_while_in_flight() {
        let now = 1_700_000_000;
        let ig = IgnoreSet::new("RECENT", &[]).with_clock(&Clock::pinned(crate::epoch::Epoch::from_whole_seconds(now)));
        for name in [".Foo-1.tar.gz.AbC123", ".env.sample", ".htaccess.backup", ".bashrc.custom"] {
            assert!(is_rsync_temp_name(name.as_bytes()), "{name}");
            assert!(ig.in_flight(name.as_bytes(), now - 2), "{name}: changed 2 s ago");
            assert!(ig.in_flight(name.as_bytes(), now + 1), "{name}: a server clock a second ahead");
            assert!(!ig.in_flight(name.as_bytes(), now - 61), "{name}: changed over a minute ago");
            assert!(!ig.in_flight(name.as_bytes(), now + 3600), "{name}: after a --now in the past");
        }
        for name in ["env.sample", ".env.sampl", ".env.sample1", ".env.sam-le", "..sample", ".sample"] {
            assert!(!is_rsync_temp_name(name.as_bytes()), "{name}");
            assert!(!ig.in_flight(name.as_bytes(), now), "{name}");
        }
    }
}
