//! `rrr watch`: the origin daemon. It drives the inotify watcher
//! ([`crate::origin::watcher`]), the directory scans, the heartbeat file and the
//! writes; what an event means and when a batch is recorded is decided by
//! the pure core in [`crate::origin::watch_rules`].
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

use crate::clock::Clock;
use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::ops::fsck::{compare_with, Finding, Index};
use crate::ops::update::record;
use crate::ops::{Ctx, Exit};
use crate::origin::watch_rules::{
    aggregate_at, classify, is_under, join, watch_limit_message, Batch, Happening, Heartbeat, OnDisk, Pace,
};
use crate::origin::watcher::{AddError, RawEvent, Watcher};
use crate::origin::Writer;
use crate::recentfile::{check_relative_path, EventKind};
use crate::tree::IgnoreSet;
use crate::update::Change;
use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use std::cell::Cell;
use std::collections::{HashSet, VecDeque};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Options {
    pub principal: PathBuf,
    /// Flush when this many changes are pending.
    pub batch_size: usize,
    /// Flush when the oldest pending change waited this long.
    pub batch_delay: Duration,
    /// Run the cascade this often.
    pub aggregate_every: Duration,
    pub excludes: Vec<String>,
    pub keep_deletes: bool,
    /// Rewrite this node-exporter textfile at every heartbeat.
    pub prometheus: Option<PathBuf>,
}

/// The heartbeat (marker) period while events flow, and when idle.
const HEARTBEAT_ACTIVE: Duration = Duration::from_secs(2);
const HEARTBEAT_IDLE: Duration = Duration::from_secs(30);
/// How often the loop looks at the signal flag when nothing happens.
const SIGNAL_POLL: Duration = Duration::from_millis(200);

/// File times come from the kernel's coarse clock, a tick behind the
/// precise one; a lower bound for mtimes is taken this much earlier.
const CLOCK_SLACK: f64 = 0.05;

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

fn wall() -> f64 {
    Clock::system().now_f64()
}

/// The log: one line per batch (and per start, rescan, aggregate, stop,
/// warning, error) through the common channel ([`crate::log`]: text or
/// JSON Lines with a `kind` field, in the `watch` span naming the root),
/// and the counts the `--prometheus` textfile reports.
#[derive(Default)]
struct Log {
    batches: Cell<u64>,
    news: Cell<u64>,
    deletes: Cell<u64>,
    rescans: Cell<u64>,
    warnings: Cell<u64>,
    errors: Cell<u64>,
    last_batch: Cell<Option<f64>>,
    last_aggregate: Cell<Option<f64>>,
}

impl Log {
    fn emit(&self, kind: &str, fields: Value, plain: impl FnOnce() -> String) {
        let add = |c: &Cell<u64>, key: &str| c.set(c.get() + fields[key].as_u64().unwrap_or(0));
        match kind {
            "batch" => {
                self.batches.set(self.batches.get() + 1);
                self.last_batch.set(Some(wall()));
            }
            "rescan" => self.rescans.set(self.rescans.get() + 1),
            "aggregate" => self.last_aggregate.set(Some(wall())),
            _ => {}
        }
        if matches!(kind, "batch" | "rescan" | "start") {
            add(&self.news, "new");
            add(&self.deletes, "delete");
        }
        crate::log::emit(tracing::Level::INFO, kind, &fields, &plain());
    }

    fn warn(&self, message: String) {
        self.warnings.set(self.warnings.get() + 1);
        tracing::warn!("{message}");
    }

    fn error(&self, message: String) {
        self.errors.set(self.errors.get() + 1);
        tracing::error!("{message}");
    }
}

/// The watch daemon's node-exporter textfile: instants as Unix times,
/// counters since the daemon started, the root as label.
fn prometheus(root: &str, log: &Log, hb: &Heartbeat, watches: usize, pending: usize) -> String {
    use crate::status::prometheus_metric as metric;
    let l = format!("root=\"{}\"", root.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"));
    let one = |v: f64| vec![(l.clone(), v)];
    let ts = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    let mut out = String::new();
    let gauges = [
        ("rrr_watch_started_timestamp_seconds", "Unix time the daemon started.", ts(&hb.started)),
        ("rrr_watch_heartbeat_timestamp_seconds", "Unix time of the daemon's last heartbeat.", ts(&hb.heartbeat)),
        (
            "rrr_watch_synced_to_timestamp_seconds",
            "Every change before this Unix time is in the index.",
            ts(&hb.synced_to),
        ),
        (
            "rrr_watch_last_batch_timestamp_seconds",
            "Unix time of the last recorded batch (0: none yet).",
            log.last_batch.get().unwrap_or(0.0),
        ),
        (
            "rrr_watch_last_aggregate_timestamp_seconds",
            "Unix time of the last aggregate that merged (0: none yet).",
            log.last_aggregate.get().unwrap_or(0.0),
        ),
        ("rrr_watch_watches", "Directories watched.", watches as f64),
        ("rrr_watch_pending_changes", "Changes waiting for the next batch.", pending as f64),
    ];
    for (name, help, v) in gauges {
        metric(&mut out, name, "gauge", help, &one(v));
    }
    metric(&mut out, "rrr_watch_batches_total", "counter", "Batches recorded.", &one(log.batches.get() as f64));
    let changes = vec![
        (format!("{l},type=\"new\""), log.news.get() as f64),
        (format!("{l},type=\"delete\""), log.deletes.get() as f64),
    ];
    metric(&mut out, "rrr_watch_changes_total", "counter", "Changes recorded (batches, rescans, start-up).", &changes);
    metric(&mut out, "rrr_watch_rescans_total", "counter", "Rescans of the tree.", &one(log.rescans.get() as f64));
    let problems = vec![
        (format!("{l},level=\"warning\""), log.warnings.get() as f64),
        (format!("{l},level=\"error\""), log.errors.get() as f64),
    ];
    metric(&mut out, "rrr_watch_problems_total", "counter", "Warnings and errors logged.", &problems);
    out
}

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

fn parse_heartbeat(path: &Path) -> Option<Result<Heartbeat, String>> {
    let text = fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| e.to_string()))
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
    let _run_lock = crate::origin::watch_lock(&root).context("another watch runs on this tree")?;
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
    fn abs(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// Directories of the tree (not ignored), for the limit message.
    fn count_dirs(&self) -> usize {
        walkdir::WalkDir::new(&self.root)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| {
                let rel = e.path().strip_prefix(&self.root).ok().and_then(Path::to_str).unwrap_or("");
                rel.is_empty() || !self.ignore.is_ignored(rel)
            })
            .filter(|e| e.as_ref().is_ok_and(|e| e.file_type().is_dir()))
            .count()
            + 1
    }

    fn limit_message(&self, rel: &str) -> String {
        let limit =
            fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").ok().and_then(|s| s.trim().parse().ok());
        watch_limit_message(rel, limit, self.count_dirs())
    }

    /// A watch could not be added: at start the limit is fatal; later the
    /// daemon rescans periodically until every directory is watched.
    fn watch_failed(&mut self, rel: &str, e: AddError, fatal_limit: bool) -> Result<()> {
        match e {
            AddError::Gone => {}
            AddError::Limit if fatal_limit => bail!("{}", self.limit_message(rel)),
            AddError::Limit => {
                if !self.limit_reported {
                    let msg = self.limit_message(rel);
                    self.log
                        .error(format!("{msg}; rescanning the tree every {:?} meanwhile", self.opts.aggregate_every));
                    self.limit_reported = true;
                }
                self.degraded = true;
            }
            AddError::Other(e) => {
                self.log.error(format!("cannot watch {rel:?}: {e}"));
                self.degraded = true;
            }
        }
        Ok(())
    }

    /// Watch `rel` and every directory below it (those not watched yet),
    /// listing each after its watch exists, and record the files found as
    /// new (a directory made or moved in).
    fn watch_tree(&mut self, rel: &str) -> Result<()> {
        let mut stack = vec![rel.to_string()];
        let now = Instant::now();
        while let Some(dir) = stack.pop() {
            if !self.watcher.is_watched(&dir) {
                if let Err(e) = self.watcher.add(&dir) {
                    self.watch_failed(&dir, e, false)?;
                }
            }
            let rd = match fs::read_dir(self.abs(&dir)) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    self.log.error(format!("cannot list {dir:?}: {e}"));
                    continue;
                }
            };
            for ent in rd.flatten() {
                let Some(name) = ent.file_name().to_str().map(str::to_string) else {
                    self.log.warn(format!("cannot index {}: path is not UTF-8", ent.path().display()));
                    continue;
                };
                let child = join(&dir, &name);
                if self.ignore.is_ignored(&child) {
                    continue;
                }
                match ent.file_type() {
                    Ok(ft) if ft.is_dir() => stack.push(child),
                    Ok(_) => match check_relative_path(&child) {
                        Ok(()) => self.batch.record(&child, EventKind::New, now),
                        Err(why) => self.log.warn(format!("cannot index {child:?}: {why}")),
                    },
                    Err(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Compare the tree with the index and record the differences (files
    /// modified at or after `since` included), watching every directory of
    /// the tree on the way (each before it is listed) and dropping the
    /// watches of directories no longer there. Returns (new, delete).
    fn reconcile(&mut self, since: Option<i64>, fatal_limit: bool) -> Result<(usize, usize)> {
        let mut seen: HashSet<String> = HashSet::new();
        let mut failed: Vec<(String, AddError)> = Vec::new();
        let watcher = &mut self.watcher;
        let report = compare_with(&self.coll, &self.ignore, since, |dir| {
            if !watcher.is_watched(dir) {
                if let Err(e) = watcher.add(dir) {
                    failed.push((dir.to_string(), e));
                }
            }
            seen.insert(dir.to_string());
        })?;
        for (dir, e) in failed {
            self.watch_failed(&dir, e, fatal_limit)?;
        }
        let stale: Vec<String> =
            self.watcher.dirs().filter(|d| !seen.contains(*d) && *d != ".rrr").map(String::from).collect();
        for d in stale {
            self.watcher.remove(&d);
        }
        if let Some(Finding::Unreadable { file, error }) =
            report.findings.iter().find(|f| matches!(f, Finding::Unreadable { .. }))
        {
            bail!("cannot compare the tree with the index: recentfile {file} is unreadable: {error}");
        }
        for f in &report.findings {
            if let Finding::Unindexable { path, reason } = f {
                self.log.warn(format!("cannot index {path:?}: {reason}"));
            }
        }
        let changes: Vec<Change> = report.findings.iter().filter_map(Finding::change).collect();
        let news = changes.iter().filter(|c| c.kind == EventKind::New).count();
        drop(report);
        if !changes.is_empty() {
            record(&self.coll, &changes, self.w)?;
        }
        release_memory();
        Ok((news, changes.len() - news))
    }

    fn start(&mut self, previous: Option<Heartbeat>) -> Result<()> {
        let t0 = Instant::now();
        fs::create_dir_all(self.root.join(".rrr")).context("cannot create .rrr/")?;
        if let Err(e) = self.watcher.add(".rrr") {
            self.watch_failed(".rrr", e, true)?;
        }
        let since = previous
            .as_ref()
            .and_then(|hb| Epoch::parse(&hb.synced_to).ok())
            .map(|e| e.to_f64())
            .unwrap_or(self.started);
        let since = (since - CLOCK_SLACK).floor() as i64;
        let (news, deletes) = self.reconcile(Some(since), true)?;
        let root = self.root.display().to_string();
        let watches = self.watcher.count();
        let ms = t0.elapsed().as_millis();
        let heartbeat = previous.map(|h| h.synced_to);
        self.log.emit(
            "start",
            json!({ "root": root, "pid": std::process::id(), "watches": watches, "since": heartbeat,
                    "new": news, "delete": deletes, "ms": ms as u64 }),
            || {
                format!(
                    "watching {root} ({watches} directories); recorded {news} new and {deletes} deleted \
                     files changed while not watching{} in {ms} ms",
                    heartbeat.as_ref().map(|h| format!(" (since {h})")).unwrap_or_default()
                )
            },
        );
        self.heartbeat();
        self.aggregate();
        Ok(())
    }

    fn main_loop(&mut self) -> Result<()> {
        loop {
            if let Some(sig) = crate::signals::received() {
                return self.shutdown(if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" });
            }
            if crate::log::closed() {
                // Nobody reads the log any more: record what is pending,
                // then exit 1 so that a supervisor restarts the daemon.
                self.shutdown("log closed")?;
                return Err(crate::ops::LogClosed.into());
            }
            let now = Instant::now();
            let mut wake = now + SIGNAL_POLL;
            let deadline = if self.flush_allowed() { self.batch.deadline(&self.pace) } else { self.retry_at };
            for t in [deadline, Some(self.aggregate_at()), Some(self.next_heartbeat())].into_iter().flatten() {
                wake = wake.min(t);
            }
            if let Some(read) = self.watcher.recv_timeout(wake.saturating_duration_since(now)) {
                self.on_events(read)?;
                // While a backlog is read, only the delay flushes: each record
                // rewrites the whole principal, so a daemon that fell behind
                // catches up with fewer, larger batches.
                while let Some(read) = self.watcher.try_recv() {
                    self.on_events(read)?;
                    if self.flush_allowed() && self.batch.overdue(Instant::now(), &self.pace) {
                        self.flush();
                    }
                    if crate::signals::stop_requested() {
                        break;
                    }
                }
            }
            // The channel is drained here.
            if let Some(why) = self.rescan.take() {
                self.rescan(&why)?;
            }
            let now = Instant::now();
            if self.flush_allowed() && self.batch.due(now, &self.pace) {
                self.flush();
            }
            if now >= self.aggregate_at() {
                if self.degraded {
                    self.rescan("some directories are not watched")?;
                }
                self.aggregate();
            }
            if now >= self.next_heartbeat() {
                self.heartbeat();
            }
        }
    }

    fn flush_allowed(&self) -> bool {
        self.retry_at.is_none_or(|t| Instant::now() >= t)
    }

    fn next_heartbeat(&self) -> Instant {
        self.last_heartbeat + if self.active { HEARTBEAT_ACTIVE } else { HEARTBEAT_IDLE }
    }

    fn aggregate_at(&self) -> Instant {
        let window = Duration::from_secs(self.coll.principal().seconds());
        aggregate_at(self.last_aggregate, self.opts.aggregate_every, window, self.batch.last_change(), &self.pace)
    }

    fn on_events(&mut self, read: crate::origin::watcher::Read) -> Result<()> {
        let events = read.context("cannot read inotify events")?;
        for ev in events {
            self.on_event(ev)?;
        }
        Ok(())
    }

    fn on_event(&mut self, ev: RawEvent) -> Result<()> {
        self.batch.events += 1;
        let Some(h) = classify(ev.mask) else { return Ok(()) };
        match h {
            Happening::Overflow => {
                self.rescan.get_or_insert_with(|| "kernel queue overflow".into());
                return Ok(());
            }
            Happening::Unmounted => {
                self.rescan.get_or_insert_with(|| "a filesystem under the tree was unmounted".into());
                return Ok(());
            }
            Happening::WatchGone => {
                self.watcher.forget(ev.wd);
                return Ok(());
            }
            _ => {}
        }
        // Events still queued for a watch removed since are dropped.
        let Some(dir) = self.watcher.dir_of(ev.wd) else { return Ok(()) };
        let Some(name) = &ev.name else {
            // The watched directory itself: only the root's fate matters.
            if dir.is_empty() && matches!(h, Happening::MovedSelf | Happening::DeletedSelf) {
                bail!("the root {} was moved or deleted", self.root.display());
            }
            return Ok(());
        };
        let rel = match name.to_str() {
            Some(n) => join(dir, n),
            None => {
                if matches!(h, Happening::ClosedWrite | Happening::MovedIn { .. }) {
                    let p = self.abs(dir).join(name);
                    self.log.warn(format!("cannot index {}: path is not UTF-8", p.display()));
                }
                return Ok(());
            }
        };
        if is_under(&rel, ".rrr") {
            if rel == ".rrr/watch.json" && h == (Happening::MovedIn { dir: false }) {
                self.on_marker();
            } else if rel == ".rrr" && matches!(h, Happening::MovedOut { .. } | Happening::Deleted { .. }) {
                self.watcher.remove(".rrr");
            }
            return Ok(());
        }
        if self.ignore.is_ignored(&rel) {
            return Ok(());
        }
        self.active = true;
        let now = Instant::now();
        match h {
            Happening::Created { dir: true } | Happening::MovedIn { dir: true } => self.watch_tree(&rel)?,
            Happening::MovedOut { dir: true } => {
                self.watcher.remove_under(&rel);
                self.batch.forget_dir(&rel, now);
            }
            // Its subdirectories were deleted first, each with its own event.
            Happening::Deleted { dir: true } => self.watcher.remove(&rel),
            _ => self.file_event(h, &rel, now),
        }
        Ok(())
    }

    fn file_event(&mut self, h: Happening, rel: &str, now: Instant) {
        if let Err(why) = check_relative_path(rel) {
            if matches!(h, Happening::ClosedWrite | Happening::MovedIn { .. }) {
                self.log.warn(format!("cannot index {rel:?}: {why}"));
            }
            return;
        }
        self.batch.on_file(h, rel, self.last_marker, now);
    }

    fn on_marker(&mut self) {
        let t = self.markers.pop_front().unwrap_or(self.last_marker);
        self.last_marker = t;
        if self.batch.pending() == 0 {
            self.advance_synced();
        }
    }

    fn advance_synced(&mut self) {
        let t = self.batch.writing_floor().map_or(self.last_marker, |f| f.min(self.last_marker));
        self.synced_to = t;
    }

    /// Write the heartbeat (also a marker).
    fn heartbeat(&mut self) {
        self.last_heartbeat = Instant::now();
        self.active = false;
        let dir = self.root.join(".rrr");
        if !self.watcher.is_watched(".rrr") {
            let _ = fs::create_dir_all(&dir);
            let _ = self.watcher.add(".rrr");
        }
        let now = wall();
        let hb = Heartbeat {
            pid: std::process::id(),
            started: Epoch::from_clock(self.started).into_string(),
            heartbeat: Epoch::from_clock(now).into_string(),
            synced_to: Epoch::from_clock(self.synced_to).into_string(),
        };
        let text = serde_json::to_string(&hb).unwrap_or_default() + "\n";
        let tmp = dir.join("watch.json.new");
        let res = (|| -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, dir.join("watch.json"))
        })();
        match res {
            Ok(()) => {
                if self.markers.len() < 1000 {
                    self.markers.push_back(now);
                }
                if let Some(file) = &self.opts.prometheus {
                    let root = self.root.display().to_string();
                    let text = prometheus(&root, &self.log, &hb, self.watcher.count(), self.batch.pending());
                    if let Err(e) = crate::store::write_atomic(file, text.as_bytes(), None) {
                        self.log.warn(format!("cannot write the Prometheus textfile {}: {e}", file.display()));
                    }
                }
            }
            Err(e) => self.log.error(format!("cannot write heartbeat {}: {e}", dir.join("watch.json").display())),
        }
    }

    fn aggregate(&mut self) {
        self.last_aggregate = Instant::now();
        match crate::ops::aggregate::aggregate(&self.coll, false, self.opts.keep_deletes, self.w) {
            Ok(r) if r.merges > 0 => {
                let written = r.written.join(" ");
                self.log.emit("aggregate", json!({ "written": r.written, "merges": r.merges }), || {
                    format!("{} merges, wrote {written}", r.merges)
                });
            }
            Ok(_) => {}
            Err(e) => self.log.error(format!("aggregate failed: {e:#}")),
        }
        release_memory();
    }

    /// The live indexed paths under each directory.
    fn indexed_under(&self, dirs: &[String]) -> Result<Vec<Vec<String>>> {
        let mut findings = Vec::new();
        let index = Index::read(&self.coll, &mut findings);
        if let Some(Finding::Unreadable { file, error }) =
            findings.iter().find(|f| matches!(f, Finding::Unreadable { .. }))
        {
            bail!("cannot read recentfile {file}: {error}");
        }
        Ok(dirs.iter().map(|d| index.live_under(d)).collect())
    }

    /// What the disk shows of a created file that saw no write.
    fn look(&self, rel: &str) -> OnDisk {
        use std::os::unix::fs::MetadataExt;
        match fs::symlink_metadata(self.abs(rel)) {
            Err(_) => OnDisk::Gone,
            Ok(m) => {
                let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
                OnDisk::of(
                    m.is_dir(),
                    m.is_file(),
                    m.nlink(),
                    ns(m.mtime(), m.mtime_nsec()),
                    ns(m.ctime(), m.ctime_nsec()),
                )
            }
        }
    }

    /// Record the pending batch (one update, one lock). On failure the
    /// batch is kept and retried.
    fn flush(&mut self) {
        let t0 = Instant::now();
        let f = self.batch.take(t0);
        if f.is_empty() {
            self.batch.events += f.events;
            if self.batch.pending() == 0 {
                self.advance_synced();
            }
            return;
        }
        let under = if f.forgotten.is_empty() { Ok(Vec::new()) } else { self.indexed_under(&f.forgotten) };
        let res = under.and_then(|under| {
            let r = f.resolve(|p| self.look(p), &under, t0, self.pace.fresh_wait);
            if !r.changes.is_empty() {
                record(&self.coll, &r.changes, self.w)?;
            }
            Ok(r)
        });
        match res {
            Ok(r) => {
                self.retry_at = None;
                self.batch.keep_fresh(&r, &self.pace);
                if self.batch.pending() == 0 {
                    self.advance_synced();
                }
                if r.changes.is_empty() {
                    // Only files kept back: nothing to say yet.
                    self.batch.events += f.events;
                    return;
                }
                let changes = &r.changes;
                let news = changes.iter().filter(|c| c.kind == EventKind::New).count();
                let deletes = changes.len() - news;
                let latency = f.since.map_or(0, |s| s.elapsed().as_millis() as u64);
                let took = t0.elapsed();
                let record_ms = took.as_millis() as u64;
                let events = f.events;
                self.log.emit(
                    "batch",
                    json!({ "events": events, "changes": changes.len(), "new": news, "delete": deletes,
                            "latency_ms": latency, "record_ms": record_ms }),
                    || {
                        format!(
                            "{events} events, {} changes ({news} new, {deletes} delete), latency {latency} ms \
                             (record {record_ms} ms)",
                            changes.len()
                        )
                    },
                );
                self.batch.recorded(Instant::now(), took);
                release_memory();
            }
            Err(e) => {
                self.log.error(format!("cannot record a batch of events (retrying): {e:#}"));
                self.batch.restore(f);
                self.retry_at = Some(Instant::now() + self.opts.batch_delay.max(Duration::from_secs(5)));
            }
        }
    }

    /// Events were lost (or a watch is missing): watch every directory and
    /// compare the tree with the index.
    fn rescan(&mut self, why: &str) -> Result<()> {
        let t0 = Instant::now();
        let since = (self.last_marker - CLOCK_SLACK).floor() as i64;
        self.flush();
        self.degraded = false;
        self.batch.clear_in_flight();
        let (news, deletes) = match self.reconcile(Some(since), false) {
            Ok(x) => x,
            Err(e) => {
                self.log.error(format!("rescan failed (retrying): {e:#}"));
                self.degraded = true;
                return Ok(());
            }
        };
        let ms = t0.elapsed().as_millis() as u64;
        let watches = self.watcher.count();
        self.log.emit(
            "rescan",
            json!({ "reason": why, "watches": watches, "new": news, "delete": deletes, "ms": ms }),
            || {
                format!(
                    "{why}: recorded {news} new and {deletes} deleted files ({watches} directories watched) in {ms} ms"
                )
            },
        );
        Ok(())
    }

    /// Flush everything received up to now (a marker proves it) and stop.
    fn shutdown(&mut self, name: &str) -> Result<()> {
        self.heartbeat();
        let until = Instant::now() + Duration::from_secs(3);
        while !self.markers.is_empty() && Instant::now() < until {
            if let Some(read) = self.watcher.recv_timeout(Duration::from_millis(50)) {
                self.on_events(read)?;
            }
        }
        while let Some(read) = self.watcher.try_recv() {
            self.on_events(read)?;
        }
        if let Some(why) = self.rescan.take() {
            self.rescan(&why)?;
        }
        self.retry_at = None;
        self.flush();
        let left = self.batch.pending();
        self.heartbeat();
        self.log.emit("stop", json!({ "signal": name, "unrecorded": left }), || {
            format!("{name}: stopped ({left} changes could not be recorded)")
        });
        if left > 0 {
            bail!("{left} changes could not be recorded before stopping");
        }
        Ok(())
    }
}
