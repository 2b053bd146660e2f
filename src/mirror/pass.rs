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
use super::transport::{Failure, Output};
use super::Mirror;
use crate::done;
use crate::epoch::Epoch;
use crate::recentfile::{shown_path, EventKind, Recentfile, RelPath};
use crate::sys::signals::Interrupted;
use crate::tree::IgnoreSet;
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
        let what = format!("fetching {} from {}", names.join(" "), self.cfg.remote.root);
        self.watched_fetch(|m, watch| {
            let transport = m.transport.clone();
            m.with_retries(&what, || transport.fetch(dir, names, watch))
        })
    }

    /// Run `fetch` with a [`FetchWatch`]: `--max-recentfile-size` enforced
    /// by rsync, and, once rsync has said something or been quiet for a
    /// while (a slow link, a large principal), heartbeats and progress
    /// lines as the bootstrap's (module `pass_progress`); a fetch that ends
    /// first writes neither.
    fn watched_fetch<T>(&mut self, fetch: impl FnOnce(&mut Self, &mut FetchWatch<'_>) -> Result<T>) -> Result<T> {
        let mut hook = self.on_heartbeat.take();
        let (bar, started, note) = (self.cfg.progress, self.clock.now(), self.attempt.clone());
        let res = {
            let mut beat = Some(self.heartbeat_writer(&mut hook));
            let mut reporter: Option<Reporter<'_>> = None;
            let res = {
                let mut on_output = |said: Output<'_>| {
                    let r = reporter.get_or_insert_with(|| {
                        let beat = beat.take().expect("one reporter");
                        Reporter::new(bar, "recentfiles", started.clone(), beat).watching(&note)
                    });
                    r.output(said);
                };
                let mut watch = FetchWatch {
                    max_size: self.cfg.max_recentfile_size,
                    on_output: &mut on_output,
                    quiet: super::pass_progress::quiet_period(),
                };
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
        let what = format!("fetching the recentfiles of {}", remote.root);
        let mut principal_landed = |d: &FetchDir| {
            if !remote.is_link() {
                return d.landed(&remote.name);
            }
            d.link_landed(&remote.name)
        };
        self.watched_fetch(|m, watch| {
            let transport = m.transport.clone();
            m.with_retries(&what, || transport.fetch_index(dir, watch, &mut principal_landed))
        })
    }

    /// The larger recentfiles a mirror that fell behind needs in this pass,
    /// to fetch with the principal instead of one connection each: the file
    /// after each one whose interval is shorter than the time since the
    /// last complete pass (after a day down, 6h and 1d). By our copies'
    /// names; a guess (a file may span more than its interval) that costs
    /// bytes, never a connection, when it is wrong.
    fn behind_names(&self) -> Vec<String> {
        let last = [&self.state.last_complete, &self.state.caught_up].into_iter().flatten().max();
        let Some(last) = last else { return Vec::new() };
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
        if self.cfg.upstreams.len() <= 1 {
            return self.fetch_principal_from(dir);
        }
        // Several upstreams: this pass reads the freshest usable one; when
        // that one fails to serve a principal that reads and verifies (a
        // broken or hostile upstream claiming the freshest index), the next
        // usable one, each at most once (mirror::upstreams).
        let mut asked = self.ask_upstreams()?;
        self.choose_upstream(&mut asked, false)?;
        loop {
            // A beacon accepted from an upstream that then failed is not
            // the floor the next one is judged by.
            // Nor are the files the last pass asked for forgotten.
            let (trusted, refetch) = (self.state.trusted.clone(), self.state.refetch.clone());
            match self.fetch_principal_from(dir) {
                Err(e) if e.downcast_ref::<Interrupted>().is_none() => {
                    (self.state.trusted, self.state.refetch) = (trusted, refetch);
                    self.reject_chosen(&mut asked, &e);
                    dir.clear()?;
                    self.choose_upstream(&mut asked, true)?;
                }
                res => return res,
            }
        }
    }

    /// [`Mirror::fetch_principal`] from the upstream chosen (or the one).
    fn fetch_principal_from(&mut self, dir: &FetchDir) -> Result<(Fetched, Layout)> {
        let remote = self.cfg.remote.clone();
        let last = self.state.principal.clone();
        let whole = self.bootstrap_due() || (remote.is_link() && last.is_none());
        let indexed = whole && self.fetch_index(dir)?;
        if !indexed {
            let mut names: Vec<&str> = vec![&remote.name];
            if remote.is_link() {
                names.extend(last.as_deref());
            }
            // The origin's beacon, in the same call, once the upstream is
            // known to have one (mirror::freshness: asking for a missing
            // file costs a daemon slot's teardown).
            let principal = last.as_deref().unwrap_or(&remote.name);
            let beacon = ::recentfile::beacon::beacon_name(principal);
            let signature = ::recentfile::beacon::signature_name(principal);
            let probed = self.selected.as_ref().is_some_and(|s| s.has_beacon);
            if self.state.origin_beacon.is_some() || probed {
                names.push(&beacon);
            }
            // Its signature too, republished with it (mirror::freshness).
            if self.state.origin_beacon.as_ref().is_some_and(|h| h.signed) {
                names.push(&signature);
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
                .resolve_principal(&remote.name, self.cfg.max_recentfile_size)?
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
        // Every recentfile of this fetch, before its events are used (the
        // upstream's answer included).
        let names: Vec<String> = layout.intervals.iter().map(|iv| layout.name_of(iv)).collect();
        self.trust_fetched(dir, &name, &names)?;
        let fetched = Fetched { name, rf };
        self.check_upstream_answer(dir, &fetched, &layout.filenameroot)?;
        Ok((fetched, layout))
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

    /// Run one pass: the work ([`Mirror::pass_inner`]), then the report's
    /// summary ([`Mirror::summarize`]) and the outcome recorded in the
    /// state ([`Mirror::record_outcome`]).
    pub fn pass(&mut self) -> Result<PassReport> {
        let t0 = Instant::now();
        let started = self.clock.now();
        let mut rep = PassReport { kind: "pass", dry_run: self.cfg.dry_run, ..PassReport::default() };
        self.future_seen.clear();
        self.files_counted = None;
        self.ride_along.clear();
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
        self.summarize(&mut rep);
        self.state.counters.passes += 1;
        self.record_outcome(res, &started, rep)
    }

    /// What the report tells beyond the work itself: the newest applied
    /// epoch, the events held back as future (one warning for all) and the
    /// failing paths. Changes the state in memory only (its count of
    /// future events).
    fn summarize(&mut self, rep: &mut PassReport) {
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
        self.state.held_deletes = rep.deletes_held;
        rep.failing = self.state.failing.iter().map(FailingReport::from).collect();
        rep.quarantined = self.state.quarantined.iter().map(FailingReport::from).collect();
        rep.tampered = self.state.tampered.clone();
        let now = self.clock.now_f64();
        rep.missing_upstream = self.state.missing_upstream(now).map(FailingReport::from).collect();
        if let Some(m) = rep.missing_upstream.first() {
            tracing::warn!(
                "{} missing upstream: listed by new events, not at the origin, and no delete event for {:.0} \
                 minutes (e.g. {}); the mirror is not complete until they arrive or are deleted",
                crate::output::human::plural(rep.missing_upstream.len() as u64, "path", "paths"),
                super::state::MISSING_GRACE_SECS / 60.0,
                shown_path(&m.path)
            );
        }
    }

    /// Record how the pass ended (success, held mass deletes, failure or
    /// interruption, with its first error) and save the state, which is
    /// what `status` and `check` read. A kill before this save leaves the
    /// state of the pass's last chunk, with the previous attempt's record.
    /// A failed pass returns its own error even when the save fails.
    fn record_outcome(&mut self, res: Result<()>, started: &Epoch, mut rep: PassReport) -> Result<PassReport> {
        match res {
            Ok(()) => {
                rep.ok = rep.errors.is_empty();
                let outcome = match (rep.ok, rep.mass_deletes_held) {
                    (false, _) => Outcome::Failed,
                    (true, true) => Outcome::Held,
                    (true, false) => Outcome::Success,
                };
                self.state.record_attempt(started, outcome, rep.errors.first().map(String::as_str), &self.clock.now());
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
                self.state.record_attempt(started, outcome, Some(&format!("{e:#}")), &self.clock.now());
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
                    let class = if e.downcast_ref::<Failure>().is_some() { "fetch" } else { "index" };
                    self.state.error(class);
                }
                return Err(e);
            }
        };
        self.record_selection();
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
            self.recheck_quarantine = std::mem::take(&mut self.full);
            rep.bootstrap = true;
            // The pass ends with it: what the origin recorded meanwhile is
            // the next pass's (one more connection here would cost as much
            // as the rest of a small first mirror).
            let name = principal.name.clone();
            self.bootstrap(&dir, principal, &layout, rep)?;
            return self.install_origin_beacon(&dir, &name);
        }
        let name = principal.name.clone();
        self.incremental(&dir, principal, &layout, rep)?;
        self.install_origin_beacon(&dir, &name)
    }
}

/// What one incremental walk carries from file to file: what it has seen,
/// asked rsync for and still owes. Each step of the walk reads and updates
/// it, so what is done, installed or owed after a step is in one place.
struct Walk<'r> {
    ignore: IgnoreSet,
    /// Events newer than this are from the future: not taken yet.
    limit: Epoch,
    principal_name: String,
    /// path -> newest epoch seen in this pass (smaller files first).
    newest_seen: HashMap<RelPath, Epoch>,
    /// Paths rsync was asked for in this pass.
    attempted: HashSet<RelPath>,
    /// Pending deletes of an earlier run not yet superseded by a file of
    /// this pass; applied at the end of the walk.
    carried: Vec<PendingDelete>,
    /// Files whose events are done, waiting to be installed until our
    /// copy of the next larger file is (see [`Mirror::our_copy`]).
    waiting: Vec<String>,
    /// Every file walked so far had all its events done.
    all_done: bool,
    rep: &'r mut PassReport,
}

impl Walk<'_> {
    /// Note the paths of `rf` as seen (the first, newest, epoch wins).
    fn note_seen(&mut self, rf: &Recentfile) {
        note_seen(&mut self.newest_seen, rf, &self.limit);
    }
}

/// A newer event of `p` than `e` was seen in an earlier file (`seen`)
/// or in this one (`here`).
fn newer_seen(seen: &HashMap<RelPath, Epoch>, here: &HashMap<&RelPath, &Epoch>, p: &RelPath, e: &Epoch) -> bool {
    seen.get(p).is_some_and(|n| n > e) || here.get(p).is_some_and(|n| *n > e)
}

/// A newer event than `e` was seen of a path below `dir/`.
fn newer_below(seen: &HashMap<RelPath, Epoch>, here: &HashMap<&RelPath, &Epoch>, dir: &RelPath, e: &Epoch) -> bool {
    let below = format!("{dir}/");
    here.iter().any(|(p, n)| p.starts_with(&below) && **n > *e)
        || seen.iter().any(|(p, n)| p.starts_with(&below) && n > e)
}

/// Record into `seen` the newest epoch of each path of `rf` not from the future.
fn note_seen(seen: &mut HashMap<RelPath, Epoch>, rf: &Recentfile, limit: &Epoch) {
    for e in rf.events.iter().filter(|e| e.epoch <= *limit) {
        seen.entry(e.path.clone()).or_insert_with(|| e.epoch.clone());
    }
}

/// One file's not-done events, sorted by what a pass does with them
/// (indices into the file's events).
#[derive(Default)]
struct Sorted<'f> {
    /// Done without any work: excluded, superseded, refused, skipped.
    mark: Vec<usize>,
    /// To transfer, in file order.
    news: Vec<usize>,
    /// To delete.
    dels: Vec<usize>,
    /// New events whose place holds something of another type.
    retyped: Vec<usize>,
    /// The deletes (of `dels`) to apply before the retyped ones are placed.
    in_the_way: HashSet<usize>,
    /// path -> newest epoch in this file.
    seen_here: HashMap<&'f RelPath, &'f Epoch>,
}

/// A delete event's key, to find its index again when it was applied.
type DeleteKey = (RelPath, String);

fn delete_key(path: &RelPath, epoch: &Epoch) -> DeleteKey {
    (path.clone(), epoch.as_str().to_string())
}

/// Where a walk stands after one file: the next file's name, and whether
/// the walk goes on to it.
struct Next {
    name: Option<String>,
    walk_on: bool,
    have_next: bool,
    ours: Option<OurCopy>,
}

impl<'a> Mirror<'a> {
    /// Walk the recentfiles smallest first (module docs, step 3), one
    /// [`Mirror::walk_file`] each, until a file reaches what is done.
    fn incremental(&mut self, dir: &FetchDir, principal: Fetched, layout: &Layout, rep: &mut PassReport) -> Result<()> {
        let mut w = Walk {
            ignore: Self::ignore_set(layout),
            limit: self.future_limit(),
            principal_name: principal.name.clone(),
            newest_seen: HashMap::new(),
            attempted: HashSet::new(),
            // Pending deletes of an earlier run go first into the delete queue.
            carried: std::mem::take(&mut self.state.pending_deletes),
            waiting: Vec::new(),
            all_done: true,
            rep,
        };
        self.retry_before_walk(&principal, &mut w)?;
        let mut current = principal;
        let mut i = 0;
        loop {
            let next = self.walk_file(dir, &current, layout, i, &mut w)?;
            let Some(next_name) = next.name.filter(|_| next.walk_on) else { break };
            let Some(rf) = self.next_file(dir, &next_name, next.have_next)? else { break };
            w.note_seen(&current.rf);
            current = Fetched { name: next_name, rf };
            i += 1;
        }
        w.note_seen(&current.rf);
        self.finish_walk(dir, &mut w)
    }

    /// Retry the failing paths (and the missing ones with them) before the
    /// principal is installed, so that what arrives is in it; without
    /// failing paths, the missing ones ride along with the pass's first
    /// transfer ([`Mirror::ride_along`]). Each path retried is in `attempted`.
    fn retry_before_walk(&mut self, principal: &Fetched, w: &mut Walk<'_>) -> Result<()> {
        if self.cfg.dry_run || (self.state.failing.is_empty() && self.state.missing.is_empty()) {
            return Ok(());
        }
        let mut in_principal = HashMap::new();
        note_seen(&mut in_principal, &principal.rf, &w.limit);
        if self.state.failing.is_empty() {
            self.ride_along = self.missing_to_retry(&w.ignore, &in_principal, &w.attempted);
            return Ok(());
        }
        self.retry_failing(&w.ignore, &in_principal, &mut w.attempted, w.rep)
    }

    /// Walk file `i` of the layout: handle its events, record its span
    /// done when all are, then install it, keep it waiting or leave it to
    /// the next pass ([`Mirror::install_or_defer`]). Returns where the
    /// walk goes next.
    fn walk_file(&mut self, dir: &FetchDir, f: &Fetched, layout: &Layout, i: usize, w: &mut Walk<'_>) -> Result<Next> {
        w.rep.read.push(f.name.clone());
        let file_ok = self.process_file(f, w)?;
        let is_last = i + 1 >= layout.intervals.len();
        if file_ok {
            self.record_file_done(f, is_last, &w.limit);
        } else {
            w.all_done = false;
        }
        let name = (!is_last).then(|| layout.name_of(&layout.intervals[i + 1]));
        let ours = name.as_deref().map(|n| self.our_copy(&f.rf, n));
        let gap = ours == Some(OurCopy::Gap);
        let have_next = name.as_deref().is_some_and(|n| dir.has(n));
        // A file that does not reach what is done needs the next one now
        // (a connection of its own unless fetched already).
        let walk_on = !(is_last || self.reaches_done(&f.rf)) || (gap && have_next);
        let next = Next { name, walk_on, have_next, ours };
        self.install_or_defer(dir, f, i, file_ok, &next, w)?;
        Ok(next)
    }

    /// Record the whole span of `f`, every event of which is done (but the
    /// future ones), up to the clock plus one hour; for the last file (Z)
    /// also everything older. In memory only: saved with the install that
    /// follows or at the end of the pass.
    fn record_file_done(&mut self, f: &Fetched, is_last: bool, limit: &Epoch) {
        let ds = self.state.done.entry(f.name.clone()).or_default();
        let newest = f.rf.events.iter().find(|e| e.epoch <= *limit).map(|e| e.epoch.clone());
        let oldest = f.rf.oldest().map(|e| e.epoch.clone());
        if let (Some(n), Some(o)) = (&newest, &oldest) {
            if *o <= *n {
                ds.insert(n.clone(), o.clone());
            }
        }
        if is_last {
            // The last file (Z) knows everything older.
            let top = newest.or(oldest.filter(|o| *o <= *limit)).unwrap_or_else(done::beginning);
            ds.insert(top, done::beginning());
        }
    }

    /// Does `rf` reach what is done already? If not, the mirror fell
    /// further behind than this file spans.
    fn reaches_done(&self, rf: &Recentfile) -> bool {
        let union = self.state.done_union();
        let probe = rf.oldest().map(|e| e.epoch.clone()).or_else(|| rf.meta.merged.epoch().cloned());
        probe.as_ref().is_some_and(|p| union.complete_through(p))
    }

    /// Install `f` with the files waiting for it, keep it waiting for our
    /// copy of the next file, or leave it to the next pass. On return an
    /// installed file is in the target (and the state saved when the walk
    /// goes on); a file left to the next pass is in `refetch`, with those
    /// that waited for it, which keep their old copies.
    fn install_or_defer(
        &mut self,
        dir: &FetchDir,
        f: &Fetched,
        i: usize,
        file_ok: bool,
        next: &Next,
        w: &mut Walk<'_>,
    ) -> Result<()> {
        let gap = next.ours == Some(OurCopy::Gap);
        if !file_ok || (gap && !next.walk_on) {
            // Not installed in this pass: this file (its events are not
            // all done), or our copy of the next one is too old and was
            // not fetched. The next pass fetches them with the principal.
            let later = next.name.clone().filter(|_| gap);
            let names: Vec<String> = w.waiting.drain(..).chain([f.name.clone()]).chain(later).collect();
            for n in names.into_iter().filter(|n| *n != w.principal_name) {
                if !self.state.refetch.contains(&n) {
                    self.state.refetch.push(n);
                }
            }
            return Ok(());
        }
        if gap {
            w.waiting.push(f.name.clone());
            return Ok(());
        }
        if next.ours == Some(OurCopy::Missing) && !next.have_next && f.rf.meta.merged.epoch().is_some() {
            // The origin has merged this file into the next one, of which
            // we have no copy yet: fetch it with the next principal (no
            // connection of its own).
            self.state.refetch.extend(next.name.clone());
        }
        self.install(dir, f, &w.ignore)?;
        if i == 0 {
            self.install_link(&f.name)?;
        }
        self.install_waiting(dir, &mut w.waiting, &w.ignore, &w.principal_name)?;
        if next.walk_on {
            // Else the pass saves at its end, right after this.
            self.save()?;
        }
        Ok(())
    }

    /// Fetch the next larger file unless fetched already, and read it.
    /// None when the origin has not written it yet: nothing older is known.
    fn next_file(&mut self, dir: &FetchDir, name: &str, fetched: bool) -> Result<Option<Recentfile>> {
        self.check_stop()?;
        if !fetched {
            self.fetch(dir, &[name])?;
            let principal = self.state.principal.clone().unwrap_or_default();
            self.trust_fetched(dir, &principal, &[name.to_string()])?;
        }
        let Some(rf) = dir.read(name, self.cfg.max_recentfile_size)? else {
            return Ok(None);
        };
        remote::check_meta(name, &rf)?;
        Ok(Some(rf))
    }

    /// End the walk: install the files still waiting (the origin has no
    /// next file after all), apply the carried deletes no file of this
    /// pass superseded, drop the failing paths a newer event replaced, and
    /// tell whether the pass is complete.
    fn finish_walk(&mut self, dir: &FetchDir, w: &mut Walk<'_>) -> Result<()> {
        self.install_waiting(dir, &mut w.waiting, &w.ignore, &w.principal_name)?;
        if !self.cfg.dry_run {
            if !w.carried.is_empty() {
                let carried = std::mem::take(&mut w.carried);
                self.apply_deletes(&w.ignore, carried, &w.newest_seen, w.rep, &mut |_, _| {})?;
            }
            // A newer event of the path (a transfer or a delete) replaced it.
            let (seen, attempted) = (&w.newest_seen, &w.attempted);
            let superseded = |f: &Failing| seen.get(&f.path).is_some_and(|n| f.epoch.as_ref().is_none_or(|e| n > e));
            self.state.failing.retain(|f| attempted.contains(&f.path) || !superseded(f));
            // A missing path a newer event explains is no longer missing,
            // whether or not it was tried (a delete: the normal case).
            self.state.missing.retain(|m| !superseded(m));
            self.ride_along.clear();
            self.retry_missing_alone(&w.ignore, &w.newest_seen, &mut w.attempted, w.rep)?;
            self.settle_tampered();
        }
        let caught_up = w.all_done
            && w.rep.errors.is_empty()
            && self.state.pending_deletes.is_empty()
            && !self.state.resync
            && !self.cfg.dry_run;
        if caught_up {
            self.state.caught_up = Some(self.clock.now());
        }
        // A tampered path (mirror::staging) is not in the tree: not complete.
        w.rep.complete = caught_up
            && self.state.missing_upstream(self.clock.now_f64()).next().is_none()
            && self.state.tampered.is_empty();
        Ok(())
    }

    /// Handle the not-done events of one file: sort them, save its deletes
    /// as pending, clear the way for type changes, transfer, delete.
    /// Returns true when all its events are done afterwards (but those
    /// from the future). On return the done-set (in memory) holds every
    /// event handled, and the pending deletes are what is left of this
    /// file's and the carried ones; the caller saves.
    fn process_file(&mut self, f: &Fetched, w: &mut Walk<'_>) -> Result<bool> {
        let union = self.state.done_union();
        self.refuse_skipped(f, &union, w.rep);
        let mut s = self.sort_events(f, &union, w);
        self.order_type_changes(f, &mut s, w);
        let epochs: Vec<&Epoch> = f.rf.events.iter().map(|e| &e.epoch).collect();
        if !self.cfg.dry_run {
            self.state.done.entry(f.name.clone()).or_default().register(&epochs, s.mark.iter().copied());
        }
        let mut pending = self.save_pending_deletes(f, &s, w)?;
        if self.cfg.dry_run {
            return Ok(report_would(f, &s, w.rep));
        }
        let by_key: HashMap<DeleteKey, usize> =
            s.dels.iter().map(|&ix| (delete_key(&f.rf.events[ix].path, &f.rf.events[ix].epoch), ix)).collect();
        let mut done_ix: Vec<usize> = Vec::new();
        if !s.retyped.is_empty() {
            self.clear_the_way(f, &mut s, &mut pending, &by_key, &mut done_ix, w)?;
        }
        let transfers_ok = self.transfer(f, &epochs, &s.news, &w.ignore, &mut w.attempted, w.rep)?;
        self.check_stop()?;
        abort_point("before-deletes", 0);
        // Apply this file's deletes (and mark them done one by one).
        let left = self.apply_deletes(&w.ignore, pending, &w.newest_seen, w.rep, &mut |p, _| {
            done_ix.extend(by_key.get(&delete_key(&p.path, &p.epoch)));
        })?;
        self.state.done.entry(f.name.clone()).or_default().register(&epochs, done_ix.iter().copied());
        self.state.pending_deletes.extend(w.carried.iter().cloned());
        // Saved by the caller: repeating a delete is a no-op.
        Ok(transfers_ok && left == 0)
    }

    /// Sort the not-done events of `f` ([`Sorted`]). Changes nothing on
    /// disk or in the done-set; refused events are reported and counted,
    /// events from the future noted.
    fn sort_events<'f>(&mut self, f: &'f Fetched, union: &done::DoneSet, w: &mut Walk<'_>) -> Sorted<'f> {
        let mut s = Sorted::default();
        let mut safe_dirs = HashSet::new();
        for (ix, e) in f.rf.events.iter().enumerate() {
            if union.covered(&e.epoch) {
                continue;
            }
            if e.epoch > w.limit {
                // Not done, not published, taken when its time has come.
                self.future_seen.insert((e.epoch.as_str().to_string(), e.path.clone()));
                continue;
            }
            if self.is_excluded(&e.path) {
                s.mark.push(ix);
                continue;
            }
            let superseded = w.newest_seen.get(&e.path).is_some_and(|n| *n >= e.epoch)
                || s.seen_here.get(&e.path).is_some_and(|n| **n > e.epoch);
            s.seen_here.entry(&e.path).or_insert(&e.epoch);
            if superseded {
                s.mark.push(ix);
                continue;
            }
            if let Some(reason) = check_event_path(&self.cfg.localroot, &e.path, &w.ignore, &mut safe_dirs) {
                match (e.kind, blocked_by(&self.cfg.localroot, &e.path, &w.ignore)) {
                    // The origin replaced a file by a directory: placed below.
                    (EventKind::New, Some(_)) => s.retyped.push(ix),
                    // Nothing of ours can be below a file.
                    (EventKind::Delete, Some((_, false))) => s.mark.push(ix),
                    _ => {
                        refuse(w.rep, &mut self.state.counters, &f.name, e, reason);
                        s.mark.push(ix);
                    }
                }
                continue;
            }
            match e.kind {
                EventKind::New => {
                    if fs::symlink_metadata(self.cfg.localroot.join(&e.path)).is_ok_and(|m| m.is_dir()) {
                        // The origin replaced a directory by a file.
                        s.retyped.push(ix);
                    }
                    s.news.push(ix);
                }
                EventKind::Delete if self.cfg.skip_deletes => {
                    w.rep.deletes_skipped += 1;
                    s.mark.push(ix);
                }
                EventKind::Delete => s.dels.push(ix),
            }
        }
        s
    }

    /// Type changes: the deletes that stand in the way of a retyped event
    /// (of the parent it needs as a directory, or below the directory it
    /// replaces), older than it, go into `in_the_way`, to be applied before
    /// the transfers, and the event joins `news`. One below a symlinked
    /// parent the origin did not delete is refused (hostile) and marked.
    /// Changes nothing on disk.
    fn order_type_changes(&mut self, f: &Fetched, s: &mut Sorted<'_>, w: &mut Walk<'_>) {
        for ix in std::mem::take(&mut s.retyped) {
            let e = &f.rf.events[ix];
            let below = format!("{}/", e.path);
            let parent = blocked_by(&self.cfg.localroot, &e.path, &w.ignore);
            let first: Vec<usize> = s
                .dels
                .iter()
                .copied()
                .filter(|&d| {
                    let de = &f.rf.events[d];
                    de.epoch < e.epoch
                        && (parent.as_ref().is_some_and(|(p, _)| *p == de.path) || de.path.starts_with(&below))
                })
                .collect();
            if let Some((p, true)) = &parent {
                if first.is_empty() && !newer_seen(&w.newest_seen, &s.seen_here, p, &e.epoch) {
                    // A symlinked parent the origin did not delete: hostile.
                    let reason = format!("parent {} is a symlink", shown_path(p));
                    refuse(w.rep, &mut self.state.counters, &f.name, e, reason);
                    s.mark.push(ix);
                    continue;
                }
            }
            s.in_the_way.extend(first);
            if !s.news.contains(&ix) {
                s.news.push(ix);
            }
            s.retyped.push(ix);
        }
        s.news.sort_unstable();
    }

    /// Save the deletes of `f` as pending, with the carried ones it did not
    /// supersede, before any transfer: a kill from here on leaves them
    /// owed, never lost. Returns this file's pending deletes.
    fn save_pending_deletes(&mut self, f: &Fetched, s: &Sorted<'_>, w: &mut Walk<'_>) -> Result<Vec<PendingDelete>> {
        let pending: Vec<PendingDelete> = s
            .dels
            .iter()
            .map(|&ix| PendingDelete { epoch: f.rf.events[ix].epoch.clone(), path: f.rf.events[ix].path.clone() })
            .collect();
        if !w.carried.is_empty() {
            let here: HashMap<&RelPath, &Epoch> = f.rf.events.iter().map(|e| (&e.path, &e.epoch)).rev().collect();
            w.carried.retain(|p| {
                let newer = here.get(&p.path).is_some_and(|e| **e > p.epoch);
                let same = pending.iter().any(|q| q.path == p.path);
                !(newer || same)
            });
        }
        self.state.pending_deletes = pending.clone();
        self.state.pending_deletes.extend(w.carried.iter().cloned());
        if !pending.is_empty() {
            // What else this file's events decided is saved with the next
            // chunk or at the end of the pass.
            self.save()?;
        }
        Ok(pending)
    }

    /// Apply the deletes in the way of the retyped events, then place each
    /// of these (move aside what holds its place). One that cannot be placed
    /// is done without a transfer and leaves `news`. On return the deletes
    /// applied are in `done_ix`, the others (--max-delete) back in
    /// `pending`, and the state's pending deletes are `pending` and the
    /// carried ones (not saved yet).
    fn clear_the_way(
        &mut self,
        f: &Fetched,
        s: &mut Sorted<'_>,
        pending: &mut Vec<PendingDelete>,
        by_key: &HashMap<DeleteKey, usize>,
        done_ix: &mut Vec<usize>,
        w: &mut Walk<'_>,
    ) -> Result<()> {
        let (first, rest): (Vec<PendingDelete>, Vec<PendingDelete>) = std::mem::take(pending)
            .into_iter()
            .partition(|p| by_key.get(&delete_key(&p.path, &p.epoch)).is_some_and(|ix| s.in_the_way.contains(ix)));
        self.apply_deletes(&w.ignore, first, &w.newest_seen, w.rep, &mut |p, _| {
            done_ix.extend(by_key.get(&delete_key(&p.path, &p.epoch)));
        })?;
        // What --max-delete left of them goes with the rest.
        *pending = std::mem::take(&mut self.state.pending_deletes);
        pending.extend(rest);
        self.state.pending_deletes = pending.clone();
        self.state.pending_deletes.extend(w.carried.iter().cloned());
        let mut unplaced = Vec::new();
        for &ix in &s.retyped {
            let e = &f.rf.events[ix];
            let under_newer = newer_below(&w.newest_seen, &s.seen_here, &e.path, &e.epoch);
            let parent_newer = |p: &RelPath| newer_seen(&w.newest_seen, &s.seen_here, p, &e.epoch);
            if self.place(&e.path, &e.epoch, &w.ignore, &parent_newer, under_newer, w.rep) != Placement::Go {
                unplaced.push(ix);
            }
        }
        s.news.retain(|ix| !unplaced.contains(ix));
        done_ix.extend(unplaced);
        Ok(())
    }
}

/// `--dry-run`: report what the events of `f` would do. True when nothing.
fn report_would(f: &Fetched, s: &Sorted<'_>, rep: &mut PassReport) -> bool {
    for &ix in &s.news {
        rep.would.push(format!("new {}", f.rf.events[ix].path));
    }
    for &ix in &s.dels {
        rep.would.push(format!("delete {}", f.rf.events[ix].path));
    }
    s.news.is_empty() && s.dels.is_empty()
}
