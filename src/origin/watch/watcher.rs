//! The inotify watcher of `rrr watch`: one inotify instance, asked for
//! [`super::rules::MASK`] on each directory (one non-recursive watch per
//! directory, so that every failure is seen), a thread that drains the
//! kernel queue into a channel as fast as events come (the kernel's queue
//! is short: 16384 events by default, a few seconds of a burst), and the
//! map from watch descriptors to directories.
//!
//! The channel holds at most [`READS_QUEUED`] reads: a daemon that falls
//! behind lets the kernel queue fill and overflow (a rescan) rather than
//! hold a storm's events in memory without limit.
//!
//! Directories are relative to the root, "" being the root itself. An
//! event names its directory by watch descriptor. A directory renamed
//! within the tree keeps its watches, which the caller renames with it
//! ([`Watcher::rename_under`]); one that left the tree has its watches
//! removed, and events still queued for a removed descriptor are dropped.

use super::rules::{keys_under, MASK};
use crate::recentfile::RelPath;
use inotify::{EventMask, Inotify, WatchDescriptor, Watches};
use nix::errno::Errno;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

/// The reads waiting in the channel at most: each is up to 64 KiB of
/// events (some 1000), so the backlog held beside the kernel's queue stays
/// within a few tens of MB.
pub const READS_QUEUED: usize = 128;

/// One event as read from the kernel.
#[derive(Clone, Debug)]
pub struct RawEvent {
    pub wd: i32,
    pub mask: EventMask,
    /// Pairs the two halves of a rename (`IN_MOVED_FROM`, `IN_MOVED_TO`); 0 otherwise.
    pub cookie: u32,
    /// The entry's name in the watched directory; `None` for an event on
    /// the directory itself (and for a queue overflow).
    pub name: Option<OsString>,
}

/// What the reader thread passes on: the events of one read, or why
/// reading stopped.
pub type Read = io::Result<Vec<RawEvent>>;

/// Why a watch could not be added.
#[derive(Debug)]
pub enum AddError {
    /// ENOSPC: `fs.inotify.max_user_watches` is reached.
    Limit,
    /// The directory is gone (or no longer a directory).
    Gone,
    Other(io::Error),
}

pub struct Watcher {
    root: PathBuf,
    watches: Watches,
    rx: Receiver<Read>,
    by_wd: HashMap<i32, (WatchDescriptor, RelPath)>,
    by_dir: BTreeMap<RelPath, i32>,
}

impl Watcher {
    /// Start the inotify instance and its reader thread.
    pub fn start(root: &Path) -> io::Result<Watcher> {
        let mut inotify = Inotify::init()?;
        let watches = inotify.watches();
        let (tx, rx) = sync_channel(READS_QUEUED);
        std::thread::Builder::new().name("inotify".into()).spawn(move || {
            // Room for hundreds of events per read.
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let read = match inotify.read_events_blocking(&mut buf) {
                    Ok(events) => Ok(events
                        .map(|e| RawEvent {
                            wd: e.wd.get_watch_descriptor_id(),
                            mask: e.mask,
                            cookie: e.cookie,
                            name: e.name.map(|n| n.to_os_string()),
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
        Ok(Watcher { root: root.to_path_buf(), watches, rx, by_wd: HashMap::new(), by_dir: BTreeMap::new() })
    }

    /// Watch directory `rel` (again: the same inode gives the same
    /// descriptor, which then names `rel`).
    pub fn add(&mut self, rel: &RelPath) -> Result<(), AddError> {
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
    pub fn remove_under(&mut self, rel: &RelPath) {
        for d in keys_under(&self.by_dir, rel) {
            self.remove(&d);
        }
    }

    /// A watched directory and everything below it moved from `from` to
    /// `to` within the tree: its watches (which follow the inode) now name
    /// the new places, so events inside it carry its new path.
    pub fn rename_under(&mut self, from: &RelPath, to: &RelPath) {
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
    pub fn remove(&mut self, rel: &RelPath) {
        if let Some(id) = self.by_dir.remove(rel) {
            if let Some((wd, _)) = self.by_wd.remove(&id) {
                // It may be gone already (deleted): nothing to undo then.
                let _ = self.watches.remove(wd);
            }
        }
    }

    /// The kernel dropped watch `wd` (its directory was deleted, or it was
    /// removed).
    pub fn forget(&mut self, wd: i32) {
        if let Some((_, dir)) = self.by_wd.remove(&wd) {
            if self.by_dir.get(&dir) == Some(&wd) {
                self.by_dir.remove(&dir);
            }
        }
    }

    /// The directory that `wd` watches.
    pub fn dir_of(&self, wd: i32) -> Option<&RelPath> {
        self.by_wd.get(&wd).map(|(_, d)| d)
    }

    pub fn is_watched(&self, rel: &RelPath) -> bool {
        self.by_dir.contains_key(rel)
    }

    /// The watched directories.
    pub fn dirs(&self) -> impl Iterator<Item = &RelPath> {
        self.by_dir.keys()
    }

    pub fn count(&self) -> usize {
        self.by_dir.len()
    }

    /// The next read, waiting at most `timeout`. `None`: nothing came.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Read> {
        match self.rx.recv_timeout(timeout) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Err(io::Error::other("the inotify reader stopped"))),
        }
    }

    /// The next read if one is waiting.
    pub fn try_recv(&self) -> Option<Read> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(io::Error::other("the inotify reader stopped"))),
        }
    }
}
