//! `rrr watch`: the origin daemon. It drives the inotify watcher
//! (`origin::watcher`), the directory scans, the heartbeat file and the
//! writes; what an event means and when a batch is recorded is decided by
//! the pure core in `origin::watch_rules`.
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
mod log;

use self::heartbeat::parse_heartbeat;
use self::log::Log;
use crate::clock::Clock;
use crate::collection::Collection;
use crate::ops::{Ctx, Exit};
use crate::origin::watch_rules::{Batch, Pace};
use crate::origin::watcher::Watcher;
use crate::origin::Writer;
use crate::tree::IgnoreSet;
use anyhow::{ensure, Context, Result};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
}

/// Give the heap that a comparison or a batch used back to the system:
/// the daemon reads the whole index for a comparison and the principal for
/// each batch, then idles for hours; glibc would otherwise keep the peak.
fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
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
    /// Some directory could not be watched (limit): rescan periodically.
    degraded: bool,
    limit_reported: bool,
    last_aggregate: Instant,
    retry_at: Option<Instant>,
}

/// Run the daemon until SIGTERM/SIGINT.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    ensure!(opts.batch_size > 0, "--batch-size must be at least 1");
    let w = &ctx.writer;
    let coll = Collection::open(&opts.principal)?;
    let ignore = IgnoreSet::new(&coll.filenameroot, &opts.excludes);
    let root = std::path::absolute(&coll.root).with_context(|| format!("cannot resolve {}", coll.root.display()))?;
    let log = Log::default();
    let span = tracing::info_span!("watch", root = %root.display());
    let _in = span.enter();
    let _run_lock = crate::origin::watch_lock(&root, "another watch runs on this tree")?;
    crate::signals::install();
    let previous = match parse_heartbeat(&root.join(".rrr/watch.json")) {
        None => None,
        Some(Ok(hb)) => Some(hb),
        Some(Err(e)) => {
            log.warn(format!("ignoring unreadable heartbeat .rrr/watch.json: {e}"));
            None
        }
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
        degraded: false,
        limit_reported: false,
        last_aggregate: now,
        retry_at: None,
    };
    d.start(previous)?;
    crate::notify::notify("READY=1");
    d.main_loop()?;
    Ok(Exit::Ok)
}

impl Daemon<'_> {
    /// The absolute path of `rel` ("" is the root).
    fn abs(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }
}
