//! What an inotify event does: the event is classified by the pure rules
//! ([`crate::origin::watch::rules`]); a directory made or moved in is
//! watched and listed, one moved out or deleted loses its watches, a file
//! event goes into the pending batch, the heartbeat's rename is a marker,
//! and a lost event asks for a rescan. Also what happens when a watch
//! cannot be added (the inotify watch limit).

use super::Daemon;
use crate::origin::watch::rules::{classify, is_under, join, watch_limit_message, Happening};
use crate::origin::watch::watcher::{AddError, RawEvent, Read};
use crate::recentfile::{check_relative_path, shown_path, EventKind, RelPath};
use anyhow::{bail, Context, Result};
use std::fs;
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
        let limit =
            fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").ok().and_then(|s| s.trim().parse().ok());
        watch_limit_message(&shown_path(rel), limit, self.count_dirs())
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
    /// new (a directory made or moved in).
    pub(super) fn watch_tree(&mut self, rel: &RelPath) -> Result<()> {
        let mut stack = vec![rel.clone()];
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
                let child = join(&dir, ent.file_name().as_bytes());
                if self.ignore.is_ignored(&child) {
                    continue;
                }
                match ent.file_type() {
                    Ok(ft) if ft.is_dir() => stack.push(child),
                    Ok(_) => match check_relative_path(&child) {
                        Ok(()) => self.batch.record(&child, EventKind::New, now),
                        Err(why) => self.log.warn(format!("cannot index {}: {why}", shown_path(&child))),
                    },
                    Err(_) => {}
                }
            }
        }
        Ok(())
    }

    pub(super) fn on_events(&mut self, read: Read) -> Result<()> {
        let events = read.context("cannot read inotify events")?;
        for ev in events {
            self.on_event(ev)?;
        }
        Ok(())
    }

    pub(super) fn on_event(&mut self, ev: RawEvent) -> Result<()> {
        self.batch.events += 1;
        let Some(h) = classify(ev.mask) else { return Ok(()) };
        match h {
            Happening::Overflow => {
                self.rescan.get_or_insert_with(|| "kernel queue overflow".into());
                self.pin_rescan_floor();
                return Ok(());
            }
            Happening::Unmounted => {
                self.rescan.get_or_insert_with(|| "a filesystem under the tree was unmounted".into());
                self.pin_rescan_floor();
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
        let rel = join(dir, name.as_bytes());
        if is_under(&rel, ".rrr") {
            if rel == ".rrr/watch.json" && h == (Happening::MovedIn { dir: false }) {
                self.on_marker();
            } else if rel == ".rrr" && matches!(h, Happening::MovedOut { .. } | Happening::Deleted { .. }) {
                self.watcher.remove(&RelPath::from(".rrr"));
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

    /// Events were lost here: the rescan must look back to the last
    /// marker received before them. A heartbeat written while the rest
    /// of the backlog is read (before the rescan runs) arrives after the
    /// loss, and its time is later than the lost changes.
    fn pin_rescan_floor(&mut self) {
        self.rescan_floor = Some(self.rescan_floor.map_or(self.last_marker, |f| f.min(self.last_marker)));
    }

    pub(super) fn file_event(&mut self, h: Happening, rel: &RelPath, now: Instant) {
        if let Err(why) = check_relative_path(rel) {
            if matches!(h, Happening::ClosedWrite | Happening::MovedIn { .. }) {
                self.log.warn(format!("cannot index {}: {why}", shown_path(rel)));
            }
            return;
        }
        self.batch.on_file(h, rel, self.last_marker, now);
    }
}
