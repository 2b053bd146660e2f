//! `rrr watch`: the origin daemon. It drives the inotify watcher
//! (`origin::watch::watcher`), the directory scans, the heartbeat file and the
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
//! The files: this one holds the options, the daemon's state and [`run`];
//! `daemon` the main loop, the batches and the shutdown; `events` what
//! an inotify event does (watches added and removed, files recorded);
//! `catchup` the comparison of the tree with the index at start-up and
//! after lost events; `heartbeat` the marker file `.rrr/watch.json` and
//! the Prometheus textfile; `log` the daemon's log lines and counters.

mod catchup;
mod daemon;
mod events;
mod heartbeat;
pub(crate) mod rules;
mod watch_log;
pub(crate) mod watcher;

use self::heartbeat::parse_heartbeat;
use self::watch_log::Log;
use crate::collection::Collection;
use crate::hook::{Background, Recorded};
use crate::ops::{Ctx, Exit};
use crate::origin::watch::rules::{Batch, Pace};
use crate::origin::watch::watcher::Watcher;
use crate::origin::Writer;
use crate::recentfile::RelPath;
use crate::sys::clock::Clock;
use crate::sys::tree::IgnoreSet;
use anyhow::{ensure, Context, Result};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::origin::watch::rules::MAX_BATCH_ENTRIES;

/// What `rrr watch` is asked to do (its command line, converted).
pub struct Options {
    /// The principal (RECENT.recent, the principal recentfile, or the root).
    pub principal: PathBuf,
    /// Flush when this many changes are pending.
    pub batch_size: usize,
    /// Flush when the oldest pending change waited this long.
    pub batch_delay: Duration,
    /// Run the cascade this often.
    pub aggregate_every: Duration,
    /// `--exclude` patterns (rsync's rules): paths never recorded.
    pub excludes: Vec<String>,
    /// Keep delete events in Z when aggregating.
    pub keep_deletes: bool,
    /// Rewrite this node-exporter textfile at every heartbeat.
    pub prometheus: Option<PathBuf>,
    /// Run this through `/bin/sh -c` after recorded batches, beside the
    /// daemon (`hook::Background`).
    pub on_batch: Option<String>,
    /// How long an `--on-batch` run may take before it is killed.
    pub on_batch_timeout: Duration,
    /// The most paths a batch holds before it is traded for a rescan
    /// ([`MAX_BATCH_ENTRIES`] by default).
    pub max_batch_entries: usize,
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
    opts: &'a Options,
    w: &'a Writer,
    coll: Collection,
    ignore: IgnoreSet,
    /// The root as an absolute path.
    root: PathBuf,
    watcher: Watcher,
    pace: Pace,
    batch: Batch,
    log: Log,
    started: f64,
    /// Write times of heartbeats whose event has not arrived yet.
    markers: VecDeque<f64>,
    /// Write time of the newest marker received.
    last_marker: f64,
    synced_to: f64,
    last_heartbeat: Instant,
    active: bool,
    rescan: Option<String>,
    /// A batch was discarded: the pending rescan looks at files modified
    /// since this time, and synced-to stays below it until then.
    rescan_floor: Option<f64>,
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
    /// Directories moved out, by the cookie of the rename, waiting for
    /// the other half to tell a rename within the tree.
    pending_out: std::collections::HashMap<u32, RelPath>,
    /// The index as last read, kept between the flushes of a storm.
    index_cache: Option<CachedIndex>,
}

/// The index, and the identity of each recentfile it was read from (the
/// principal's as this daemon's last record left it).
struct CachedIndex {
    index: crate::origin::index_check::Index,
    ids: Vec<Option<crate::origin::journal::FileId>>,
}

/// Run the daemon until SIGTERM/SIGINT.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    ensure!(opts.batch_size > 0, "--batch-size must be at least 1");
    let w = &ctx.writer;
    let coll = Collection::open(&opts.principal)?;
    crate::origin::beacon::check_start(&coll, w)?;
    let ignore = IgnoreSet::new(&coll.filenameroot, &opts.excludes).with_clock(&w.clock);
    let root = std::path::absolute(&coll.root).with_context(|| format!("cannot resolve {}", coll.root.display()))?;
    let log = Log::default();
    let span = tracing::info_span!("watch", root = %root.display());
    let _in = span.enter();
    let _run_lock = crate::origin::watch_lock(&root, "another watch runs on this tree")?;
    crate::sys::signals::install();
    let previous = match parse_heartbeat(&root.join(".rrr/watch.json")) {
        None => None,
        Some(Ok(hb)) => Some(hb),
        Some(Err(e)) => {
            log.warn(format!("ignoring unreadable heartbeat .rrr/watch.json: {e}"));
            None
        }
    };
    let hook = match &opts.on_batch {
        None => None,
        Some(cmd) => Some(on_batch(cmd, opts.on_batch_timeout, &root.join(coll.file_name(coll.principal())), &root)?),
    };
    let started = wall();
    let watcher = Watcher::start(&root).context("cannot start the inotify watcher")?;
    let now = Instant::now();
    let mut d = Daemon {
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
        markers: VecDeque::new(),
        last_marker: started,
        synced_to: started,
        last_heartbeat: now,
        active: false,
        rescan: None,
        rescan_floor: None,
        on_batch: hook,
        degraded: false,
        limit_reported: false,
        last_aggregate: now,
        retry_at: None,
        principal_seen: None,
        last_journal_check: now,
        pending_out: std::collections::HashMap::new(),
        index_cache: None,
    };
    d.start(previous)?;
    crate::sys::notify::notify("READY=1");
    d.main_loop()?;
    Ok(Exit::Ok)
}

/// The `--on-batch` hook's thread. Its variables: `RRR_ROOT`,
/// `RRR_PRINCIPAL` (the principal recentfile), `RRR_BATCHES` (how many
/// records this run stands for: more than 1 when they came while the last
/// run went on), `RRR_BATCH_SIZE` (their changes), `RRR_NEW`,
/// `RRR_DELETE`, and `RRR_NEWEST_EPOCH` (the principal's newest event
/// when the run starts: a mirror that has it has everything recorded so
/// far; empty if it cannot be read).
fn on_batch(cmd: &str, timeout: Duration, principal: &Path, root: &Path) -> Result<Background> {
    let (principal, root) = (principal.to_path_buf(), root.to_path_buf());
    let env = move |r: Recorded| {
        let newest = crate::store::read_file(&principal)
            .ok()
            .flatten()
            .and_then(|rf| rf.events.first().map(|e| e.epoch.to_string()))
            .unwrap_or_default();
        [
            ("RRR_ROOT", root.display().to_string()),
            ("RRR_PRINCIPAL", principal.display().to_string()),
            ("RRR_BATCHES", r.batches.to_string()),
            ("RRR_BATCH_SIZE", (r.new + r.delete).to_string()),
            ("RRR_NEW", r.new.to_string()),
            ("RRR_DELETE", r.delete.to_string()),
            ("RRR_NEWEST_EPOCH", newest),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    Background::start("on-batch", cmd.to_string(), timeout, env).context("cannot start the --on-batch thread")
}

impl Daemon<'_> {
    /// Ask for an `--on-batch` run: `new` and `delete` changes were recorded.
    fn recorded(&self, new: usize, delete: usize) {
        if let (Some(hook), true) = (&self.on_batch, new + delete > 0) {
            hook.trigger(Recorded { batches: 1, new: new as u64, delete: delete as u64 });
        }
    }
}
