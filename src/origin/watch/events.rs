//! What a backend's notice does (classified by the backend into the pure
//! rules' [`Happening`]); a directory made or moved in is
//! watched and listed, one moved out or deleted loses its watches, a file
//! event goes into the pending batch, the heartbeat's rename is a marker,
//! and a lost event asks for a rescan. Also what happens when a watch
//! cannot be added (the backend's limit, which the backend explains).

use super::Daemon;
use crate::origin::watch::backend::{AddError, Notice, Read};
use crate::origin::watch::rules::{is_under, join, Happening};
use crate::recentfile::{check_relative_path, shown_path, EventKind, RelPath};
use anyhow::{bail, Context, Result};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

impl Daemon<'_> {
    /// Directories of the tree (not ignored), for the limit message.
    pub(super) fn count_dirs(&self) -> usize {
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

    pub(super) fn limit_message(&self, rel: &RelPath) -> String {
        self.watcher.limit_message(&shown_path(rel), self.count_dirs())
    }

    /// A watch could not be added: at start the limit is fatal; later the
    /// daemon rescans periodically until every directory is watched.
    pub(super) fn watch_failed(&mut self, rel: &RelPath, e: AddError, fatal_limit: bool) -> Result<()> {
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
    /// new (a directory made).
    pub(super) fn watch_tree(&mut self, rel: &RelPath) -> Result<()> {
        let now = self.now();
        for f in self.list_tree(rel)? {
            self.batch.record(&f, EventKind::New, now);
        }
        Ok(())
    }

    /// Watch `rel` and every directory below it (those not watched yet),
    /// listing each after its watch exists: the files found (a file
    /// created meanwhile is listed or seen by its watch).
    pub(super) fn list_tree(&mut self, rel: &RelPath) -> Result<Vec<RelPath>> {
        let mut stack = vec![rel.clone()];
        let mut files = Vec::new();
        while let Some(dir) = stack.pop() {
            if !self.watcher.is_watched(&dir) {
                if let Err(e) = self.watcher.add(&dir) {
                    self.watch_failed(&dir, e, false)?;
                }
            }
            let rd = match crate::sys::tree::read_dir(&self.root, &dir) {
                Ok(rd) => rd,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                    continue
                }
                Err(e) => {
                    self.log.error(format!("cannot list {dir:?}: {e}"));
                    continue;
                }
            };
            for ent in rd.flatten() {
                let child = join(&dir, ent.file_name().as_bytes());
                if self.ignore.is_ignored(&child) {
                    continue;
                }
                match ent.file_type() {
                    Ok(ft) if ft.is_dir() => stack.push(child),
                    Ok(_) => match check_relative_path(&child) {
                        Ok(()) => files.push(child),
                        Err(why) => self.log.warn(format!("cannot index {}: {why}", shown_path(&child))),
                    },
                    Err(_) => {}
                }
            }
        }
        Ok(files)
    }

    pub(super) fn on_events(&mut self, read: Read) -> Result<()> {
        let events = read.context("cannot read inotify events")?;
        for ev in events {
            self.on_event(ev)?;
        }
        // Moves out whose other half is overdue: they left the tree.
        if self.moves.over_limit() {
            self.settle_moves_out();
        }
        Ok(())
    }

    /// Directories moved out whose move in (same cookie) has not come:
    /// they left the tree. Called before a batch is taken, when no event
    /// is waiting, and when too many wait (the kernel queues the two
    /// halves of a rename together; other events may come between them).
    pub(super) fn settle_moves_out(&mut self) {
        let now = self.now();
        for from in self.moves.take_all() {
            self.moved_out_of_tree(&from, now);
        }
    }

    pub(super) fn on_event(&mut self, ev: Notice) -> Result<()> {
        self.batch.events += 1;
        let Some(h) = ev.what else { return Ok(()) };
        let target = self.target(&ev, h)?;
        // A directory's move out waits for its move in elsewhere in the
        // tree, with the same cookie (see `settle_moves_out`).
        let paired = match h {
            Happening::MovedIn { dir: true } if ev.cookie != 0 => self.moves.pair(ev.cookie),
            _ => None,
        };
        let Some(rel) = target else {
            if let Some(from) = paired {
                // Moved into an ignored place: out of the tree.
                self.moved_out_of_tree(&from, self.now());
            }
            return Ok(());
        };
        // Anything else at or around a place whose move out is unpaired
        // (a directory made again where one moved away): that move was
        // out of the tree, before this event's path is watched or listed.
        for from in self.moves.take_around(&rel) {
            self.moved_out_of_tree(&from, self.now());
        }
        self.active = true;
        let now = self.now();
        match h {
            Happening::Created { dir: true } => self.watch_tree(&rel)?,
            Happening::MovedIn { dir: true } => match paired {
                Some(from) => {
                    self.watcher.rename_under(&from, &rel);
                    self.batch.dir_moved(Some(&from), Some(&rel), now);
                }
                // Listed (and watched) at the flush, once however often it comes.
                None => self.batch.dir_moved(None, Some(&rel), now),
            },
            Happening::MovedOut { dir: true } => {
                if let Some(earlier) = self.moves.moved_out(ev.cookie, rel) {
                    self.moved_out_of_tree(&earlier, now);
                }
            }
            // Its subdirectories were deleted first, each with its own event.
            Happening::Deleted { dir: true } => {
                self.watcher.remove(&rel);
                self.batch.dir_removed(&rel);
            }
            _ => self.file_event(h, &rel, now),
        }
        Ok(())
    }

    /// A directory left the tree: its watches go, and its indexed files
    /// are deletes at the flush.
    fn moved_out_of_tree(&mut self, from: &RelPath, now: Instant) {
        self.watcher.remove_under(from);
        self.batch.dir_moved(Some(from), None, now);
    }

    /// The tree path `ev` is about, if the index cares about it; the
    /// events about the watch itself (a lost queue, an unmount, a removed
    /// watch, the root's fate, the heartbeat's marker) are handled here.
    fn target(&mut self, ev: &Notice, h: Happening) -> Result<Option<RelPath>> {
        match h {
            Happening::Overflow => {
                self.rescan.get_or_insert_with(|| "kernel queue overflow".into());
                self.markers.events_lost();
                return Ok(None);
            }
            Happening::Unmounted => {
                self.rescan.get_or_insert_with(|| "a filesystem under the tree was unmounted".into());
                self.markers.events_lost();
                return Ok(None);
            }
            Happening::WatchGone => {
                self.watcher.forget(ev.watch);
                return Ok(None);
            }
            _ => {}
        }
        // Events still queued for a watch removed since are dropped.
        let Some(dir) = self.watcher.dir_of(ev.watch) else { return Ok(None) };
        let Some(name) = &ev.name else {
            // The watched directory itself: only the root's fate matters.
            if dir.is_empty() && matches!(h, Happening::MovedSelf | Happening::DeletedSelf) {
                bail!("the root {} was moved or deleted", self.root.display());
            }
            return Ok(None);
        };
        let rel = join(dir, name);
        if is_under(&rel, ".rrr") {
            if rel == ".rrr/watch.json" && h == (Happening::MovedIn { dir: false }) {
                self.on_marker();
            } else if rel == ".rrr" && matches!(h, Happening::MovedOut { .. } | Happening::Deleted { .. }) {
                self.watcher.remove(&RelPath::from(".rrr"));
            }
            return Ok(None);
        }
        if self.ignore.is_ignored(&rel) {
            return Ok(None);
        }
        Ok(Some(rel))
    }

    pub(super) fn file_event(&mut self, h: Happening, rel: &RelPath, now: Instant) {
        if let Err(why) = check_relative_path(rel) {
            if matches!(h, Happening::ClosedWrite | Happening::MovedIn { .. } | Happening::Created { .. }) {
                self.log.warn(format!("cannot index {}: {why}", shown_path(rel)));
            }
            return;
        }
        self.batch.on_file(h, rel, self.markers.last(), now);
    }
}
