//! Recording each new file's size and sha256 at the origin (`--hash
//! sha256`, protocol.md 4.1 and 4.2; docs/decisions.md#hashes-in-the-index).
//!
//! Opt-in per collection: a writer given `--hash sha256` records the
//! principal's meta key `Hash: sha256`, and every later rrr writer of the
//! collection hashes without the flag ([`Setting::of`]); `--hash none`
//! removes the key. The beacon's `hash` follows the principal's key, and a
//! principal that lost the key (a Perl writer rewrote it) while the beacon
//! still says `sha256` goes on hashing and gets the key back.
//!
//! A file is hashed only when its bytes can be vouched for: its identity,
//! size, mtime and ctime ([`Stamp`]) are taken before and after the read,
//! and a read during which they changed is repeated (up to
//! [`ATTEMPTS`] reads), then given up: the event is recorded without
//! size and sha256, with a warning naming the file. A file that cannot be
//! read is recorded the same way. The writers hash before they take the
//! principal's lock ([`prehash`]) and, under it, take the stamp again
//! ([`confirm`]): a file that changed in between is hashed again there,
//! so no writer records the hash of bytes the file no longer holds
//! without noticing. Symlinks and anything not a regular file get no hash.

use crate::recentfile::{EventKind, Recentfile, RelPath};
use crate::update::Change;
use anyhow::{bail, Result};
use recentfile::beacon::{FileDigest, Hasher};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The one algorithm rrr records (the meta key's and the beacon's value).
pub const SHA256: &str = "sha256";

/// How often a file that changes while it is read is read again before
/// its event is recorded unhashed.
pub const ATTEMPTS: usize = 3;

/// `--hash` as given to a writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashChoice {
    /// `--hash sha256`: record hashes from now on (and keep doing so).
    Sha256,
    /// `--hash none`: stop recording them (the meta key goes).
    None,
}

/// Whether a write of the collection records hashes, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    /// Record size and sha256 of each new regular file.
    Sha256,
    /// Record neither; `stop` when `--hash none` was given (the key goes).
    Off { stop: bool },
}

impl Setting {
    /// The setting for a write of a collection whose principal is
    /// `principal` (`None`: none yet), whose beacon says `beacon_hash`,
    /// by a writer given `choice`. A meta key naming an algorithm rrr does
    /// not record is refused unless `--hash` says what to do.
    pub fn of(
        choice: Option<HashChoice>,
        principal: Option<&Recentfile>,
        beacon_hash: Option<&str>,
    ) -> Result<Setting> {
        match choice {
            Some(HashChoice::Sha256) => return Ok(Setting::Sha256),
            Some(HashChoice::None) => return Ok(Setting::Off { stop: true }),
            None => {}
        }
        match principal.and_then(|rf| rf.meta.hash.as_deref()) {
            Some(SHA256) => Ok(Setting::Sha256),
            Some(other) => bail!(
                "the principal's meta says Hash: {other:?}, which this rrr cannot record: give --hash sha256 \
                 or --hash none"
            ),
            None if beacon_hash == Some(SHA256) => Ok(Setting::Sha256),
            None => Ok(Setting::Off { stop: false }),
        }
    }

    /// Whether new files get hashed.
    pub fn hashes(self) -> bool {
        self == Setting::Sha256
    }

    /// Put the setting into the principal's meta (about to be written).
    pub fn apply(self, principal: &mut Recentfile) {
        match self {
            Setting::Sha256 => principal.meta.hash = Some(SHA256.to_string()),
            Setting::Off { stop: true } => principal.meta.hash = None,
            Setting::Off { stop: false } => {}
        }
    }
}

/// What identifies one version of a file's bytes: any write changes the
/// mtime or ctime (and usually the size), a replacement the inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// What hashing one file gave.
#[derive(Debug)]
pub(crate) enum Hashed {
    /// The file's digest, read while its stamp stayed this one.
    Digest(FileDigest, Stamp),
    /// A symlink, a directory or other non-file, or gone: no hash.
    NotAFile,
    /// It changed during every read.
    Unstable,
    /// It could not be read (the message says why).
    Unreadable(String),
}

/// The stamp of `path` (not followed), `None` when it is no regular file.
fn stamp_of(path: &Path) -> io::Result<Option<Stamp>> {
    let m = std::fs::symlink_metadata(path)?;
    Ok(m.file_type().is_file().then(|| Stamp::of(&m)))
}

/// Hash `path` while its stamp holds still (see the module docs).
pub(crate) fn hash_stable(path: &Path, buf: &mut [u8]) -> Hashed {
    for _ in 0..ATTEMPTS {
        let before = match stamp_of(path) {
            Ok(Some(s)) => s,
            Ok(None) => return Hashed::NotAFile,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Hashed::NotAFile,
            Err(e) => return Hashed::Unreadable(e.to_string()),
        };
        let digest = match read_digest(path, buf) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Hashed::NotAFile,
            Err(e) => return Hashed::Unreadable(e.to_string()),
        };
        match stamp_of(path) {
            Ok(Some(after)) if after == before && digest.size == before.size => return Hashed::Digest(digest, before),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Hashed::NotAFile,
            Err(e) => return Hashed::Unreadable(e.to_string()),
        }
    }
    Hashed::Unstable
}

/// Size and sha256 of the bytes of `path`, streamed through `buf`.
fn read_digest(path: &Path, buf: &mut [u8]) -> io::Result<FileDigest> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Hasher::default();
    loop {
        match f.read(buf) {
            Ok(0) => return Ok(h.finish()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Hash `paths` (relative to `root`) on one thread per core, each taking
/// the next file from a shared counter; results in the order of `paths`.
pub(crate) fn hash_many(root: &Path, paths: &[&RelPath]) -> Vec<Hashed> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if paths.is_empty() {
        return Vec::new();
    }
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(paths.len());
    let parts: Vec<Vec<(usize, Hashed)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    let mut buf = vec![0u8; 1 << 18];
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = paths.get(i) else { break };
                        mine.push((i, hash_stable(&root.join(OsStr::from_bytes(p.as_bytes())), &mut buf)));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let mut out: Vec<Option<Hashed>> = (0..paths.len()).map(|_| None).collect();
    for (i, h) in parts.into_iter().flatten() {
        out[i] = Some(h);
    }
    out.into_iter().map(|h| h.unwrap_or(Hashed::Unstable)).collect()
}

/// The digest to record for a hashed file, or `None` with a warning
/// naming it (its event is recorded all the same, unhashed).
pub(crate) fn digest_or_warn(path: &RelPath, hashed: Hashed) -> Option<(FileDigest, Stamp)> {
    let shown = crate::recentfile::shown_path(path.as_bytes());
    match hashed {
        Hashed::Digest(d, s) => Some((d, s)),
        Hashed::NotAFile => None,
        Hashed::Unstable => {
            tracing::warn!(
                "{shown}: changed during each of {ATTEMPTS} reads; recorded without size and sha256 (record it \
                 again once it is complete; under watch, its next change is)"
            );
            None
        }
        Hashed::Unreadable(why) => {
            tracing::warn!("cannot hash {shown}: {why}; recorded without size and sha256");
            None
        }
    }
}

/// Whether `change` is one this writer hashes: a `new` event without a
/// digest yet.
fn wants_hash(change: &Change) -> bool {
    change.kind == EventKind::New && change.digest.is_none()
}

/// The stamps the digests of a batch were taken at, by path ([`prehash`]).
#[derive(Debug, Default)]
pub(crate) struct Prehashed {
    stamps: HashMap<RelPath, Stamp>,
}

/// Before the lock: hash every `new` change of the batch that has no
/// digest, and note the stamp each digest belongs to.
pub(crate) fn prehash(root: &Path, changes: &mut [Change]) -> Prehashed {
    let todo: Vec<usize> = (0..changes.len()).filter(|&i| wants_hash(&changes[i])).collect();
    let paths: Vec<&RelPath> = todo.iter().map(|&i| &changes[i].path).collect();
    let hashed = hash_many(root, &paths);
    let mut pre = Prehashed::default();
    for (&i, h) in todo.iter().zip(hashed) {
        if let Some((d, s)) = digest_or_warn(&changes[i].path, h) {
            changes[i].digest = Some(d);
            pre.stamps.insert(changes[i].path.clone(), s);
        }
    }
    pre
}

/// Under the lock: every digest [`prehash`] took must still describe its
/// file (same stamp); a file that changed is hashed again now, and one
/// not hashed yet (the collection started hashing meanwhile) is hashed.
pub(crate) fn confirm(root: &Path, changes: &mut [Change], pre: &Prehashed) {
    let mut again: Vec<usize> = Vec::new();
    for (i, c) in changes.iter_mut().enumerate() {
        if c.kind != EventKind::New {
            continue;
        }
        let Some(then) = pre.stamps.get(&c.path) else {
            if c.digest.is_none() {
                again.push(i);
            }
            continue;
        };
        let full = root.join(OsStr::from_bytes(c.path.as_bytes()));
        if !matches!(stamp_of(&full), Ok(Some(now)) if now == *then) {
            c.digest = None;
            again.push(i);
        }
    }
    let paths: Vec<&RelPath> = again.iter().map(|&i| &changes[i].path).collect();
    let hashed = hash_many(root, &paths);
    for (&i, h) in again.iter().zip(hashed) {
        changes[i].digest = digest_or_warn(&changes[i].path, h).map(|(d, _)| d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rf_with(hash: Option<&str>) -> Recentfile {
        let mut rf = Recentfile::default();
        rf.meta.hash = hash.map(str::to_string);
        rf
    }

    #[test]
    fn the_flag_then_the_meta_then_the_beacon_decide() {
        let on = rf_with(Some("sha256"));
        let off = rf_with(None);
        assert_eq!(
            Setting::of(Some(HashChoice::None), Some(&on), Some("sha256")).unwrap(),
            Setting::Off { stop: true }
        );
        assert_eq!(Setting::of(Some(HashChoice::Sha256), Some(&off), None).unwrap(), Setting::Sha256);
        assert_eq!(Setting::of(None, Some(&on), None).unwrap(), Setting::Sha256);
        assert_eq!(Setting::of(None, Some(&off), None).unwrap(), Setting::Off { stop: false });
        assert_eq!(Setting::of(None, None, None).unwrap(), Setting::Off { stop: false });
        // A Perl writer dropped the key; the beacon remembers.
        assert_eq!(Setting::of(None, Some(&off), Some("sha256")).unwrap(), Setting::Sha256);
        let other = rf_with(Some("blake3"));
        assert!(Setting::of(None, Some(&other), None).unwrap_err().to_string().contains("--hash none"));
        assert_eq!(Setting::of(Some(HashChoice::None), Some(&other), None).unwrap(), Setting::Off { stop: true });
    }

    fn change(path: &str) -> Change {
        Change { path: path.into(), kind: EventKind::New, epoch: None, digest: None }
    }

    /// A file rewritten between the hash taken before the lock
    /// and the check under it is hashed again: the recorded digest is of
    /// the bytes it holds when the event is recorded.
    #[test]
    fn confirm_hashes_again_a_file_that_changed_after_prehash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "before\n").unwrap();
        std::fs::write(dir.path().join("g"), "stays\n").unwrap();
        let mut changes = vec![change("f"), change("g"), change("late")];
        let pre = prehash(dir.path(), &mut changes);
        assert_eq!(changes[0].digest, Some(FileDigest::of(b"before\n")));
        assert_eq!(changes[2].digest, None, "not there yet");
        std::fs::write(dir.path().join("f"), "after!!\n").unwrap();
        std::fs::write(dir.path().join("late"), "now\n").unwrap();
        confirm(dir.path(), &mut changes, &pre);
        assert_eq!(changes[0].digest, Some(FileDigest::of(b"after!!\n")));
        assert_eq!(changes[1].digest, Some(FileDigest::of(b"stays\n")));
        assert_eq!(changes[2].digest, Some(FileDigest::of(b"now\n")));
    }

    /// A file whose bytes do not match its size while read (a /proc file
    /// says 0 bytes and reads more) is never given a digest.
    #[test]
    fn bytes_that_do_not_hold_still_get_no_digest() {
        let mut buf = vec![0u8; 4096];
        assert!(matches!(hash_stable(Path::new("/proc/self/stat"), &mut buf), Hashed::Unstable));
        assert!(matches!(hash_stable(Path::new("/nonexistent/x"), &mut buf), Hashed::NotAFile));
        assert!(matches!(hash_stable(Path::new("/"), &mut buf), Hashed::NotAFile));
    }

    #[test]
    fn apply_sets_keeps_or_removes_the_key() {
        let mut rf = rf_with(None);
        Setting::Sha256.apply(&mut rf);
        assert_eq!(rf.meta.hash.as_deref(), Some("sha256"));
        Setting::Off { stop: false }.apply(&mut rf);
        assert_eq!(rf.meta.hash.as_deref(), Some("sha256"));
        Setting::Off { stop: true }.apply(&mut rf);
        assert_eq!(rf.meta.hash, None);
    }
}
