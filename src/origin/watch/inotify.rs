//! The inotify backend of `rrr watch` (the one [`Backend`] today): one
//! inotify instance, asked for [`MASK`] on each directory (one non-recursive watch per
//! directory, so that every failure is seen), a thread that drains the
//! kernel queue into a channel as fast as events come (the kernel's queue
//! is short: 16384 events by default, a few seconds of a burst), and the
//! map from watch descriptors to directories. The reader thread turns
//! each kernel event into a backend-neutral [`Notice`] ([`classify`]).
//!
//! The channel holds at most [`READS_QUEUED`] reads: a daemon that falls
//! behind lets the kernel queue fill and overflow (a rescan) rather than
//! hold a storm's events in memory without limit.
//!
//! Directories are relative to the root, "" being the root itself. An
//! event names its directory by watch descriptor. A directory renamed
//! within the tree keeps its watches, which the caller renames with it
//! ([`Backend::rename_under`]); one that left the tree has its watches
//! removed, and events still queued for a removed descriptor are dropped.

use super::backend::{AddError, Backend, Notice, Read, WatchId};
use super::rules::{keys_under, Happening};
use crate::recentfile::RelPath;
use ::inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use nix::errno::Errno;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

/// The reads waiting in the channel at most: each is up to 64 KiB of
/// events (some 1000), so the backlog held beside the kernel's queue stays
/// within a few tens of MB.
pub const READS_QUEUED: usize = 128;

/// What the daemon asks inotify for on every directory: creations, data
/// writes, closes after writing, moves, deletes, and the directory's own
/// move or deletion. Not `IN_OPEN`, `IN_ACCESS`, `IN_CLOSE_NOWRITE` (every
/// read of the tree would wake the daemon) nor `IN_ATTRIB` (ignored).
/// Symlinks are not followed, only directories are watched, and a file
/// unlinked while open reports nothing more.
pub const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::MODIFY)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::ONLYDIR)
    .union(WatchMask::EXCL_UNLINK);

/// Classify an inotify event mask. `None`: nothing the index cares about.
pub fn classify(mask: EventMask) -> Option<Happening> {
    let dir = mask.contains(EventMask::ISDIR);
    let table = [
        (EventMask::Q_OVERFLOW, Happening::Overflow),
        (EventMask::IGNORED, Happening::WatchGone),
        (EventMask::UNMOUNT, Happening::Unmounted),
        (EventMask::CREATE, Happening::Created { dir }),
        (EventMask::CLOSE_WRITE, Happening::ClosedWrite),
        (EventMask::MODIFY, Happening::Modified),
        (EventMask::MOVED_TO, Happening::MovedIn { dir }),
        (EventMask::MOVED_FROM, Happening::MovedOut { dir }),
        (EventMask::MOVE_SELF, Happening::MovedSelf),
        (EventMask::DELETE, Happening::Deleted { dir }),
        (EventMask::DELETE_SELF, Happening::DeletedSelf),
    ];
    table.into_iter().find(|(bit, _)| mask.contains(*bit)).map(|(_, h)| h)
}

/// The message for ENOSPC when adding a watch: the inotify watch limit
/// (`limit`, unknown if `None`) and what this tree needs.
pub fn watch_limit_message(dir: &str, limit: Option<u64>, needed: usize) -> String {
    let limit = limit.map_or_else(|| "unknown".to_string(), |l| l.to_string());
    let suggest = (needed as u64 * 2).max(needed as u64 + 8192);
    format!(
        "cannot watch {dir:?}: the inotify watch limit is reached (fs.inotify.max_user_watches = {limit}); \
         this tree needs {needed} watches (one per directory), plus those of other programs of this user: \
         raise it, e.g. `sysctl fs.inotify.max_user_watches={suggest}` (and in /etc/sysctl.d/ to keep it)"
    )
}

/// The inotify instance, its reader thread's channel, and which directory
/// each watch descriptor names.
pub struct InotifyWatcher {
    root: PathBuf,
    watches: Watches,
    rx: Receiver<Read>,
    by_wd: HashMap<i32, (WatchDescriptor, RelPath)>,
    by_dir: BTreeMap<RelPath, i32>,
}

impl InotifyWatcher {
    /// Start the inotify instance and its reader thread.
    pub fn start(root: &Path) -> io::Result<InotifyWatcher> {
        let mut inotify = Inotify::init()?;
        let watches = inotify.watches();
        let (tx, rx) = sync_channel(READS_QUEUED);
        std::thread::Builder::new().name("inotify".into()).spawn(move || {
            // Room for hundreds of events per read.
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let read = match inotify.read_events_blocking(&mut buf) {
                    Ok(events) => Ok(events
                        .map(|e| Notice {
                            watch: e.wd.get_watch_descriptor_id(),
                            what: classify(e.mask),
                            cookie: e.cookie,
                            name: e.name.map(|n| n.as_bytes().to_vec()),
                        })
                        .collect()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let failed = read.is_err();
                if tx.send(read).is_err() || failed {
                    return;
                }
            }
        })?;
        Ok(InotifyWatcher { root: root.to_path_buf(), watches, rx, by_wd: HashMap::new(), by_dir: BTreeMap::new() })
    }
}

impl Backend for InotifyWatcher {
    fn limit_message(&self, dir: &str, needed: usize) -> String {
        watch_limit_message(dir, crate::sys::proc::inotify_max_user_watches(), needed)
    }

    /// Watch directory `rel` (again: the same inode gives the same
    /// descriptor, which then names `rel`).
    fn add(&mut self, rel: &RelPath) -> Result<(), AddError> {
        // Whatever the length of root/rel (a relative path may be 4096 bytes).
        let added = crate::sys::tree::reach(&self.root, rel).and_then(|r| self.watches.add(r.path(), MASK));
        match added {
            Ok(wd) => {
                let id = wd.get_watch_descriptor_id();
                if let Some((_, old)) = self.by_wd.insert(id, (wd, rel.clone())) {
                    if old != *rel && self.by_dir.get(&old) == Some(&id) {
                        self.by_dir.remove(&old);
                    }
                }
                if let Some(prev) = self.by_dir.insert(rel.clone(), id) {
                    if prev != id {
                        self.by_wd.remove(&prev);
                    }
                }
                Ok(())
            }
            Err(e) => Err(match e.raw_os_error().map(Errno::from_raw) {
                Some(Errno::ENOSPC) => AddError::Limit,
                Some(Errno::ENOENT | Errno::ENOTDIR) => AddError::Gone,
                _ => AddError::Other(e),
            }),
        }
    }

    /// Stop watching `rel` and every directory below it.
    fn remove_under(&mut self, rel: &RelPath) {
        for d in keys_under(&self.by_dir, rel) {
            self.remove(&d);
        }
    }

    /// A watched directory and everything below it moved from `from` to
    /// `to` within the tree: its watches (which follow the inode) now name
    /// the new places, so events inside it carry its new path.
    fn rename_under(&mut self, from: &RelPath, to: &RelPath) {
        let moved: Vec<(RelPath, i32)> = keys_under(&self.by_dir, from)
            .into_iter()
            .filter_map(|d| self.by_dir.remove(&d).map(|id| (d, id)))
            .collect();
        for (old, id) in moved {
            let new = RelPath::from([to.as_bytes(), &old.as_bytes()[from.len()..]].concat());
            if let Some((_, dir)) = self.by_wd.get_mut(&id) {
                *dir = new.clone();
            }
            self.by_dir.insert(new, id);
        }
    }

    /// Stop watching `rel` (not below it).
    fn remove(&mut self, rel: &RelPath) {
        if let Some(id) = self.by_dir.remove(rel) {
            if let Some((wd, _)) = self.by_wd.remove(&id) {
                // It may be gone already (deleted): nothing to undo then.
                let _ = self.watches.remove(wd);
            }
        }
    }

    /// The kernel dropped watch `wd` (its directory was deleted, or it was
    /// removed).
    fn forget(&mut self, wd: WatchId) {
        if let Some((_, dir)) = self.by_wd.remove(&wd) {
            if self.by_dir.get(&dir) == Some(&wd) {
                self.by_dir.remove(&dir);
            }
        }
    }

    /// The directory that `wd` watches.
    fn dir_of(&self, wd: WatchId) -> Option<&RelPath> {
        self.by_wd.get(&wd).map(|(_, d)| d)
    }

    fn is_watched(&self, rel: &RelPath) -> bool {
        self.by_dir.contains_key(rel)
    }

    /// The watched directories.
    fn dirs(&self) -> Box<dyn Iterator<Item = &RelPath> + '_> {
        Box::new(self.by_dir.keys())
    }

    fn count(&self) -> usize {
        self.by_dir.len()
    }

    /// The next read, waiting at most `timeout`. `None`: nothing came.
    fn recv_timeout(&self, timeout: Duration) -> Option<Read> {
        match self.rx.recv_timeout(timeout) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Err(io::Error::other("the inotify reader stopped"))),
        }
    }

    /// The next read if one is waiting.
    fn try_recv(&self) -> Option<Read> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(io::Error::other("the inotify reader stopped"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_masks() {
        use EventMask as M;
        let table = [
            (M::CREATE, Some(Happening::Created { dir: false })),
            (M::CREATE | M::ISDIR, Some(Happening::Created { dir: true })),
            (M::CLOSE_WRITE, Some(Happening::ClosedWrite)),
            (M::MODIFY, Some(Happening::Modified)),
            (M::MOVED_TO, Some(Happening::MovedIn { dir: false })),
            (M::MOVED_TO | M::ISDIR, Some(Happening::MovedIn { dir: true })),
            (M::MOVED_FROM, Some(Happening::MovedOut { dir: false })),
            (M::MOVED_FROM | M::ISDIR, Some(Happening::MovedOut { dir: true })),
            (M::MOVE_SELF, Some(Happening::MovedSelf)),
            (M::DELETE, Some(Happening::Deleted { dir: false })),
            (M::DELETE | M::ISDIR, Some(Happening::Deleted { dir: true })),
            (M::DELETE_SELF, Some(Happening::DeletedSelf)),
            (M::Q_OVERFLOW, Some(Happening::Overflow)),
            (M::IGNORED, Some(Happening::WatchGone)),
            (M::UNMOUNT, Some(Happening::Unmounted)),
            // Not asked for, and meaningless to the index if they came.
            (M::OPEN, None),
            (M::ACCESS, None),
            (M::CLOSE_NOWRITE, None),
            (M::ATTRIB, None),
        ];
        for (mask, want) in table {
            assert_eq!(classify(mask), want, "{mask:?}");
        }
    }

    #[test]
    fn mask_leaves_out_reads() {
        for bit in [WatchMask::OPEN, WatchMask::ACCESS, WatchMask::CLOSE_NOWRITE, WatchMask::ATTRIB] {
            assert!(!MASK.intersects(bit), "{bit:?}");
        }
        for bit in [WatchMask::CREATE, WatchMask::MODIFY, WatchMask::CLOSE_WRITE, WatchMask::MOVE, WatchMask::DELETE] {
            assert!(MASK.contains(bit), "{bit:?}");
        }
    }

    #[test]
    fn limit_message_names_the_sysctl() {
        let m = watch_limit_message("a/b", Some(8192), 12000);
        assert!(m.contains("fs.inotify.max_user_watches = 8192"), "{m}");
        assert!(m.contains("needs 12000 watches"), "{m}");
        assert!(m.contains("max_user_watches=24000"), "{m}");
    }
}
