//! Applying delete events: in order, within `--max-delete`, never a path
//! the safety checks refuse nor a top-level `lost+found`; directories last,
//! deepest first; parents a delete left empty pruned. What `--max-delete`
//! or an error leaves is kept pending in the state for the next run.

use super::report::PassReport;
use super::report::Refusal;
use super::safety::{check_event_path, reported_path};
use super::state::PendingDelete;
use super::{Mirror, LOST_FOUND};
use crate::epoch::Epoch;
use crate::recentfile::{shown_path, EventKind, RelPath};
use crate::tree::IgnoreSet;
use anyhow::Result;
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// `--max-delete` was reached in this run.
pub(super) const MAX_DELETE_MSG: &str = "--max-delete reached";

/// A whole-tree pass that would delete more than this share of the
/// mirror's files stops first (docs/decisions.md#mass-deletes)…
pub(super) const MASS_DELETE_SHARE: f64 = 0.10;
/// … when they are at least this many; …
pub(super) const MASS_DELETE_MIN: u64 = 100;
/// … or more than this share of a mirror of any size (a small tree
/// re-pointed at another collection).
pub(super) const MASS_DELETE_HALF: f64 = 0.5;
/// The delete events of one incremental pass are held when they would
/// delete more than [`MASS_DELETE_SHARE`] of the mirror's files and at
/// least this many (docs/decisions.md#mass-deletes).
pub(super) const EVENT_MASS_DELETE_MIN: u64 = 1000;

impl<'a> Mirror<'a> {
    /// Remove the directories above `path` that its delete left empty,
    /// deepest first: never the localroot or above it, never `.rrr` or a
    /// top-level `lost+found`, never one that still holds anything (rmdir
    /// refuses). The parents were checked to be real directories.
    fn prune_parents(&self, path: &RelPath) {
        let mut p = path.as_bytes();
        while let Some(i) = p.iter().rposition(|&b| b == b'/') {
            p = &p[..i];
            if p == LOST_FOUND.as_bytes()
                || p == b".rrr"
                || fs::remove_dir(self.cfg.localroot.join(OsStr::from_bytes(p))).is_err()
            {
                break;
            }
        }
    }

    /// Apply deletes in order, respecting `--max-delete`; `on_done` is
    /// called for each one that is complete. Returns how many are left
    /// (kept in `pending_deletes`). Every 1000 deletes the state is saved
    /// with what is still owed, so a kill repeats at most those (a no-op).
    pub(super) fn apply_deletes(
        &mut self,
        ignore: &IgnoreSet,
        list: Vec<PendingDelete>,
        newest_seen: &HashMap<RelPath, Epoch>,
        rep: &mut PassReport,
        on_done: &mut dyn FnMut(&PendingDelete, bool),
    ) -> Result<usize> {
        if self.hold_mass_delete(&list, ignore, rep) {
            return Ok(self.keep_left(list, rep));
        }
        let mut left: Vec<PendingDelete> = Vec::new();
        let mut dirs: Vec<(PendingDelete, PathBuf)> = Vec::new();
        let mut since_save = 0;
        let mut it = list.into_iter();
        while let Some(p) = it.next() {
            if newest_seen.get(&p.path).is_some_and(|n| *n > p.epoch) {
                on_done(&p, false);
                continue;
            }
            if self.max_delete_used_up() {
                left.push(p);
                left.extend(it.by_ref());
                break;
            }
            if self.nothing_to_delete(&p, ignore, rep) {
                on_done(&p, false);
                continue;
            }
            match self.unlink(&p, rep) {
                Unlinked::Done(deleted) => on_done(&p, deleted),
                Unlinked::Dir(target) => dirs.push((p, target)),
                Unlinked::Failed => left.push(p),
            }
            since_save += 1;
            if since_save >= 1000 {
                since_save = 0;
                self.state.pending_deletes = left.iter().cloned().chain(it.as_slice().iter().cloned()).collect();
                self.save()?;
            }
        }
        self.remove_dirs(dirs, rep, on_done);
        Ok(self.keep_left(left, rep))
    }

    /// Whether the deletes of `list` are held as a mass delete
    /// (docs/decisions.md#mass-deletes): with those this pass applied
    /// already, they would remove more than [`MASS_DELETE_SHARE`] of the
    /// mirror's files and at least [`EVENT_MASS_DELETE_MIN`] (an upstream
    /// that lists deletes of files it still has must not empty a mirror in
    /// one pass). Counted only past the minimum: a delete event whose file
    /// is here (a stat each), then the tree walked once. `--max-delete N`
    /// covering the count, or `--accept-deletes` (used up), let them go;
    /// once held, every later delete of the pass is held too.
    fn hold_mass_delete(&mut self, list: &[PendingDelete], ignore: &IgnoreSet, rep: &mut PassReport) -> bool {
        if rep.mass_deletes_held {
            rep.deletes_held += list.len() as u64;
            return !list.is_empty();
        }
        if rep.deleted + (list.len() as u64) < EVENT_MASS_DELETE_MIN {
            return false;
        }
        let root = &self.cfg.localroot;
        let here = list
            .iter()
            .filter(|p| fs::symlink_metadata(root.join(p.path.as_path())).is_ok_and(|m| !m.is_dir()))
            .count() as u64;
        let planned = rep.deleted + here;
        let files = self.files_at_start(ignore, rep.deleted);
        if planned < EVENT_MASS_DELETE_MIN || planned as f64 <= files as f64 * MASS_DELETE_SHARE {
            return false;
        }
        if self.cfg.max_delete.is_some_and(|m| m >= planned) {
            return false;
        }
        if std::mem::take(&mut self.cfg.accept_deletes) {
            tracing::info!("deleting {planned} of the mirror's {files} files (--accept-deletes)");
            return false;
        }
        tracing::warn!(
            "the delete events of this pass would delete {planned} of the mirror's {files} files, more than \
             {:.0} %: held, nothing of them deleted (kept pending). If {} really removed them, run again with \
             --max-delete {planned} (or more) or --accept-deletes; if its index lists deletes of files it \
             still has, fix the origin.",
            MASS_DELETE_SHARE * 100.0,
            self.cfg.remote.src
        );
        rep.mass_deletes_held = true;
        rep.max_delete_reached = true;
        rep.deletes_held += list.len() as u64;
        true
    }

    /// `--max-delete` allows no more deletes in this run.
    fn max_delete_used_up(&self) -> bool {
        self.cfg.max_delete.is_some_and(|m| self.deletes_this_run >= m)
    }

    /// True when `p` is done without deleting anything: it is below a
    /// file (nothing of ours is there), or the safety checks refuse it
    /// (reported and counted) or it names the top-level `lost+found`.
    fn nothing_to_delete(&mut self, p: &PendingDelete, ignore: &IgnoreSet, rep: &mut PassReport) -> bool {
        let mut safe = HashSet::new();
        let why = if p.path == LOST_FOUND || p.path.starts_with("lost+found/") {
            Some("rrr never deletes lost+found".to_string())
        } else {
            check_event_path(&self.cfg.localroot, &p.path, ignore, &mut safe)
        };
        let Some(reason) = why else { return false };
        if super::safety::blocked_by(&self.cfg.localroot, &p.path, ignore).is_some_and(|(_, l)| !l) {
            // Below a file: nothing of ours is there to delete.
            return true;
        }
        tracing::warn!("refused delete event {} {}: {reason}", p.epoch, shown_path(&p.path));
        rep.refused.push(Refusal {
            file: String::new(),
            epoch: p.epoch.clone(),
            kind: Some(EventKind::Delete),
            path: reported_path(&p.path),
            reason,
        });
        self.state.counters.refused += 1;
        true
    }

    /// Unlink what `p` names unless it is a directory (left for
    /// [`Mirror::remove_dirs`]). On return a file is gone from the target,
    /// counted, and its empty parents pruned; a failure is an error of the
    /// pass and the delete stays owed.
    fn unlink(&mut self, p: &PendingDelete, rep: &mut PassReport) -> Unlinked {
        let target = self.cfg.localroot.join(&p.path);
        let res = match fs::symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.prune_parents(&p.path);
                return Unlinked::Done(false);
            }
            Ok(m) if m.is_dir() => return Unlinked::Dir(target),
            Ok(_) => fs::remove_file(&target),
            Err(e) => Err(e),
        };
        match res {
            Ok(()) => {
                self.deletes_this_run += 1;
                rep.deleted += 1;
                self.state.counters.deletes += 1;
                self.state.note_applied(&p.epoch);
                self.prune_parents(&p.path);
                Unlinked::Done(true)
            }
            Err(e) => {
                let msg = format!("cannot delete {}: {e}", target.display());
                tracing::error!("{msg}");
                self.state.error("delete");
                rep.errors.push(msg);
                Unlinked::Failed
            }
        }
    }

    /// Remove the directories of delete events last, deepest first (the
    /// reference's rmdir order). One that is not empty stays, its delete
    /// done: its files have their own events.
    fn remove_dirs(
        &mut self,
        mut dirs: Vec<(PendingDelete, PathBuf)>,
        rep: &mut PassReport,
        on_done: &mut dyn FnMut(&PendingDelete, bool),
    ) {
        dirs.sort_by_key(|d| std::cmp::Reverse(d.1.as_os_str().len()));
        for (p, target) in dirs {
            match fs::remove_dir(&target) {
                Ok(()) => {
                    self.deletes_this_run += 1;
                    rep.deleted += 1;
                    self.state.counters.deletes += 1;
                    self.prune_parents(&p.path);
                    on_done(&p, true);
                }
                Err(e) => {
                    tracing::warn!("cannot remove directory {}: {e}", target.display());
                    on_done(&p, false);
                }
            }
        }
    }

    /// Keep the deletes not applied as pending in the state (in memory;
    /// the caller saves) and say when `--max-delete` held them. Returns
    /// how many.
    fn keep_left(&mut self, left: Vec<PendingDelete>, rep: &mut PassReport) -> usize {
        if !left.is_empty() && self.max_delete_used_up() {
            let msg = format!(
                "{MAX_DELETE_MSG} ({}): {} not applied, kept pending for the next run",
                crate::output::human::plural(self.cfg.max_delete.unwrap_or(0), "delete", "deletes"),
                crate::output::human::plural(left.len() as u64, "delete", "deletes")
            );
            tracing::warn!("{msg}");
            rep.max_delete_reached = true;
        }
        rep.deletes_pending = left.len() as u64;
        let n = left.len();
        self.state.pending_deletes = left;
        n
    }
}

/// What unlinking one delete event's path came to.
enum Unlinked {
    /// Complete: `true` when something was deleted, `false` when nothing
    /// was there.
    Done(bool),
    /// A directory: removed after the files.
    Dir(PathBuf),
    /// An error: the delete stays owed.
    Failed,
}

/// What a new event whose place holds something of another type comes to
/// ([`Mirror::place`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Placement {
    /// Its place is clear: transfer it.
    Go,
    /// A newer event says the place is of its old type again: done, nothing to transfer.
    Superseded,
    /// It cannot be placed now: recorded as failing, retried every pass.
    Failing,
}

impl<'a> Mirror<'a> {
    /// Make room for the new event `path` at `epoch` once the deletes that
    /// stood in its way were applied (README.mirror, "Type changes"). The
    /// caller knows what the origin recorded after `epoch`: `parent_newer`
    /// (an event of the blocking parent: the path is gone again) and
    /// `under_newer` (an event below `path`: a directory again).
    ///
    /// A parent that is still a file or a symlink stays: the origin recorded
    /// no delete of it, and rrr removes nothing on a guess (a whole-tree
    /// pass would). A directory where the origin's newest event says a file
    /// is replaced by rsync (`--force` for the transfers that list it), so
    /// only when the origin really has a file there now (an event may name
    /// a directory the origin still has): counted as deletes and within
    /// `--max-delete` (its entries counted first, without following
    /// symlinks), never under `--skip-deletes`.
    pub(super) fn place(
        &mut self,
        path: &RelPath,
        epoch: &Epoch,
        ignore: &IgnoreSet,
        parent_newer: &dyn Fn(&RelPath) -> bool,
        under_newer: bool,
        rep: &mut PassReport,
    ) -> Placement {
        let root = self.cfg.localroot.clone();
        if let Some((parent, symlink)) = super::safety::blocked_by(&root, path, ignore) {
            if parent_newer(&parent) {
                return Placement::Superseded;
            }
            let what = if symlink { "symlink" } else { "file" };
            let why = format!(
                "cannot place it: {} is a {what} here and the origin recorded no delete of it \
                 (a whole-tree pass, --full, replaces it)",
                shown_path(&parent)
            );
            return self.cannot_place(path, epoch, &why);
        }
        let target = root.join(path.as_path());
        if !fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
            return Placement::Go;
        }
        if under_newer {
            return Placement::Superseded;
        }
        let why = if self.cfg.skip_deletes {
            Some("the origin replaced this directory by a file; --skip-deletes keeps the directory".to_string())
        } else if path == LOST_FOUND {
            Some("rrr never deletes lost+found".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            return self.cannot_place(path, epoch, &why);
        }
        let entries = walkdir::WalkDir::new(&target).follow_links(false).into_iter().count() as u64;
        if let Some(max) = self.cfg.max_delete.filter(|m| self.deletes_this_run + entries > *m) {
            let why = format!(
                "the origin replaced this directory by a file; removing it would delete {entries} entries, \
                 more than --max-delete {max} allows"
            );
            rep.max_delete_reached = true;
            return self.cannot_place(path, epoch, &why);
        }
        // rsync replaces it, and only when the origin has a file there now.
        self.replacing.insert(path.clone(), entries);
        Placement::Go
    }

    /// After a transfer of `paths`: the directories of [`Mirror::replacing`]
    /// that rsync replaced by the origin's file are counted as deletes.
    pub(super) fn count_replaced(&mut self, paths: &[&RelPath], rep: &mut PassReport) {
        for p in paths {
            let Some(entries) = self.replacing.remove(*p) else { continue };
            if fs::symlink_metadata(self.cfg.localroot.join(p.as_path())).is_ok_and(|m| !m.is_dir()) {
                tracing::info!("{}: the origin replaced a directory by a file ({entries} entries)", shown_path(p));
                self.deletes_this_run += entries;
                rep.deleted += entries;
                self.state.counters.deletes += entries;
            }
        }
    }

    fn cannot_place(&mut self, path: &RelPath, epoch: &Epoch, why: &str) -> Placement {
        let now = self.clock.now();
        let n = self.state.fail(path, Some(epoch), why, &now);
        self.state.error("failing");
        tracing::warn!("{} (attempt {n}; retried every pass): {why}", shown_path(path));
        Placement::Failing
    }
}
