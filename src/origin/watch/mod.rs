//! `rrr watch`: the origin daemon. It drives a watcher backend
//! (`origin::watch::backend`: the seam; `origin::watch::inotify`: the one
//! backend, where a fanotify one would sit beside it as `fanotify.rs`),
//! the directory scans, the heartbeat file and the
//! writes; what an event means and when a batch is recorded is decided by
//! the pure core in `origin::watch::rules`.
//!
//! Nothing is lost:
//! - a directory is watched first, then listed, so a file created before
//!   the watch existed is found by the listing and one created after by
//!   the watch;
//! - on a kernel queue overflow the tree is rescanned: missing watches are
//!   added and the tree is compared with the index (`fsck` logic), files
//!   modified since the last marker included;
//! - at start-up the same comparison runs against the last heartbeat. It
//!   adds the watches during its walk of the tree, while a second thread
//!   reads the index one file at a time.
//!
//! Markers. The heartbeat is written atomically into `.rrr/watch.json`,
//! which is watched. The kernel queue is FIFO, so when the rename's event
//! arrives, every change made before the write has been received. Once
//! those are recorded, the write time becomes `synced_to`: the time before
//! which every change is in the index (the next start-up looks at files
//! modified at or after it; an overflow rescan at files modified at or
//! after the last marker received).
//!
//! The files: this one holds the daemon's settings, its state and
//! `serve` (the command's setup, lock and hook included, is
//! `ops::watch`); `daemon` the main loop, the batches and the shutdown;
//! `events` what a backend's notice does (watches added and removed, files
//! recorded); `catchup` the comparison of the tree with the index at
//! start-up and after lost events; `heartbeat` the marker file
//! `.rrr/watch.json` and the Prometheus textfile; `watch_log` the daemon's
//! log lines and counters; `markers` the markers and `synced_to`;
//! `moves` the pairing of a directory's move
//! out with its move in; `backend` the watcher seam, `inotify` its one
//! backend and `scripted` (tests only) the backend whose notices a test
//! writes.

pub(crate) mod backend;
mod catchup;
mod daemon;
mod events;
mod heartbeat;
pub(crate) mod inotify;
mod markers;
mod moves;
pub(crate) mod rules;
#[cfg(test)]
mod scripted;
mod watch_log;

use self::heartbeat::parse_heartbeat;
use self::watch_log::Log;
use crate::collection::Collection;
use crate::hook::{Background, Recorded};
use crate::origin::watch::backend::Backend;
use crate::origin::watch::inotify::InotifyWatcher;
use crate::origin::watch::markers::Markers;
use crate::origin::watch::moves::PendingMoves;
use crate::origin::watch::rules::{Batch, Pace};
use crate::origin::Writer;
use crate::sys::clock::Clock;
use crate::tree::IgnoreSet;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use crate::origin::watch::rules::MAX_BATCH_ENTRIES;

/// What the daemon is asked to do with the tree it is handed
/// (`ops::watch` converts the command's options into these).
pub(crate) struct Settings {
    /// Flush when this many changes are pending.
    pub batch_size: usize,
    /// Flush when the oldest pending change waited this long.
    pub batch_delay: Duration,
    /// Run the cascade this often.
    pub aggregate_every: Duration,
    /// Keep delete events in Z when aggregating.
    pub keep_deletes: bool,
    /// Rewrite this node-exporter textfile at every heartbeat.
    pub prometheus: Option<PathBuf>,
    /// The most paths a batch holds before it is traded for a rescan
    /// ([`MAX_BATCH_ENTRIES`] by default).
    pub max_batch_entries: usize,
    /// The master trace and timestamp file, rewritten with the beacon
    /// (`heartbeat`); in the ignore set.
    pub traces: crate::monitor::trace_write::OriginFiles,
    /// `--metrics-listen`: the text `/metrics` serves, replaced at each
    /// heartbeat (the textfile's metrics and rrrgo's names).
    pub metrics: Option<std::sync::Arc<std::sync::Mutex<String>>>,
}

/// The tree as the command's setup (`ops::watch::run`) hands it to the
/// daemon: the collection opened, the root resolved and locked for this
/// daemon, the `--on-batch` hook's thread started.
pub(crate) struct Tree {
    pub coll: Collection,
    /// What is never recorded (rrr's own files, `--exclude`).
    pub ignore: IgnoreSet,
    /// The root as an absolute path.
    pub root: PathBuf,
    /// The `--on-batch` hook's thread.
    pub on_batch: Option<Background>,
}

/// Give the heap that a comparison or a batch used back to the system:
/// the daemon reads the whole index for a comparison and the principal for
/// each batch, then idles for hours; glibc would otherwise keep the peak.
fn release_memory() {
    crate::sys::memory::release_free_heap();
}

/// The wall clock now, as a Unix time.
fn wall() -> f64 {
    Clock::system().now_f64()
}

/// The daemon's state, shared by the files of this module (each adds the
/// methods of its part).
struct Daemon<'a> {
    /// The clock of the pace, the batches and the heartbeats.
    ticks: Ticks,
    opts: &'a Settings,
    w: &'a Writer,
    coll: Collection,
    ignore: IgnoreSet,
    /// The root as an absolute path.
    root: PathBuf,
    /// Where changes are learned (`backend`).
    watcher: Box<dyn Backend>,
    pace: Pace,
    batch: Batch,
    log: Log,
    started: f64,
    /// The heartbeats' markers and `synced_to`.
    markers: Markers,
    last_heartbeat: Instant,
    active: bool,
    rescan: Option<String>,
    /// The `--on-batch` hook's thread.
    on_batch: Option<Background>,
    /// Some directory could not be watched (limit): rescan periodically.
    degraded: bool,
    limit_reported: bool,
    last_aggregate: Instant,
    retry_at: Option<Instant>,
    /// The principal as this daemon last wrote or checked it: another
    /// identity means another writer replaced it (`check_acknowledged`).
    principal_seen: Option<crate::origin::journal::FileId>,
    last_journal_check: Instant,
    /// Directories moved out, waiting for the other half of their rename.
    moves: PendingMoves,
    /// The index as last read, kept between the flushes of a storm.
    index_cache: Option<CachedIndex>,
}

/// The daemon's monotonic clock: the system's, or in tests one that the
/// test moves (`scripted`), so that waits are tested without sleeping.
/// (Durations only reported, and the wall clock of the markers, are the
/// system's.)
#[derive(Clone, Debug)]
enum Ticks {
    System,
    #[cfg(test)]
    Manual(std::rc::Rc<std::cell::Cell<Instant>>),
}

impl Ticks {
    fn now(&self) -> Instant {
        match self {
            Ticks::System => Instant::now(),
            #[cfg(test)]
            Ticks::Manual(t) => t.get(),
        }
    }
}

/// The index, and the identity of each recentfile it was read from (the
/// principal's as this daemon's last record left it).
struct CachedIndex {
    index: crate::origin::index_check::Index,
    ids: Vec<Option<crate::origin::journal::FileId>>,
}

/// Run the daemon on `tree` until SIGTERM/SIGINT (the caller holds the
/// tree's watch lock and has installed the signal handlers).
pub(crate) fn serve(opts: &Settings, w: &Writer, tree: Tree) -> Result<()> {
    let log = Log::default();
    let previous = match parse_heartbeat(&tree.root.join(".rrr/watch.json")) {
        None => None,
        Some(Ok(hb)) => Some(hb),
        Some(Err(e)) => {
            log.warn(format!("ignoring unreadable heartbeat .rrr/watch.json: {e}"));
            None
        }
    };
    let started = wall();
    let watcher = Box::new(InotifyWatcher::start(&tree.root).context("cannot start the inotify watcher")?);
    let mut d = Daemon::new(opts, w, tree, watcher, log, started);
    d.start(previous)?;
    crate::sys::notify::notify("READY=1");
    d.main_loop()
}

impl<'a> Daemon<'a> {
    /// The daemon on `tree`, learning of changes from `watcher` (started
    /// at the wall time `started`), not started yet ([`Daemon::start`],
    /// then [`Daemon::main_loop`]).
    fn new(
        opts: &'a Settings,
        w: &'a Writer,
        tree: Tree,
        watcher: Box<dyn Backend>,
        log: Log,
        started: f64,
    ) -> Daemon<'a> {
        let Tree { coll, ignore, root, on_batch } = tree;
        let ticks = Ticks::System;
        let now = ticks.now();
        Daemon {
            ticks,
            opts,
            w,
            coll,
            ignore,
            root,
            watcher,
            pace: Pace::new(opts.batch_size, opts.batch_delay),
            batch: Batch::default(),
            log,
            started,
            markers: Markers::new(started),
            last_heartbeat: now,
            active: false,
            rescan: None,
            on_batch,
            degraded: false,
            limit_reported: false,
            last_aggregate: now,
            retry_at: None,
            principal_seen: None,
            last_journal_check: now,
            moves: PendingMoves::default(),
            index_cache: None,
        }
    }
}

impl Daemon<'_> {
    /// Now, by the daemon's monotonic clock ([`Ticks`]).
    fn now(&self) -> Instant {
        self.ticks.now()
    }

    /// Ask for an `--on-batch` run: `new` and `delete` changes were recorded.
    fn recorded(&self, new: usize, delete: usize) {
        if let (Some(hook), true) = (&self.on_batch, new + delete > 0) {
            hook.trigger(Recorded { batches: 1, new: new as u64, delete: delete as u64 });
        }
    }
}
