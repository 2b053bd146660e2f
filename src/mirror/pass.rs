//! One pass ([`Mirror::pass`], module docs steps 1 to 3): the principal
//! fetched in one rsync call with the files the last pass asked for, the
//! dirtymark check, the choice between a whole-tree pass (in `transfer`)
//! and an incremental one, and the incremental walk of the recentfiles
//! smallest first, one file's events at a time; what a pass did
//! ([`PassReport`]).

use super::deletes::Placement;
use super::install::OurCopy;
use super::pass_progress::Reporter;
use super::remote::{self, FetchDir, FetchWatch, Layout};
use super::report::{abort_point, FailingReport, Fetched, PassReport};
use super::safety::{blocked_by, check_event_path, refuse};
use super::state::{Failing, Outcome, PendingDelete};
use super::Mirror;
use crate::done;
use crate::epoch::Epoch;
use crate::recentfile::{shown_path, EventKind, Recentfile, RelPath};
use crate::sys::rsync::{Output, RsyncError};
use crate::sys::signals::Interrupted;
use crate::sys::tree::IgnoreSet;
use anyhow::{Context, Result};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::time::Instant;

/// Where a pass gets its principal from.
pub(super) type Principal = (FetchDir, Fetched, Layout);

impl<'a> Mirror<'a> {
    fn fetch_dir(&self) -> Result<FetchDir> {
        if self.cfg.dry_run || !self.writable {
            // Change nothing in the target: fetch into the system temp dir.
            return FetchDir::new(&std::env::temp_dir());
        }
        Ok(FetchDir::new(&self.cfg.state_dir())?.with_basis(&self.cfg.localroot))
    }

    /// Fetch `names` into `dir`, with retries. Returns once all of them
    /// are in place (the origin has read each, so a transfer that follows
    /// lists nothing they lack), while the call tears down (65 ms with a
    /// default rsyncd); reads of `dir` wait for it
    /// ([`FetchDir::fetch_until_landed`]).
    pub(super) fn fetch(&mut self, dir: &FetchDir, names: &[&str]) -> Result<()> {
        let remote = self.cfg.remote.clone();
        let settings = self.cfg.rsync.clone();
        let what = format!("fetching {} from {}", names.join(" "), remote.root);
        self.in_flight = Some(dir.finishing());
        self.watched_fetch(|m, watch| {
            m.with_retries(&what, || dir.fetch_until_landed(&remote, &settings, names, watch))
        })
    }

    /// Run `fetch` with a [`FetchWatch`]: `--max-recentfile-size` enforced
    /// by rsync, and, once rsync has been quiet for a while (a slow link, a
    /// large principal), progress lines and heartbeats as the bootstrap's
    /// (module `progress`); a fetch that ends before writes neither.
    fn watched_fetch<T>(&mut self, fetch: impl FnOnce(&mut Self, &mut FetchWatch<'_>) -> Result<T>) -> Result<T> {
        let mut hook = self.on_heartbeat.take();
        let (bar, started) = (self.cfg.progress, self.clock.now());
        let res = {
            let mut beat = Some(self.heartbeat_writer(&mut hook));
            let mut reporter: Option<Reporter<'_>> = None;
            let res = {
                let mut on_quiet = |pid: u32| {
                    let r = reporter.get_or_insert_with(|| {
                        let beat = beat.take().expect("one reporter");
                        Reporter::new(bar, "recentfiles", started.clone(), beat)
                    });
                    r.output(Output::Quiet { pid });
                };
                let mut watch = FetchWatch { max_size: self.cfg.max_recentfile_size, on_quiet: &mut on_quiet };
                fetch(self, &mut watch)
            };
            if let Some(r) = reporter {
                r.finish();
            }
            res
        };
        self.on_heartbeat = hook;
        res
    }

    /// Fetch the whole index (link and every recentfile) in one call, with
    /// retries; false when it cannot be named by a filter. Returns once
    /// the principal (the link and its target) is in place: the rest of
    /// the call goes on ([`FetchDir::fetch_index_until`]).
    fn fetch_index(&mut self, dir: &FetchDir) -> Result<bool> {
        let remote = self.cfg.remote.clone();
        let settings = self.cfg.rsync.clone();
        let what = format!("fetching the recentfiles of {}", remote.root);
        self.in_flight = Some(dir.finishing());
        let principal_landed = |d: &FetchDir| {
            if !remote.is_link() {
                return d.landed(&remote.name);
            }
            matches!(d.link_target(&remote.name), Ok(Some(t)) if d.landed(&t))
        };
        self.watched_fetch(|m, watch| {
            m.with_retries(&what, || dir.fetch_index_until(&remote, &settings, watch, principal_landed))
        })
    }

    /// The larger recentfiles a mirror that fell behind needs in this pass,
    /// to fetch with the principal instead of one connection each: the file
    /// after each one whose interval is shorter than the time since the
    /// last complete pass (after a day down, 6h and 1d). By our copies'
    /// names; a guess (a file may span more than its interval) that costs
    /// bytes, never a connection, when it is wrong.
    fn behind_names(&self) -> Vec<String> {
        let Some(last) = &self.state.last_complete else { return Vec::new() };
        let behind = self.clock.now_f64() - last.to_f64();
        let mut ours: Vec<(u64, &String)> = self
            .state
            .installed
            .keys()
            .filter_map(|n| {
                let (_, iv, _) = crate::collection::split_name(n)?;
                Some((crate::interval::Interval::parse(iv).ok()?.seconds(), n))
            })
            .collect();
        ours.sort();
        ours.windows(2).filter(|w| behind > w[0].0 as f64).map(|w| w[1].1.clone()).collect()
    }

    /// A whole-tree pass is due (before the principal is read: a changed
    /// dirtymark can still make one due).
    fn bootstrap_due(&self) -> bool {
        self.full || (self.state.resync && self.state.failing.is_empty()) || self.state.done_union().is_empty()
    }

    /// Fetch and validate the principal, in one rsync call: with the link,
    /// the file it pointed to last time and the larger files the last pass
    /// asked for ([`super::state::State::refetch`]); or, when a whole-tree pass is due
    /// or the link's target is not known yet, the whole index
    /// ([`FetchDir::fetch_index_until`]). Returns its name, content and layout.
    pub(super) fn fetch_principal(&mut self, dir: &FetchDir) -> Result<(Fetched, Layout)> {
        let remote = self.cfg.remote.clone();
        let last = self.state.principal.clone();
        let whole = self.bootstrap_due() || (remote.is_link() && last.is_none());
        let indexed = whole && self.fetch_index(dir)?;
        if !indexed {
            let mut names: Vec<&str> = vec![&remote.name];
            if remote.is_link() {
                names.extend(last.as_deref());
            }
            let mut refetch = self.state.refetch.clone();
            refetch.extend(self.behind_names());
            for n in refetch.iter().map(String::as_str) {
                if remote::check_name(n).is_ok() && !names.contains(&n) {
                    names.push(n);
                }
            }
            self.fetch(dir, &names)?;
        }
        self.state.refetch.clear();
        let name = if remote.is_link() {
            let target = dir
                .link_target(&remote.name)?
                .with_context(|| format!("remote {} does not exist", remote.source(&remote.name)))?;
            if !indexed && !dir.landed(&target) {
                // The link points elsewhere than last time.
                self.fetch(dir, &[&target])?;
            }
            target
        } else {
            remote.name.clone()
        };
        // In place, whether or not the rest of the index still arrives.
        let rf = dir
            .read_landed(&name, self.cfg.max_recentfile_size)?
            .with_context(|| format!("remote principal {} does not exist", remote.source(&name)))?;
        let layout = remote::check_meta(&name, &rf)?;
        if indexed {
            // Before anything else is fetched (the whole tree, at once in
            // a first pass), the origin must have read every recentfile we
            // install: they then list nothing newer than that tree. A file
            // in place has been read; the call's teardown may go on.
            let names: Vec<String> = layout.intervals.iter().map(|iv| layout.name_of(iv)).collect();
            dir.wait_landed(&names)?;
        }
        Ok((Fetched { name, rf }, layout))
    }

    /// The principal for a pass: the one the preflight fetched, or a new fetch.
    fn principal(&mut self) -> Result<Principal> {
        if let Some(p) = self.prefetched.take() {
            return Ok(p);
        }
        let dir = self.fetch_dir()?;
        let (p, l) = self.fetch_principal(&dir)?;
        Ok((dir, p, l))
    }

    /// Run one pass.
    pub fn pass(&mut self) -> Result<PassReport> {
        let t0 = Instant::now();
        let started = self.clock.now();
        let mut rep = PassReport { kind: "pass", dry_run: self.cfg.dry_run, ..PassReport::default() };
        self.future_seen.clear();
        if self.cap_done() {
            // Written by an rrr that let the future in, or under a clock
            // that was wrong: what is done cannot be told any more.
            tracing::warn!(
                "the done-set reached beyond the clock plus one hour: forgetting what is done \
                 and resyncing"
            );
            self.state.forget_done();
        }
        let res = self.pass_inner(&mut rep);
        self.cap_done();
        rep.seconds = t0.elapsed().as_secs_f64();
        rep.newest_applied = self.state.newest_applied.clone();
        rep.future = self.future_seen.len() as u64;
        if rep.future > 0 {
            let limit = self.future_limit();
            let (e, p) = self.future_seen.iter().min().cloned().unwrap_or_default();
            tracing::warn!(
                "{} events more than an hour ahead of the clock (after {limit}) are \
                 not taken yet, e.g. {e} {}",
                rep.future,
                shown_path(&p)
            );
        }
        self.state.future_events = rep.future;
        rep.failing = self
            .state
            .failing
            .iter()
            .map(|f| FailingReport {
                path: f.path.clone(),
                epoch: f.epoch.clone(),
                message: f.message.clone(),
                attempts: f.attempts,
            })
            .collect();
        self.state.counters.passes += 1;
        match res {
            Ok(()) => {
                rep.ok = rep.errors.is_empty();
                let outcome = match (rep.ok, rep.mass_deletes_held) {
                    (false, _) => Outcome::Failed,
                    (true, true) => Outcome::Held,
                    (true, false) => Outcome::Success,
                };
                self.state.record_attempt(&started, outcome, rep.errors.first().map(String::as_str), &self.clock.now());
                if rep.complete {
                    self.state.last_complete = Some(self.clock.now());
                }
                self.save()?;
                Ok(rep)
            }
            Err(e) => {
                // An interrupted pass is recorded as such: not a failure, not running.
                let outcome =
                    if e.downcast_ref::<Interrupted>().is_some() { Outcome::Interrupted } else { Outcome::Failed };
                self.state.record_attempt(&started, outcome, Some(&format!("{e:#}")), &self.clock.now());
                let _ = self.save();
                Err(e)
            }
        }
    }

    fn pass_inner(&mut self, rep: &mut PassReport) -> Result<()> {
        let (dir, principal, layout) = match self.principal() {
            Ok(x) => x,
            Err(e) => {
                if e.downcast_ref::<Interrupted>().is_none() {
                    let class = if e.downcast_ref::<RsyncError>().is_some() { "fetch" } else { "index" };
                    self.state.error(class);
                }
                return Err(e);
            }
        };
        // Dirtymark: a change means events were inserted into the past.
        let dm = principal.rf.meta.dirtymark.clone();
        if self.state.dirtymark != dm && !self.state.done_union().is_empty() {
            tracing::info!(
                "dirtymark changed ({} -> {}): forgetting what is done and resyncing",
                self.state.dirtymark.as_ref().map_or("-", |d| d.as_str()),
                dm.as_ref().map_or("-", |d| d.as_str())
            );
            self.state.forget_done();
            rep.dirtymark_changed = true;
        }
        self.state.dirtymark = dm;
        self.state.filenameroot = Some(layout.filenameroot.clone());
        self.state.principal = Some(principal.name.clone());

        if self.bootstrap_due() {
            self.full = false;
            rep.bootstrap = true;
            // The pass ends with it: what the origin recorded meanwhile is
            // the next pass's (one more connection here would cost as much
            // as the rest of a small first mirror).
            return self.bootstrap(&dir, principal, &layout, rep);
        }
        self.incremental(&dir, principal, &layout, rep)
    }

    /// Walk the recentfiles smallest first (module docs, step 3).
    fn incremental(&mut self, dir: &FetchDir, principal: Fetched, layout: &Layout, rep: &mut PassReport) -> Result<()> {
        let ignore = Self::ignore_set(layout);
        let limit = self.future_limit();
        // path -> newest epoch seen in this pass (smaller files first).
        let mut newest_seen: HashMap<RelPath, Epoch> = HashMap::new();
        // Paths rsync was asked for in this pass.
        let mut attempted: HashSet<RelPath> = HashSet::new();
        let mut all_done = true;
        let principal_name = principal.name.clone();
        let mut current = principal;
        let mut i = 0;
        // Pending deletes of an earlier run go first into the delete queue.
        let mut carried: Vec<PendingDelete> = std::mem::take(&mut self.state.pending_deletes);
        // Files whose events are done, waiting to be installed until our
        // copy of the next larger file is (see [`Mirror::our_copy`]).
        let mut waiting: Vec<String> = Vec::new();
        let note_seen = |seen: &mut HashMap<RelPath, Epoch>, rf: &Recentfile| {
            for e in rf.events.iter().filter(|e| e.epoch <= limit) {
                seen.entry(e.path.clone()).or_insert_with(|| e.epoch.clone());
            }
        };
        if !self.cfg.dry_run && !self.state.failing.is_empty() {
            // Before the principal is installed, so that what arrives is in it.
            let mut in_principal = HashMap::new();
            note_seen(&mut in_principal, &current.rf);
            self.retry_failing(&ignore, &in_principal, &mut attempted, rep)?;
        }
        loop {
            rep.read.push(current.name.clone());
            let file_ok = self.process_file(&current, &ignore, &mut newest_seen, &mut carried, &mut attempted, rep)?;
            let is_last = i + 1 >= layout.intervals.len();
            if file_ok {
                // Every event of this file is done (but the future ones):
                // record its whole span, up to the clock plus one hour.
                let ds = self.state.done.entry(current.name.clone()).or_default();
                let newest = current.rf.events.iter().find(|e| e.epoch <= limit).map(|e| e.epoch.clone());
                let oldest = current.rf.oldest().map(|e| e.epoch.clone());
                if let (Some(n), Some(o)) = (&newest, &oldest) {
                    if *o <= *n {
                        ds.insert(n.clone(), o.clone());
                    }
                }
                if is_last {
                    // The last file (Z) knows everything older.
                    let top = newest.clone().or(oldest.filter(|o| *o <= limit)).unwrap_or_else(done::beginning);
                    ds.insert(top, done::beginning());
                }
            } else {
                all_done = false;
            }
            let next_name = (!is_last).then(|| layout.name_of(&layout.intervals[i + 1]));
            let ours = next_name.as_deref().map(|n| self.our_copy(&current.rf, n));
            let gap = ours == Some(OurCopy::Gap);
            let have_next = next_name.as_deref().is_some_and(|n| dir.has(n));
            // Does this file reach what is done already? If not, the next
            // one is needed now (a connection of its own unless fetched
            // already): the mirror fell further behind than this file spans.
            let reaches = is_last || {
                let union = self.state.done_union();
                let probe =
                    current.rf.oldest().map(|e| e.epoch.clone()).or_else(|| current.rf.meta.merged.epoch().cloned());
                probe.as_ref().is_some_and(|p| union.complete_through(p))
            };
            let walk_on = !reaches || (gap && have_next);
            if !file_ok || (gap && !walk_on) {
                // Not installed in this pass: this file (its events are not
                // all done), or our copy of the next one is too old and was
                // not fetched. The next pass fetches them with the principal;
                // until then the files waiting here keep their old copies.
                let names = waiting.drain(..).chain([current.name.clone()]).chain(next_name.clone().filter(|_| gap));
                for n in names.filter(|n| *n != principal_name) {
                    if !self.state.refetch.contains(&n) {
                        self.state.refetch.push(n);
                    }
                }
            } else if gap {
                waiting.push(current.name.clone());
            } else {
                if ours == Some(OurCopy::Missing) && !have_next && current.rf.meta.merged.epoch().is_some() {
                    // The origin has merged this file into the next one, of
                    // which we have no copy yet: fetch it with the next
                    // principal (no connection of its own).
                    self.state.refetch.extend(next_name.clone());
                }
                self.install(dir, &current, &ignore)?;
                if i == 0 {
                    self.install_link(&current.name)?;
                }
                self.install_waiting(dir, &mut waiting, &ignore, &principal_name)?;
                if walk_on {
                    // Else the pass saves at its end, right after this.
                    self.save()?;
                }
            }
            let Some(next_name) = next_name.filter(|_| walk_on) else { break };
            self.check_stop()?;
            if !have_next {
                self.fetch(dir, &[&next_name])?;
            }
            let Some(rf) = dir.read(&next_name, self.cfg.max_recentfile_size)? else {
                // The origin has not written it yet: nothing older is known.
                break;
            };
            remote::check_meta(&next_name, &rf)?;
            note_seen(&mut newest_seen, &current.rf);
            current = Fetched { name: next_name, rf };
            i += 1;
        }
        note_seen(&mut newest_seen, &current.rf);
        // The origin has no next file after all: nothing to wait for.
        self.install_waiting(dir, &mut waiting, &ignore, &principal_name)?;
        if !self.cfg.dry_run {
            // Pending deletes that no file of this pass superseded are still owed.
            if !carried.is_empty() {
                self.apply_deletes(&ignore, carried, &newest_seen, rep, &mut |_, _| {})?;
            }
            // A newer event of the path (a transfer or a delete) replaced it.
            let superseded =
                |f: &Failing| newest_seen.get(&f.path).is_some_and(|n| f.epoch.as_ref().is_none_or(|e| n > e));
            self.state.failing.retain(|f| attempted.contains(&f.path) || !superseded(f));
        }
        rep.complete = all_done
            && rep.errors.is_empty()
            && self.state.pending_deletes.is_empty()
            && !self.state.resync
            && !self.cfg.dry_run;
        Ok(())
    }

    /// Handle the not-done events of one file. Returns true when all its
    /// events are done afterwards (but those from the future).
    fn process_file(
        &mut self,
        f: &Fetched,
        ignore: &IgnoreSet,
        newest_seen: &mut HashMap<RelPath, Epoch>,
        carried: &mut Vec<PendingDelete>,
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<bool> {
        let union = self.state.done_union();
        self.refuse_skipped(f, &union, rep);
        let limit = self.future_limit();
        let epochs: Vec<&Epoch> = f.rf.events.iter().map(|e| &e.epoch).collect();
        let mut mark: Vec<usize> = Vec::new();
        let mut news: Vec<usize> = Vec::new();
        let mut dels: Vec<usize> = Vec::new();
        let mut safe_dirs = HashSet::new();
        let mut seen_here: HashMap<&RelPath, &Epoch> = HashMap::new();
        // New events whose place holds something of another type.
        let mut retyped: Vec<usize> = Vec::new();
        for (ix, e) in f.rf.events.iter().enumerate() {
            if union.covered(&e.epoch) {
                continue;
            }
            if e.epoch > limit {
                // Not done, not published, taken when its time has come.
                self.future_seen.insert((e.epoch.as_str().to_string(), e.path.clone()));
                continue;
            }
            if self.is_excluded(&e.path) {
                mark.push(ix);
                continue;
            }
            let superseded = newest_seen.get(&e.path).is_some_and(|n| *n >= e.epoch)
                || seen_here.get(&e.path).is_some_and(|n| **n > e.epoch);
            seen_here.entry(&e.path).or_insert(&e.epoch);
            if superseded {
                mark.push(ix);
                continue;
            }
            if let Some(reason) = check_event_path(&self.cfg.localroot, &e.path, ignore, &mut safe_dirs) {
                match (e.kind, blocked_by(&self.cfg.localroot, &e.path, ignore)) {
                    // The origin replaced a file by a directory: placed below.
                    (EventKind::New, Some(_)) => retyped.push(ix),
                    // Nothing of ours can be below a file.
                    (EventKind::Delete, Some((_, false))) => mark.push(ix),
                    _ => {
                        refuse(rep, &mut self.state.counters, &f.name, e, reason);
                        mark.push(ix);
                    }
                }
                continue;
            }
            match e.kind {
                EventKind::New => {
                    if fs::symlink_metadata(self.cfg.localroot.join(&e.path)).is_ok_and(|m| m.is_dir()) {
                        // The origin replaced a directory by a file.
                        retyped.push(ix);
                    }
                    news.push(ix);
                }
                EventKind::Delete if self.cfg.skip_deletes => {
                    rep.deletes_skipped += 1;
                    mark.push(ix);
                }
                EventKind::Delete => dels.push(ix),
            }
        }
        // Type changes: the deletes that stand in the way of a new event
        // (of the parent it needs as a directory, or below the directory it
        // replaces), older than it, are applied before the transfers.
        let newer = |p: &RelPath, e: &Epoch| {
            newest_seen.get(p).is_some_and(|n| n > e) || seen_here.get(p).is_some_and(|n| *n > e)
        };
        let mut in_the_way: HashSet<usize> = HashSet::new();
        retyped.retain(|&ix| {
            let e = &f.rf.events[ix];
            let below = format!("{}/", e.path);
            let parent = blocked_by(&self.cfg.localroot, &e.path, ignore);
            let first: Vec<usize> = dels
                .iter()
                .copied()
                .filter(|&d| {
                    let de = &f.rf.events[d];
                    de.epoch < e.epoch
                        && (parent.as_ref().is_some_and(|(p, _)| *p == de.path) || de.path.starts_with(&below))
                })
                .collect();
            if let Some((p, true)) = &parent {
                if first.is_empty() && !newer(p, &e.epoch) {
                    // A symlinked parent the origin did not delete: hostile.
                    let reason = format!("parent {} is a symlink", shown_path(p));
                    refuse(rep, &mut self.state.counters, &f.name, e, reason);
                    mark.push(ix);
                    return false;
                }
            }
            in_the_way.extend(first);
            if !news.contains(&ix) {
                news.push(ix);
            }
            true
        });
        news.sort_unstable();
        if !self.cfg.dry_run {
            let ds = self.state.done.entry(f.name.clone()).or_default();
            ds.register(&epochs, mark.iter().copied());
        }
        // Deletes are saved as pending before any transfer.
        let mut pending: Vec<PendingDelete> = dels
            .iter()
            .map(|&ix| PendingDelete { epoch: f.rf.events[ix].epoch.clone(), path: f.rf.events[ix].path.clone() })
            .collect();
        if !carried.is_empty() {
            let here: HashMap<&RelPath, &Epoch> = f.rf.events.iter().map(|e| (&e.path, &e.epoch)).rev().collect();
            carried.retain(|p| {
                let newer = here.get(&p.path).is_some_and(|e| **e > p.epoch);
                let same = pending.iter().any(|q| q.path == p.path);
                !(newer || same)
            });
        }
        self.state.pending_deletes = pending.clone();
        self.state.pending_deletes.extend(carried.iter().cloned());
        if !pending.is_empty() {
            // Before any transfer. What else this file's events decided
            // is saved with the next chunk or at the end of the pass.
            self.save()?;
        }
        if self.cfg.dry_run {
            for &ix in &news {
                rep.would.push(format!("new {}", f.rf.events[ix].path));
            }
            for &ix in &dels {
                rep.would.push(format!("delete {}", f.rf.events[ix].path));
            }
            return Ok(news.is_empty() && dels.is_empty());
        }
        let name = f.name.clone();
        let mut done_ix: Vec<usize> = Vec::new();
        let by_key: HashMap<(RelPath, String), usize> = dels
            .iter()
            .map(|&ix| ((f.rf.events[ix].path.clone(), f.rf.events[ix].epoch.as_str().to_string()), ix))
            .collect();
        if !retyped.is_empty() {
            let (first, rest): (Vec<PendingDelete>, Vec<PendingDelete>) =
                std::mem::take(&mut pending).into_iter().partition(|p| {
                    by_key
                        .get(&(p.path.clone(), p.epoch.as_str().to_string()))
                        .is_some_and(|ix| in_the_way.contains(ix))
                });
            self.apply_deletes(ignore, first, newest_seen, rep, &mut |p, _| {
                if let Some(ix) = by_key.get(&(p.path.clone(), p.epoch.as_str().to_string())) {
                    done_ix.push(*ix);
                }
            })?;
            // What --max-delete left of them goes with the rest.
            pending = std::mem::take(&mut self.state.pending_deletes);
            pending.extend(rest);
            self.state.pending_deletes = pending.clone();
            self.state.pending_deletes.extend(carried.iter().cloned());
            let mut unplaced = Vec::new();
            for &ix in &retyped {
                let e = &f.rf.events[ix];
                let below = format!("{}/", e.path);
                let under_newer = seen_here.iter().any(|(p, n)| p.starts_with(&below) && **n > e.epoch)
                    || newest_seen.iter().any(|(p, n)| p.starts_with(&below) && *n > e.epoch);
                let parent_newer = |p: &RelPath| newer(p, &e.epoch);
                if self.place(&e.path, &e.epoch, ignore, &parent_newer, under_newer, rep) != Placement::Go {
                    unplaced.push(ix);
                }
            }
            news.retain(|ix| !unplaced.contains(ix));
            done_ix.extend(unplaced);
        }
        let transfers_ok = self.transfer(f, &epochs, &news, ignore, attempted, rep)?;
        self.check_stop()?;
        abort_point("before-deletes", 0);
        // Apply this file's deletes (and mark them done one by one).
        let all = std::mem::take(&mut pending);
        let left = self.apply_deletes(ignore, all, newest_seen, rep, &mut |p, _| {
            if let Some(ix) = by_key.get(&(p.path.clone(), p.epoch.as_str().to_string())) {
                done_ix.push(*ix);
            }
        })?;
        let ds = self.state.done.entry(name).or_default();
        ds.register(&epochs, done_ix.iter().copied());
        self.state.pending_deletes.extend(carried.iter().cloned());
        // Saved by the caller: repeating a delete is a no-op.
        Ok(transfers_ok && left == 0)
    }
}
