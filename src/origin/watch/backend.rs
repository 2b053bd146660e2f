//! The watcher seam: what the daemon asks of whatever tells it about
//! changes in the tree (today inotify, `origin::watch::inotify`), and the
//! backend-neutral notices it gets back.
//!
//! A backend watches directories named relative to the root ("" is the
//! root itself), each under a [`WatchId`] of its choosing, and delivers
//! [`Notice`]s: a [`Happening`] (created, deleted, moved out and in, with
//! the cookie that pairs the two halves of a rename, closed after a write,
//! the queue overflowed, …), the watch it came from and the entry's name
//! as bytes. What a notice means for the index is decided by the pure
//! rules (`origin::watch::rules`); the daemon (`events`) turns the watch
//! and the name into a path of the tree.
//!
//! Another backend goes in a file of its own beside `inotify.rs`,
//! implementing [`Backend`]: a fanotify one (whole-filesystem marks, no
//! watch per directory) would be `origin/watch/fanotify.rs`, delivering
//! every notice under one watch (the root, "") with the entry's whole
//! relative path as its name, and taking [`Backend::add`] for a directory
//! as already covered. The daemon picks the backend in `serve`
//! (`origin/watch/mod.rs`).

use super::rules::Happening;
use crate::recentfile::RelPath;
use std::io;
use std::time::Duration;

/// A backend's name for one of its watches (inotify: the watch descriptor).
pub type WatchId = i32;

/// One thing a backend saw, in the order it saw them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The watch it came from (meaningless for [`Happening::Overflow`]).
    pub watch: WatchId,
    /// What happened; `None`: something the index does not care about
    /// (counted as an event, nothing more).
    pub what: Option<Happening>,
    /// Pairs the two halves of a rename ([`Happening::MovedOut`],
    /// [`Happening::MovedIn`]); 0 otherwise.
    pub cookie: u32,
    /// The entry's name in the watched directory, as bytes; `None` for a
    /// notice about the directory itself (and for a queue overflow).
    pub name: Option<Vec<u8>>,
}

/// What a backend passes on: the notices of one read, or why reading
/// stopped.
pub type Read = io::Result<Vec<Notice>>;

/// Why a watch could not be added.
#[derive(Debug)]
pub enum AddError {
    /// The backend's limit is reached (inotify: `fs.inotify.max_user_watches`).
    Limit,
    /// The directory is gone (or no longer a directory).
    Gone,
    Other(io::Error),
}

/// What the daemon asks of a watcher backend. Every method but the two
/// reads is bookkeeping of which directory each watch names.
pub trait Backend: Send {
    /// Watch directory `rel` (again: a backend may hand out the same
    /// watch, which then names `rel`).
    fn add(&mut self, rel: &RelPath) -> Result<(), AddError>;
    /// Stop watching `rel` (not below it).
    fn remove(&mut self, rel: &RelPath);
    /// Stop watching `rel` and every directory below it.
    fn remove_under(&mut self, rel: &RelPath);
    /// A watched directory and everything below it moved from `from` to
    /// `to` within the tree: its watches now name the new places.
    fn rename_under(&mut self, from: &RelPath, to: &RelPath);
    /// The backend dropped `watch` (its directory was deleted):
    /// [`Happening::WatchGone`].
    fn forget(&mut self, watch: WatchId);
    /// The directory that `watch` watches; `None` for one removed since.
    fn dir_of(&self, watch: WatchId) -> Option<&RelPath>;
    fn is_watched(&self, rel: &RelPath) -> bool;
    /// The watched directories.
    fn dirs(&self) -> Box<dyn Iterator<Item = &RelPath> + '_>;
    /// How many directories are watched.
    fn count(&self) -> usize;
    /// Why [`AddError::Limit`] came and how to lift it, for the operator:
    /// `dir` could not be watched, the tree needs `needed` watches.
    fn limit_message(&self, dir: &str, needed: usize) -> String;
    /// The next read, waiting at most `timeout`. `None`: nothing came.
    fn recv_timeout(&self, timeout: Duration) -> Option<Read>;
    /// The next read if one is waiting.
    fn try_recv(&self) -> Option<Read>;
}
