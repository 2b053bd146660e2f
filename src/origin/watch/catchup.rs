//! Catching up with the tree: the comparison of the tree with the index
//! (`fsck` logic) that records what changed while nobody watched, at
//! start-up (files modified since the last heartbeat's `synced_to`) and
//! after lost events (a kernel queue overflow, an unmount, a directory
//! that could not be watched: files modified since the last marker). It
//! adds the missing watches on its walk and drops those of directories
//! gone.

use super::daemon::{with_progress, Step};
use super::{release_memory, Daemon};
use crate::epoch::Epoch;
use crate::origin::index_check::{compare_with, Finding};
use crate::origin::record::record;
use crate::origin::watch::backend::AddError;
use crate::origin::watch::rules::{Happening, Heartbeat};
use crate::recentfile::{shown_path, EventKind, RelPath};
use crate::update::Change;
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::collections::HashSet;
use std::fs;
use std::time::Instant;

/// File times come from the kernel's coarse clock, a tick behind the
/// precise one; a lower bound for mtimes is taken this much earlier.
const CLOCK_SLACK: f64 = 0.05;

impl Daemon<'_> {
    /// Compare the tree with the index and record the differences (files
    /// modified at or after `since` included), watching every directory of
    /// the tree on the way (each before it is listed) and dropping the
    /// watches of directories no longer there. Returns (new, delete).
    pub(super) fn reconcile(&mut self, since: Option<i64>, fatal_limit: bool) -> Result<(usize, usize)> {
        let mut seen: HashSet<RelPath> = HashSet::new();
        let mut failed: Vec<(RelPath, AddError)> = Vec::new();
        let (watcher, coll, ignore) = (&mut self.watcher, &self.coll, &self.ignore);
        // A line every few seconds while the tree is compared (a large
        // tree, or one that a storm keeps changing, takes a while).
        let report = with_progress(0, |step| {
            step.set(Step::Compare);
            compare_with(coll, ignore, since, |dir| {
                if !watcher.is_watched(dir) {
                    if let Err(e) = watcher.add(dir) {
                        failed.push((dir.clone(), e));
                    }
                }
                seen.insert(dir.clone());
            })
        })?;
        for (dir, e) in failed {
            self.watch_failed(&dir, e, fatal_limit)?;
        }
        let stale: Vec<RelPath> =
            self.watcher.dirs().filter(|d| !seen.contains(*d) && **d != ".rrr").cloned().collect();
        for d in stale {
            self.watcher.remove(&d);
        }
        if let Some(Finding::Unreadable { file, error }) =
            report.findings.iter().find(|f| matches!(f, Finding::Unreadable { .. }))
        {
            bail!("cannot compare the tree with the index: recentfile {file} is unreadable: {error}");
        }
        let now = self.now();
        for f in &report.findings {
            match f {
                Finding::Unindexable { path, reason } => {
                    self.log.warn(format!("cannot index {}: {reason}", shown_path(path)));
                }
                // Named like an rsync temp file and young (not a name the
                // ignore set leaves out): looked at again by the batch, as a
                // file just created, since no event may ever come for it (an
                // operator's `.env.sample` edited just before the start). A
                // real temp file is renamed within milliseconds: nothing then.
                Finding::NotIndexed { path, .. } if self.ignore.why_ignored(path, false).is_none() => {
                    self.batch.on_file(Happening::Created { dir: false }, path, self.markers.last(), now);
                }
                _ => {}
            }
        }
        let changes: Vec<Change> = report.findings.iter().filter_map(Finding::change).collect();
        let news = changes.iter().filter(|c| c.kind == EventKind::New).count();
        drop(report);
        if !changes.is_empty() {
            let (coll, w) = (&self.coll, self.w);
            let r = with_progress(changes.len(), |step| {
                step.set(Step::Record(changes.len()));
                record(coll, &changes, w)
            })?;
            self.noted(r, &changes);
            self.recorded(news, changes.len() - news);
        }
        release_memory();
        Ok((news, changes.len() - news))
    }

    pub(super) fn start(&mut self, previous: Option<Heartbeat>) -> Result<()> {
        let t0 = Instant::now();
        fs::create_dir_all(self.root.join(".rrr")).context("cannot create .rrr/")?;
        let rrr_dir = RelPath::from(".rrr");
        if let Err(e) = self.watcher.add(&rrr_dir) {
            self.watch_failed(&rrr_dir, e, true)?;
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

    /// Events were lost (or a watch is missing): watch every directory and
    /// compare the tree with the index.
    pub(super) fn rescan(&mut self, why: &str) -> Result<()> {
        let t0 = Instant::now();
        let floor = self.markers.rescan_from();
        let since = (floor - CLOCK_SLACK).floor() as i64;
        self.flush();
        // Directories moved meanwhile are found by the walk, which reads the
        // index itself: the kept one goes (memory).
        self.settle_moves_out();
        self.index_cache = None;
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
        self.markers.rescanned();
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
}
