//! The daemon's loop: wait for events, a batch deadline, the cascade or
//! the heartbeat, whichever comes first; record the pending batch (one
//! update under one lock, kept and retried on failure); run the cascade;
//! and on a signal or a closed log, record what was received and stop.

use super::{release_memory, Daemon};
use crate::origin::index_check::{Finding, Index};
use crate::origin::journal;
use crate::origin::record::{record, restore_acknowledged, Recorded};
use crate::origin::watch::rules::{aggregate_at, OnDisk};
use crate::recentfile::{shown_path, EventKind, RelPath};
use anyhow::{bail, Result};
use serde_json::json;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the loop looks at the signal flag when nothing happens.
const SIGNAL_POLL: Duration = Duration::from_millis(200);

/// The longest a daemon busy with a backlog of events stays silent.
const BUSY_LOG: Duration = Duration::from_secs(5);

impl Daemon<'_> {
    pub(super) fn main_loop(&mut self) -> Result<()> {
        loop {
            if let Some(sig) = crate::sys::signals::received() {
                return self.shutdown(sig.as_str());
            }
            if crate::output::log::closed() {
                // Nobody reads the log any more: record what is pending,
                // then exit 1 so that a supervisor restarts the daemon.
                self.shutdown("log closed")?;
                return Err(crate::exit::LogClosed.into());
            }
            let now = self.now();
            let mut wake = now + SIGNAL_POLL;
            let deadline = if self.flush_allowed() { self.batch.deadline(&self.pace) } else { self.retry_at };
            let journal_at = self.last_journal_check + crate::origin::journal::CHECK_EVERY;
            for t in [deadline, Some(self.aggregate_at()), Some(self.next_heartbeat()), Some(journal_at)]
                .into_iter()
                .flatten()
            {
                wake = wake.min(t);
            }
            let read = self.watcher.recv_timeout(wake.saturating_duration_since(now));
            if read.is_none() {
                // Nothing more came: a move out still unpaired left the tree.
                self.settle_moves_out();
            }
            if let Some(read) = read {
                self.on_read(read)?;
                // While a backlog is read, only the delay flushes: each record
                // rewrites the whole principal, so a daemon that fell behind
                // catches up with fewer, larger batches.
                let backlog = self.now();
                while let Some(read) = self.watcher.try_recv() {
                    self.on_read(read)?;
                    let now = self.now();
                    if now >= backlog + BUSY_LOG && self.log.silent_for() >= BUSY_LOG {
                        let (events, pending, watches) =
                            (self.batch.events, self.batch.pending(), self.watcher.count());
                        self.log.emit("busy", json!({ "events": events, "pending": pending, "watches": watches }), || {
                            format!("reading a backlog: {events} events since the last batch, {pending} changes pending")
                        });
                    }
                    if self.flush_allowed() && self.batch.overdue(now, &self.pace) {
                        self.flush();
                    }
                    if now >= self.next_heartbeat() {
                        self.heartbeat();
                    }
                    if crate::sys::signals::stop_requested() {
                        break;
                    }
                }
            }
            // The channel is drained here.
            if let Some(why) = self.rescan.take() {
                self.rescan(&why)?;
            }
            let now = self.now();
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
            if now >= self.last_journal_check + crate::origin::journal::CHECK_EVERY {
                self.check_acknowledged();
            }
        }
    }

    /// Whether an acknowledged event went missing from the principal (a
    /// writer renamed an older copy over it, docs/decisions.md#locks):
    /// looked at only when the principal is no longer the file this daemon
    /// last wrote or checked; what is missing is recorded again.
    pub(super) fn check_acknowledged(&mut self) {
        self.last_journal_check = self.now();
        let path = self.coll.path_of(self.coll.principal());
        let id = journal::file_id(&path);
        if id.is_some() && id == self.principal_seen {
            return;
        }
        match restore_acknowledged(&self.coll, self.w) {
            Ok(None) => self.principal_seen = id,
            Ok(Some(r)) => self.noted(r, &[]),
            Err(e) => self.log.error(format!("cannot check the acknowledged events: {e:#}")),
        }
    }

    /// After a record: remember the principal it left, and say what it
    /// recorded again and whether its journal could not be written.
    pub(super) fn noted(&mut self, r: Recorded, changes: &[crate::update::Change]) {
        self.principal_seen = r.principal;
        // The kept index follows this record when the principal it found
        // was the one the index was read from; otherwise it is read again.
        match &mut self.index_cache {
            Some(c) if r.before.is_some() && c.ids.first() == Some(&r.before) => {
                let secs = crate::sys::clock::Clock::system().now_f64() as i64;
                c.index.apply(&r.rerecorded, secs);
                c.index.apply(changes, secs);
                c.ids[0] = r.principal;
            }
            _ => self.index_cache = None,
        }
        if !r.rerecorded.is_empty() {
            // The next heartbeat (and textfile) comes soon.
            self.active = true;
            let n = r.rerecorded.len();
            let paths: Vec<serde_json::Value> = r.rerecorded.iter().take(10).map(|c| c.path.to_json()).collect();
            let shown: Vec<String> = r.rerecorded.iter().take(10).map(|c| c.path.to_string()).collect();
            self.log.emit("rerecorded", json!({ "count": n, "paths": paths }), || {
                format!(
                    "{n} acknowledged events had gone missing from the principal (an older copy renamed over it): \
                     recorded again: {}{}",
                    shown.join(", "),
                    if n > 10 { ", …" } else { "" }
                )
            });
        }
        if let Some(e) = r.journal_error {
            self.log.error(format!("{e:#}: the batch is recorded, but not protected against an older copy"));
        }
    }

    /// One read of events, then the bound: a batch past its limit is
    /// traded for a rescan.
    pub(super) fn on_read(&mut self, read: crate::origin::watch::backend::Read) -> Result<()> {
        self.on_events(read)?;
        let held = self.batch.entries();
        if held > self.opts.max_batch_entries {
            self.batch.discard();
            // Every change since synced-to was in the discarded batch or is
            // still to come: the rescan looks at files modified since then.
            self.markers.batch_dropped();
            self.rescan.get_or_insert_with(|| "too many changes for one batch".into());
            self.log.warn(format!(
                "a batch held {held} paths (more than {}): dropped, the tree will be rescanned",
                self.opts.max_batch_entries
            ));
        }
        Ok(())
    }

    pub(super) fn flush_allowed(&self) -> bool {
        self.retry_at.is_none_or(|t| self.now() >= t)
    }

    pub(super) fn aggregate_at(&self) -> Instant {
        let window = Duration::from_secs(self.coll.principal().seconds());
        aggregate_at(self.last_aggregate, self.opts.aggregate_every, window, self.batch.last_change(), &self.pace)
    }

    pub(super) fn aggregate(&mut self) {
        self.last_aggregate = self.now();
        // The cascade rewrites the larger files: the kept index is read
        // again when next needed (and its memory goes back meanwhile).
        self.index_cache = None;
        let (coll, keep_deletes, w) = (&self.coll, self.opts.keep_deletes, self.w);
        let cascade = with_progress(0, |step| {
            step.set(Step::Aggregate);
            crate::origin::aggregate::aggregate(coll, false, keep_deletes, w)
        });
        match cascade {
            Ok(r) => {
                self.log.aggregations.set(self.log.aggregations.get() + 1);
                if let Some(rec) = r.rerecorded {
                    self.noted(rec, &[]);
                }
                if r.merges > 0 {
                    let written = r.written.join(" ");
                    self.log.emit("aggregate", json!({ "written": r.written, "merges": r.merges }), || {
                        format!("{} merges, wrote {written}", r.merges)
                    });
                }
            }
            Err(e) => self.log.error(format!("aggregate failed: {e:#}")),
        }
        release_memory();
    }

    /// Each recentfile's identity now, smallest first.
    fn recentfile_ids(&self) -> Vec<Option<journal::FileId>> {
        self.coll.intervals.iter().map(|iv| journal::file_id(&self.coll.path_of(iv))).collect()
    }

    /// Whether the kept index was read from the recentfiles as they are.
    fn index_current(&self) -> bool {
        self.index_cache.as_ref().is_some_and(|c| c.ids == self.recentfile_ids())
    }

    /// The index, for a flush whose directories moved away: one pass over
    /// it, whatever the number of moves, kept between flushes while no
    /// recentfile changed but by this daemon's own records (each file's
    /// identity is compared), so that a storm of moves reads it once.
    pub(super) fn refresh_index(&mut self) -> Result<()> {
        if self.index_current() {
            return Ok(());
        }
        let ids = self.recentfile_ids();
        self.index_cache = None;
        let mut findings = Vec::new();
        let index = Index::read(&self.coll, &mut findings);
        if let Some(Finding::Unreadable { file, error }) =
            findings.iter().find(|f| matches!(f, Finding::Unreadable { .. }))
        {
            bail!("cannot read recentfile {file}: {error}");
        }
        self.index_cache = Some(super::CachedIndex { index, ids });
        Ok(())
    }

    /// What the disk shows of a created file that saw no write.
    pub(super) fn look(&self, rel: &RelPath) -> OnDisk {
        use std::os::unix::fs::MetadataExt;
        match crate::sys::tree::lstat(&self.root, rel) {
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
    pub(super) fn flush(&mut self) {
        self.settle_moves_out();
        let t0 = self.now();
        let f = self.batch.take(t0);
        if f.is_empty() {
            self.batch.events += f.events;
            if self.batch.pending() == 0 {
                self.advance_synced();
            }
            return;
        }
        let res: Result<_> = with_progress(f.pending(), |step| {
            // Directories moved in: watched and listed now, once each. One
            // not there (the disk is ahead of the events read) waits for the
            // events that say where it went.
            let mut listed = Vec::new();
            for (seq, dir, tries) in &f.to_list {
                if crate::sys::tree::lstat(&self.root, dir).is_ok_and(|m| m.is_dir()) {
                    listed.extend(self.list_tree(dir)?.into_iter().map(|p| (*seq, p)));
                } else if !self.batch.relist(dir.clone(), *tries, t0) {
                    tracing::debug!("directory {} to list is gone", shown_path(dir));
                }
            }
            if !f.forgotten.is_empty() {
                step.set(Step::Index);
                self.refresh_index()?;
            } else if self.index_cache.is_some() && !self.index_current() {
                self.index_cache = None;
            }
            let index = self.index_cache.as_ref().map(|c| &c.index);
            let mut under = index.map(|i| i.live_under(RelPath::default())).unwrap_or_default();
            under.retain(|p| f.forgets(p));
            let live = index.map(|i| move |p: &RelPath| i.is_live(p));
            let live = live.as_ref().map(|l| l as &dyn Fn(&RelPath) -> bool);
            let r = f.resolve(|p| self.look(p), &listed, &under, live, t0, self.pace.fresh_wait);
            let mut written = None;
            if !r.changes.is_empty() {
                step.set(Step::Record(r.changes.len()));
                written = Some(record(&self.coll, &r.changes, self.w)?);
            }
            Ok((r, written))
        });
        match res {
            Ok((r, written)) => {
                if let Some(w) = written {
                    self.noted(w, &r.changes);
                }
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
                let latency = f.since.map_or(0, |s| self.now().saturating_duration_since(s).as_millis() as u64);
                let took = self.now().saturating_duration_since(t0);
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
                self.batch.recorded(self.now(), took);
                self.recorded(news, deletes);
                release_memory();
            }
            Err(e) => {
                self.log.error(format!("cannot record a batch of events (retrying): {e:#}"));
                self.batch.restore(f);
                self.retry_at = Some(self.now() + self.opts.batch_delay.max(Duration::from_secs(5)));
            }
        }
    }

    /// Flush everything received up to now (a marker proves it) and stop.
    pub(super) fn shutdown(&mut self, name: &str) -> Result<()> {
        self.heartbeat();
        let until = Instant::now() + Duration::from_secs(3);
        while self.markers.waiting() && Instant::now() < until {
            if let Some(read) = self.watcher.recv_timeout(Duration::from_millis(50)) {
                self.on_read(read)?;
            }
        }
        while let Some(read) = self.watcher.try_recv() {
            self.on_read(read)?;
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

/// What a record is doing, for its progress lines.
#[derive(Clone, Copy, Debug)]
pub(super) enum Step {
    /// Resolving the batch against the disk.
    Resolve,
    /// Reading the index for the files under directories moved away.
    Index,
    /// Writing this many changes into the principal under its lock.
    Record(usize),
    /// Cascading the principal into the larger files.
    Aggregate,
    /// Comparing the tree with the index (start-up, rescan).
    Compare,
}

/// The step a record is at, shared with its progress thread.
pub(super) struct StepCell(Mutex<Step>);

impl StepCell {
    pub(super) fn set(&self, step: Step) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = step;
    }

    fn get(&self) -> Step {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Run one record or cascade (`work`, on this thread), with a `recording`
/// line every [`BUSY_LOG`] from a second thread while it lasts: a record
/// of a storm's batch reads the whole index and rewrites a large
/// principal, and a daemon silent for that long looks hung to whoever
/// reads its log.
pub(super) fn with_progress<T>(pending: usize, work: impl FnOnce(&StepCell) -> T) -> T {
    let step = StepCell(Mutex::new(Step::Resolve));
    let span = tracing::Span::current();
    let (done, wait) = channel::<()>();
    std::thread::scope(|scope| {
        let step = &step;
        scope.spawn(move || {
            let _in = span.enter();
            let t0 = Instant::now();
            while let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(BUSY_LOG) {
                let seconds = t0.elapsed().as_secs();
                let (name, changes, doing) = match step.get() {
                    Step::Resolve => ("resolve", pending, format!("resolving {pending} pending changes")),
                    Step::Index => {
                        ("index", pending, "reading the index for the files of directories moved away".to_string())
                    }
                    Step::Record(n) => ("record", n, format!("writing {n} changes into the principal")),
                    Step::Aggregate => ("aggregate", 0, "cascading into the larger recentfiles".to_string()),
                    Step::Compare => ("compare", 0, "comparing the tree with the index".to_string()),
                };
                let fields = json!({ "step": name, "changes": changes, "seconds": seconds });
                crate::output::log::emit(
                    tracing::Level::INFO,
                    "recording",
                    &fields,
                    &format!("recording a batch: {doing} ({seconds} s so far)"),
                );
            }
        });
        let out = work(step);
        drop(done);
        out
    })
}
