//! The rsync calls of a pass: the whole-tree rsync of a bootstrap (its
//! command and its run, the recentfiles read on a second thread meanwhile),
//! the `--files-from` chunks of new events and of failing paths, what rsync
//! really did read from its itemized and `--stats` lines ([`Itemized`]),
//! the paths it could not send recorded as failing, and retries with
//! backoff.

use super::deletes::{Placement, MASS_DELETE_HALF, MASS_DELETE_MIN, MASS_DELETE_SHARE, MAX_DELETE_MSG};
use super::remote::{self, FetchDir, Layout};
use super::report::{abort_point, Fetched, PassReport};
use super::safety::{blocked_by, check_event_path, refuse};
use super::state::{under_any, Expected, Failing, MISSING_GRACE_ATTEMPTS, MISSING_GRACE_SECS};
use super::transport::{Call, Failure, Itemized, Outcome, TreeDeletes, TreeJob};
use super::{Mirror, LOST_FOUND};
use crate::done;
use crate::epoch::Epoch;
use crate::recentfile::{check_relative_path, shown_path, RelPath};
use crate::sys::signals::Interrupted;
use crate::tree::IgnoreSet;
use anyhow::{anyhow, Context, Result};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::time::{Duration, Instant};

/// The recentfiles of a whole-tree pass, read (and their paths interned)
/// on a second thread while the tree is transferred.
struct Index {
    /// The principal, then the larger files the remote has.
    files: Vec<Fetched>,
    /// Per file, per event: the index of its path in `paths`.
    ids: Vec<Vec<u32>>,
    /// Each distinct path as (file, event) of its first event.
    paths: Vec<(usize, usize)>,
    /// Larger files that could not be read or were refused.
    errors: Vec<(String, anyhow::Error)>,
}

impl Index {
    fn read(principal: Fetched, dir: &FetchDir, names: &[String], max_size: u64) -> Index {
        let mut files = vec![principal];
        let mut errors = Vec::new();
        for n in names {
            let read = dir.read(n, max_size).and_then(|rf| match rf {
                Some(rf) => remote::check_meta(n, &rf).map(|_| Some(rf)),
                None => Ok(None),
            });
            match read {
                Ok(Some(rf)) => files.push(Fetched { name: n.clone(), rf }),
                Ok(None) => {}
                Err(e) => errors.push((n.clone(), e)),
            }
        }
        let mut paths = Vec::new();
        let mut ids = Vec::with_capacity(files.len());
        {
            let mut at: foldhash::HashMap<&RelPath, u32> = foldhash::HashMap::default();
            for (fi, f) in files.iter().enumerate() {
                let mut these = Vec::with_capacity(f.rf.events.len());
                for (ei, e) in f.rf.events.iter().enumerate() {
                    let id = *at.entry(&e.path).or_insert_with(|| {
                        paths.push((fi, ei));
                        (paths.len() - 1) as u32
                    });
                    these.push(id);
                }
                ids.push(these);
            }
        }
        Index { files, ids, paths, errors }
    }

    fn path(&self, file: usize, event: usize) -> &RelPath {
        &self.files[file].rf.events[event].path
    }
}

impl<'a> Mirror<'a> {
    /// Sleep up to `d`, waking early when stopped.
    fn nap(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stopped() {
            std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
        }
    }

    /// Run `f` (an rsync call) with retries and backoff; each failure is
    /// reported with the exact command and stderr, and counted. A failure
    /// that no retry can cure (unknown module or host, a full disk) is not
    /// retried.
    pub(super) fn with_retries<T>(&mut self, what: &str, mut f: impl FnMut() -> Result<T, Failure>) -> Result<T> {
        let mut delay = self.cfg.backoff;
        let mut attempt = 1;
        loop {
            self.attempt.call(what, attempt, self.cfg.attempts);
            match f() {
                Ok(v) => return Ok(v),
                Err(e) if self.transport.serialize_after(&e) => {
                    // Our own fetch, still finishing, most likely held the
                    // daemon's last slot: the transport waited for it; try
                    // again at once (not a failed attempt). From now on no
                    // call to this remote overlaps another.
                    tracing::info!(
                        "{}: the daemon refused a connection (max connections reached) while a call of \
                         ours was finishing; from now on this process runs its calls to it one after another",
                        self.cfg.remote.root
                    );
                    tracing::debug!("{what}: {}", e.details());
                }
                Err(e) => {
                    tracing::debug!("{what}: {}", e.details());
                    self.attempt.failed(&e.to_string());
                    if self.is_claimed() {
                        // A first attempt's failed try shows at once.
                        self.beat_now("recentfiles");
                    }
                    if self.stopped() {
                        // Our own stop, not an error of the remote's.
                        self.save()?;
                        return Err(Interrupted.into());
                    }
                    self.state.error(e.kind());
                    if attempt >= self.cfg.attempts || !e.is_retryable() {
                        let why = match e.cause {
                            Some(c) => format!("{what} ({}, not retried)", c.as_str().replace('_', " ")),
                            None => format!("{what} (attempt {attempt})"),
                        };
                        return Err(anyhow!(e)).context(why);
                    }
                    tracing::warn!(
                        "{what}: attempt {attempt} of {} failed, retrying in {:.0?}: {e}",
                        self.cfg.attempts,
                        delay
                    );
                    self.nap(delay);
                    delay = (delay * 2).min(Duration::from_secs(300));
                    attempt += 1;
                }
            }
        }
    }

    /// The whole-tree pass's call ([`TreeJob`]): deletes within
    /// `--max-delete` unless `--skip-deletes` (never in a dry run's
    /// count), the quarantined paths' directories left out unless this
    /// pass looks at them again.
    pub(super) fn whole_tree_call(&self, layout: &Layout, dry: bool, progress: bool) -> Result<Box<dyn Call>> {
        let state_dir = self.cfg.state_dir();
        let deletes = if self.cfg.skip_deletes || self.index_stale() {
            TreeDeletes::Keep
        } else {
            let max = self.cfg.max_delete.filter(|_| !dry).map(|n| n.saturating_sub(self.deletes_this_run));
            TreeDeletes::Delete { max }
        };
        let quarantined = match self.recheck_quarantine {
            true => Vec::new(),
            false => self.state.quarantined.iter().map(|q| q.path.as_bytes()).collect(),
        };
        self.transport.sync_tree(&TreeJob {
            localroot: &self.cfg.localroot,
            state_dir: &state_dir,
            filenameroot: &layout.filenameroot,
            excludes: &self.cfg.excludes,
            dry_run: dry,
            checksum: self.cfg.checksum,
            progress,
            deletes,
            quarantined,
            itemize: self.stages() && !dry,
        })
    }

    /// Whether this whole-tree pass would delete a mass of the mirror: more
    /// than [`MASS_DELETE_SHARE`] of its files and at least
    /// [`MASS_DELETE_MIN`], or more than [`MASS_DELETE_HALF`] of a mirror
    /// of any size, not covered by `--max-delete`; then the message
    /// that names the two ways on. A dirtymark change or a re-bootstrap
    /// trusts the remote's whole tree, and a module re-pointed at another
    /// tree by mistake would empty the mirror, so this is asked before
    /// anything is deleted.
    ///
    /// Counted with a dry run of the very rsync that would follow (its
    /// `*deleting` lines): exact, whatever the recentfiles list (they may
    /// not name every file, nor directories), at the cost of one more scan
    /// of both trees, and only on a tree that has files (an empty one has
    /// nothing to lose). The mirror's files are counted by a walk of the
    /// tree.
    fn mass_deletes(&mut self, layout: &Layout, deleted: u64) -> Result<Option<(String, u64)>> {
        let files = self.files_at_start(&Self::ignore_set(layout), deleted);
        if files == 0 {
            return Ok(None);
        }
        let call = self.whole_tree_call(layout, true, false)?;
        let mut seen = Itemized::default();
        self.with_retries("counting the deletes of the whole-tree pass", || {
            seen = Itemized::default();
            call.run(&mut seen)
        })?;
        let share = seen.deleted_files as f64 / files as f64;
        let mass = (seen.deleted_files >= MASS_DELETE_MIN && share > MASS_DELETE_SHARE) || share > MASS_DELETE_HALF;
        if !mass || self.cfg.max_delete.is_some_and(|m| m >= seen.deleted) {
            return Ok(None);
        }
        let limit = if share > MASS_DELETE_HALF { MASS_DELETE_HALF } else { MASS_DELETE_SHARE };
        let msg = format!(
            "the whole-tree pass would delete {} of the mirror's {files} files ({} entries with directories), \
             more than {:.0} %: stopped before deleting anything (nothing was deleted). If {} really lost \
             them, run again with --max-delete {} (or more) or --accept-deletes; if it points at the wrong \
             tree, fix the remote. --dry-run lists the deletes.",
            seen.deleted_files,
            seen.deleted,
            limit * 100.0,
            self.cfg.remote.src,
            seen.deleted
        );
        Ok(Some((msg, seen.deleted_files)))
    }

    /// The mirror's files (not directories) when this pass started: a
    /// walk of the tree without rrr's own files and a top-level
    /// `lost+found`, plus the `deleted` entries this pass removed before
    /// it; walked once a pass, at its first call.
    pub(super) fn files_at_start(&mut self, ignore: &IgnoreSet, deleted: u64) -> u64 {
        if let Some(n) = self.files_counted {
            return n;
        }
        let root = self.cfg.localroot.clone();
        let ours = |e: &walkdir::DirEntry| {
            let rel = e.path().strip_prefix(&root).ok().and_then(|r| r.to_str()).unwrap_or("");
            ignore.is_ignored(rel) || (e.depth() == 1 && e.file_name() == LOST_FOUND)
        };
        let n = walkdir::WalkDir::new(&root)
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| !ours(e))
            .filter(|e| e.as_ref().is_ok_and(|e| !e.file_type().is_dir()))
            .count() as u64
            + deleted;
        self.files_counted = Some(n);
        n
    }

    /// One whole-tree rsync, then everything up to the principal's newest
    /// epoch is done. The recentfiles are fetched before the tree (so they
    /// list nothing the tree lacks), validated, and installed after it
    /// without the events a downstream must not see.
    pub(super) fn bootstrap(
        &mut self,
        dir: &FetchDir,
        principal: Fetched,
        layout: &Layout,
        rep: &mut PassReport,
    ) -> Result<()> {
        let names: Vec<String> = layout.intervals.iter().skip(1).map(|iv| layout.name_of(iv)).collect();
        self.fetch_rest_of_index(dir, &names)?;
        let dry = self.cfg.dry_run;
        if !dry {
            self.owe_resync()?;
            if self.hold_mass_deletes(layout, rep)? {
                return Ok(());
            }
        }
        let (index, res, mut seen) = self.run_whole_tree(dir, principal, layout, &names)?;
        for (name, e) in &index.errors {
            let msg = format!("cannot use the remote {name} (not installed): {e:#}");
            tracing::warn!("{msg}");
            rep.errors.push(msg);
        }
        rep.read = index.files.iter().map(|f| f.name.clone()).collect();
        let limit = self.future_limit();
        let newest = index
            .files
            .iter()
            .filter_map(|f| f.rf.events.iter().find(|e| e.epoch <= limit))
            .map(|e| e.epoch.clone())
            .max();
        let outcome = self.account_whole_tree(res, &mut seen, rep)?;
        if dry {
            return Ok(());
        }
        if let Some(out) = &outcome {
            self.note_whole_tree_outcome(out, seen.deletion_skipped, &index.files, rep);
        }
        if let Some(received) = seen.received.take() {
            self.check_received_tree(&index.files, received)?;
        }
        self.remove_perl_leftovers();
        let keeps = self.validate_index(&index, layout, &limit, rep);
        self.install_index(dir, &index.files, &keeps, newest)?;
        rep.complete = rep.errors.is_empty()
            && !self.state.resync
            && self.state.missing_upstream(self.clock.now_f64()).next().is_none()
            && self.state.tampered.is_empty();
        // Freeing millions of events takes a while; not on the way out.
        std::thread::spawn(move || drop(index));
        // The pass saves the state when it ends, right after this.
        Ok(())
    }

    /// Fetch the larger recentfiles the fetch dir lacks: usually fetched
    /// with the principal already (the whole index); not when a changed
    /// dirtymark made this pass a whole-tree one. A kill here leaves the
    /// target as it was.
    fn fetch_rest_of_index(&mut self, dir: &FetchDir, names: &[String]) -> Result<()> {
        let missing: Vec<&str> =
            names.iter().map(String::as_str).filter(|n| !dir.has_whole_index() && !dir.has(n)).collect();
        if !missing.is_empty() {
            self.fetch(dir, &missing)?;
            let principal = self.state.principal.clone().unwrap_or_default();
            let missing: Vec<String> = missing.iter().map(|n| n.to_string()).collect();
            self.trust_fetched(dir, &principal, &missing)?;
        }
        Ok(())
    }

    /// Save a whole-tree pass as owed (`resync`) before the tree is
    /// touched, so that a kill from here on leaves it owed: an interrupted
    /// `--full` pass too, and the next whole-tree pass removes what a
    /// killed rsync left. Without a done-set the next pass is a whole-tree
    /// one anyway.
    fn owe_resync(&mut self) -> Result<()> {
        if !self.state.resync && !self.state.done_union().is_empty() {
            self.state.resync = true;
            self.save()?;
        }
        Ok(())
    }

    /// True when the whole-tree rsync would delete too much of the mirror
    /// and is held (nothing transferred, nothing deleted; the whole-tree
    /// pass stays owed: a forgotten done-set, or `resync`). Exit 1, as
    /// when --max-delete stops deletes.
    fn hold_mass_deletes(&mut self, layout: &Layout, rep: &mut PassReport) -> Result<bool> {
        if self.cfg.skip_deletes || std::mem::take(&mut self.cfg.accept_deletes) {
            return Ok(false);
        }
        let Some((msg, files)) = self.mass_deletes(layout, rep.deleted)? else { return Ok(false) };
        tracing::warn!("{msg}");
        rep.deletes_held += files;
        rep.mass_deletes_held = true;
        rep.max_delete_reached = true;
        Ok(true)
    }

    /// Run the whole-tree rsync (with retries) while a second thread reads
    /// the larger recentfiles (they are installed after the tree): 8 × 19
    /// MB after `init --aggregate` of 200k files, ~0.4 s of CPU. A kill
    /// here leaves the tree partly transferred and no recentfile
    /// installed: the whole-tree pass is still owed.
    fn run_whole_tree(
        &mut self,
        dir: &FetchDir,
        principal: Fetched,
        layout: &Layout,
        names: &[String],
    ) -> Result<(Index, Result<Outcome>, Itemized)> {
        let dry = self.cfg.dry_run;
        // Per-file progress only for a bar (mirror::pass_progress).
        let call = self.whole_tree_call(layout, dry, self.cfg.progress)?;
        tracing::info!("bootstrap: one rsync of the whole tree{}", if dry { " (dry run)" } else { "" });
        let collect = self.stages() && !dry;
        let mut seen = Itemized::listing(dry).receiving(collect);
        let max_size = self.cfg.max_recentfile_size;
        let (bar, started) = (self.cfg.progress, self.clock.now());
        let mut hook = self.on_heartbeat.take();
        let (index, res) = std::thread::scope(|sc| {
            let reader = sc.spawn(|| Index::read(principal, dir, names, max_size));
            let mut progress = crate::mirror::pass_progress::Reporter::new(
                bar,
                "bootstrap",
                started,
                self.heartbeat_writer(&mut hook),
            )
            .watching(&self.attempt);
            let quiet = Some(progress.quiet_period());
            let res = self.with_retries("bootstrap rsync", || {
                seen = Itemized::listing(dry).receiving(collect);
                call.run_watched(&mut seen, quiet, &mut |out| progress.output(out))
            });
            progress.finish();
            (reader.join(), res)
        });
        self.on_heartbeat = hook;
        let index = index.map_err(|_| anyhow!("internal error: reading the recentfiles failed"))?;
        Ok((index, res, seen))
    }

    /// Count what the whole-tree rsync did and clear `resync`, unless
    /// --max-delete stopped its deletes (rsync's code 25: owed again).
    /// Another rsync error is the pass's. In memory only: no recentfile is
    /// installed yet, and a kill leaves the saved `resync`.
    fn account_whole_tree(
        &mut self,
        res: Result<Outcome>,
        seen: &mut Itemized,
        rep: &mut PassReport,
    ) -> Result<Option<Outcome>> {
        let (outcome, max_delete_hit) = match res {
            Ok(out) => (Some(out), false),
            Err(e) if e.downcast_ref::<Failure>().is_some_and(Failure::is_max_delete_reached) => (None, true),
            Err(e) => return Err(e),
        };
        if self.cfg.dry_run {
            rep.would.append(&mut seen.would);
        }
        rep.transferred += seen.files;
        rep.bytes += seen.bytes;
        rep.deleted += seen.deleted;
        self.deletes_this_run += seen.deleted;
        self.state.counters.files += seen.files;
        self.state.counters.bytes += seen.bytes;
        self.state.counters.deletes += seen.deleted;
        self.state.resync = false;
        if max_delete_hit {
            let msg = format!(
                "{MAX_DELETE_MSG} ({}): the whole-tree rsync left deletes undone; the tree is not complete \
                 until a later pass (or run) may delete them",
                self.cfg.max_delete.unwrap_or(0)
            );
            tracing::warn!("{msg}");
            rep.max_delete_reached = true;
            self.state.resync = true;
        }
        Ok(outcome)
    }

    /// What rsync reported beyond counts: vanished files, deletes it
    /// skipped for the origin's read errors (the pass stays owed; rsync
    /// says so on stdout, `deletion_skipped`, or on stderr), and the
    /// paths it could not send (failing). The whole tree arrived but what
    /// rsync named: a path failing before is in place now.
    fn note_whole_tree_outcome(
        &mut self,
        out: &Outcome,
        deletion_skipped: bool,
        fetched: &[Fetched],
        rep: &mut PassReport,
    ) {
        rep.vanished += out.vanished.len() as u64;
        if (out.deletion_skipped || deletion_skipped) && !self.cfg.skip_deletes {
            if out.failed.is_empty() && !out.too_long.is_empty() {
                tracing::warn!(
                    "rsync skipped the deletes of the whole-tree pass because it cannot carry {}; the next \
                     pass repeats it without them",
                    crate::output::human::plural(out.too_long.len() as u64, "path", "paths")
                );
            } else {
                tracing::warn!(
                    "rsync skipped the deletes of the whole-tree pass because the origin had \
                     read errors; it is repeated once no path is failing"
                );
            }
            self.state.resync = true;
        }
        self.quarantine(out, rep);
        let failed = self.record_failures(out, None, fetched, rep);
        self.state.failing.retain(|f| failed.contains(&f.path));
        // The whole tree arrived: a missing path that is here now is no
        // longer missing; one that is not stays (the origin still lacks it).
        let root = self.cfg.localroot.clone();
        self.state.missing.retain(|m| fs::symlink_metadata(root.join(m.path.as_path())).is_err());
    }

    /// The paths a whole-tree rsync cannot carry are quarantined
    /// (docs/decisions.md#quarantine): named in the state, status and
    /// check, their directories left out of the next whole-tree passes.
    /// A pass that looked at them again (`--full`) and did not meet one
    /// drops it.
    fn quarantine(&mut self, out: &Outcome, rep: &mut PassReport) {
        let now = self.clock.now();
        let mut met = HashSet::new();
        for t in &out.too_long {
            let Some(path) = self.long_path_of(&t.path) else {
                let msg = format!("rsync cannot carry {}, a path outside the tree: {}", shown_path(&t.path), t.message);
                tracing::error!("{msg}");
                rep.errors.push(msg);
                continue;
            };
            let n = self.state.quarantine(&path, &t.message, &now);
            if n == 1 {
                tracing::warn!(
                    "quarantined {} ({} bytes): {}; the rest of the tree goes on without it",
                    shown_path(&path),
                    path.len(),
                    t.message
                );
            }
            met.insert(path);
        }
        if std::mem::take(&mut self.recheck_quarantine) {
            self.state.quarantined.retain(|q| {
                let gone = !met.contains(&q.path);
                if gone {
                    tracing::info!("{} is no longer quarantined: the origin no longer has it", shown_path(&q.path));
                }
                !gone
            });
        }
    }

    /// The tree-relative path rsync means by `reported` in a whole-tree
    /// run, whatever its length (a quarantined path is longer than a
    /// path may be).
    fn long_path_of(&self, reported: &[u8]) -> Option<RelPath> {
        let plausible = |c: &[u8]| {
            !c.is_empty() && !c.contains(&0) && c.split(|&b| b == b'/').all(|p| !matches!(p, b"" | b"." | b".."))
        };
        let r = &reported[reported.iter().position(|&b| b != b'/').unwrap_or(reported.len())..];
        let (_, prefix) = self.cfg.remote.files_from_base();
        let sub = prefix.strip_suffix("./").unwrap_or("");
        [r.strip_prefix(sub.as_bytes()).filter(|_| !sub.is_empty()), Some(r)]
            .into_iter()
            .flatten()
            .find(|c| plausible(c))
            .map(RelPath::from)
    }

    /// Remove the temp files a Perl client left in the target's top directory.
    fn remove_perl_leftovers(&self) {
        if let Ok(rd) = fs::read_dir(&self.cfg.localroot) {
            for de in rd.flatten() {
                if de.file_name().to_str().is_some_and(|n| n.starts_with(".FRMRecent-")) {
                    let _ = fs::remove_file(de.path());
                }
            }
        }
    }

    /// Validate what the recentfiles list before installing them: each
    /// distinct path once (after `init --aggregate` every file lists every
    /// path). Returns per file, per event, whether our copy keeps it: not
    /// the future ones (noted), not the refused ones (reported once), not
    /// those under a failing path. Changes nothing on disk.
    fn validate_index(
        &mut self,
        index: &Index,
        layout: &Layout,
        limit: &Epoch,
        rep: &mut PassReport,
    ) -> Vec<Vec<bool>> {
        let ignore = Self::ignore_set(layout);
        let done = self.state.done_union();
        let mut safe = HashSet::new();
        let verdicts: Vec<Option<String>> = index
            .paths
            .iter()
            .map(|&(f, e)| check_event_path(&self.cfg.localroot, index.path(f, e), &ignore, &mut safe))
            .collect();
        let failing_now: Vec<RelPath> = self.state.failing_set().into_iter().map(RelPath::from).collect();
        let failing: HashSet<&[u8]> = failing_now.iter().map(|p| p.as_bytes()).collect();
        let mut reported: HashSet<(String, RelPath)> = HashSet::new();
        let mut keeps: Vec<Vec<bool>> = Vec::with_capacity(index.files.len());
        for (f, ids) in index.files.iter().zip(&index.ids) {
            self.refuse_skipped(f, &done, rep);
            // Strictly decreasing epochs: the future ones come first.
            let past = f.rf.events.partition_point(|e| e.epoch > *limit);
            let mut keep = vec![false; f.rf.events.len()];
            for (i, e) in f.rf.events.iter().enumerate() {
                if i < past {
                    self.future_seen.insert((e.epoch.as_str().to_string(), e.path.clone()));
                } else if let Some(reason) = &verdicts[ids[i] as usize] {
                    if reported.insert((e.epoch.as_str().to_string(), e.path.clone())) {
                        refuse(rep, &mut self.state.counters, &f.name, e, reason.clone());
                    }
                } else {
                    keep[i] = !under_any(&failing, &e.path);
                }
            }
            keeps.push(keep);
        }
        keeps
    }

    /// Install the recentfiles largest first, then the link, and record
    /// everything up to `newest` done. A kill midway leaves larger files
    /// installed and the done-set (on disk) as before: the whole-tree pass
    /// is still owed. The pass saves the state right after.
    fn install_index(
        &mut self,
        dir: &FetchDir,
        fetched: &[Fetched],
        keeps: &[Vec<bool>],
        newest: Option<Epoch>,
    ) -> Result<()> {
        for (f, keep) in fetched.iter().zip(keeps).rev() {
            self.install_kept(dir, f, keep)?;
        }
        self.install_link(&fetched[0].name)?;
        let ds = self.state.done.entry(fetched[0].name.clone()).or_default();
        ds.insert(newest.unwrap_or_else(done::beginning), done::beginning());
        self.state.pending_deletes.clear();
        self.state.refetch.clear();
        Ok(())
    }

    /// The event path rsync means by `reported` (module-relative with a
    /// leading `/` through a daemon below the module, absolute for a local
    /// source). With `asked`, only one of those paths.
    pub(super) fn event_path_of(&self, reported: &[u8], asked: Option<&HashSet<&RelPath>>) -> Option<RelPath> {
        use std::os::unix::ffi::OsStrExt;
        let trim = |b: &[u8], c: u8| {
            let start = b.iter().position(|&x| x != c).unwrap_or(b.len());
            let end = b.iter().rposition(|&x| x != c).map_or(start, |e| e + 1);
            b[start..end.max(start)].to_vec()
        };
        let r = &reported[reported.iter().position(|&b| b != b'/').unwrap_or(reported.len())..];
        let mut cands: Vec<&[u8]> = Vec::new();
        let (_, prefix) = self.cfg.remote.files_from_base();
        if let Some(x) = prefix.strip_suffix("./").and_then(|sub| r.strip_prefix(sub.as_bytes())) {
            cands.push(x);
        }
        let root = std::path::absolute(&self.cfg.remote.root).unwrap_or_else(|_| self.cfg.remote.root.clone().into());
        let root = trim(root.as_os_str().as_bytes(), b'/');
        if let Some(x) = r.strip_prefix(&root[..]).and_then(|x| x.strip_prefix(b"/")) {
            cands.push(x);
        }
        cands.push(r);
        match asked {
            Some(asked) => {
                cands.iter().find(|c| asked.contains(&RelPath::from(**c))).map(|c| RelPath::from(*c)).or_else(|| {
                    // Another spelling (e.g. over ssh): the longest asked path it ends with.
                    asked
                        .iter()
                        .filter(|p| r == p.as_bytes() || r.ends_with(&[b"/", p.as_bytes()].concat()))
                        .max_by_key(|p| p.len())
                        .map(|p| (*p).clone())
                })
            }
            None => cands.into_iter().find(|c| check_relative_path(c).is_ok()).map(RelPath::from),
        }
    }

    /// Note the paths an rsync run could not get: each in `failing` (with
    /// its newest event's epoch), said once on stderr. `asked`: the paths
    /// of a `--files-from` run; a failure rsync reports for another path
    /// is an error of the pass.
    fn record_failures(
        &mut self,
        out: &Outcome,
        asked: Option<(&HashSet<&RelPath>, &HashMap<&RelPath, &Epoch>)>,
        fetched: &[Fetched],
        rep: &mut PassReport,
    ) -> HashSet<RelPath> {
        let now = self.clock.now();
        let mut failed = HashSet::new();
        // For the bootstrap: each path's newest event in the fetched files.
        let mut newest: HashMap<&RelPath, &Epoch> = HashMap::new();
        if asked.is_none() && !out.failed.is_empty() {
            for e in fetched.iter().flat_map(|f| f.rf.events.iter()) {
                newest.entry(&e.path).and_modify(|n| *n = (*n).max(&e.epoch)).or_insert(&e.epoch);
            }
        }
        // A whole-tree run's paths too long to carry are quarantined instead
        // (Mirror::quarantine); an event's is failing like any other.
        let too_long = out.too_long.iter().filter(|_| asked.is_some());
        for fp in out.failed.iter().chain(too_long) {
            let Some(path) = self.event_path_of(&fp.path, asked.map(|a| a.0)) else {
                let msg = format!(
                    "rsync could not send {}, a path rrr did not ask for: {}",
                    shown_path(&fp.path),
                    fp.message
                );
                tracing::error!("{msg}");
                rep.errors.push(msg);
                continue;
            };
            let epochs = asked.map_or(&newest, |a| a.1);
            let epoch = epochs.get(&path).map(|e| (*e).clone());
            let n = self.state.fail(&path, epoch.as_ref(), &fp.message, &now);
            self.state.error("failing");
            tracing::warn!(
                "cannot get {} from the origin (attempt {n}; retried every pass): {}",
                shown_path(&path),
                fp.message
            );
            failed.insert(path);
        }
        failed
    }

    /// Transfer the `new` events `news` (indices into `f`) in chunks.
    /// Returns false when a chunk failed (the error is in the report).
    pub(super) fn transfer(
        &mut self,
        f: &Fetched,
        epochs: &[&Epoch],
        news: &[usize],
        ignore: &IgnoreSet,
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<bool> {
        if news.is_empty() {
            return Ok(true);
        }
        let pb = crate::output::progress::bar(self.cfg.progress, news.len() as u64, "rmirror");
        let n = self.cfg.max_files_per_connection.max(1);
        let mut chunks_done = 0u64;
        for chunk in news.chunks(n) {
            self.check_stop()?;
            let ok_ix = self.recheck_chunk(f, chunk, ignore, rep);
            if let Err(e) = self.send_chunk(f, &ok_ix, attempted, rep) {
                pb.finish_and_clear();
                chunk_failed(e, rep)?;
                return Ok(false);
            }
            for &ix in chunk {
                self.state.note_applied(&f.rf.events[ix].epoch);
            }
            let ds = self.state.done.entry(f.name.clone()).or_default();
            ds.register(epochs, chunk.iter().copied());
            if chunks_done + 1 < news.len().div_ceil(n) as u64 {
                // The last chunk is saved by the caller, after this file's
                // deletes: a kill before that repeats only that chunk.
                self.save()?;
            }
            pb.inc(chunk.len() as u64);
            chunks_done += 1;
            abort_point("after-chunk", chunks_done);
        }
        pb.finish_and_clear();
        Ok(true)
    }

    /// The events of `chunk` whose paths are still safe to write, checked
    /// right before the transfer (earlier chunks may have created
    /// symlinks); the others are refused (reported and counted).
    fn recheck_chunk(&mut self, f: &Fetched, chunk: &[usize], ignore: &IgnoreSet, rep: &mut PassReport) -> Vec<usize> {
        let mut safe_dirs = HashSet::new();
        let mut ok_ix = Vec::with_capacity(chunk.len());
        for &ix in chunk {
            let e = &f.rf.events[ix];
            if let Some(reason) = check_event_path(&self.cfg.localroot, &e.path, ignore, &mut safe_dirs) {
                refuse(rep, &mut self.state.counters, &f.name, e, reason);
            } else {
                ok_ix.push(ix);
            }
        }
        ok_ix
    }

    /// One `--files-from` rsync of the paths of `ok_ix`, with the missing
    /// paths that ride along ([`Mirror::ride_along`], taken by the first
    /// chunk of the pass that transfers anything). On return each path is
    /// in `attempted`, and is failing, missing or neither
    /// ([`Mirror::settle_paths`]). An error when the rsync call itself
    /// failed: nothing of the chunk is done.
    fn send_chunk(
        &mut self,
        f: &Fetched,
        ok_ix: &[usize],
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<()> {
        if ok_ix.is_empty() {
            return Ok(());
        }
        // The newest event of each path in this chunk, and what its
        // signed event says of its bytes (mirror::staging).
        let mut newest: HashMap<&RelPath, &Epoch> = HashMap::new();
        let mut expect: HashMap<&RelPath, Expected> = HashMap::new();
        for &ix in ok_ix {
            let e = &f.rf.events[ix];
            if !newest.contains_key(&e.path) {
                newest.insert(&e.path, &e.epoch);
                if let Some(x) = Expected::of(e).filter(|_| self.stages()) {
                    expect.insert(&e.path, x);
                }
            }
        }
        let riders = std::mem::take(&mut self.ride_along);
        for (p, e) in &riders {
            if !newest.contains_key(p) {
                newest.insert(p, e);
                if let Some(x) = self.state.expected_of(p).filter(|_| self.stages()) {
                    expect.insert(p, x.clone());
                }
            }
        }
        let mut aliases = self.cr_aliases(riders.iter().map(|(p, _)| p));
        // An alias that an event of the chunk names is that event's path.
        aliases.retain(|(a, _)| !newest.contains_key(a));
        for (a, p) in &aliases {
            let e = newest[p];
            newest.insert(a, e);
            if let Some(x) = expect.get(p).cloned() {
                expect.insert(a, x);
            }
        }
        let mut paths: Vec<&RelPath> = newest.keys().copied().collect();
        paths.sort_unstable();
        let out = self.run_files_from("transfer", &paths, &expect, rep)?;
        self.settle_paths(&out, &paths, &newest, &aliases, attempted, rep);
        self.state.remember_expected(expect.iter().map(|(p, x)| (*p, x)));
        self.settle_tampered();
        Ok(())
    }

    /// For each of `paths` that is missing (`State::missing`) and does not
    /// end in a CR: the name with one (alias, path). A Perl writer reads
    /// the recentfile with YAML::Syck, which cuts a plain scalar's trailing
    /// CR (`path: trailcr\r` loads as `trailcr`), and writes it back: the
    /// origin's index then names `trailcr` while the file is `trailcr\r`.
    /// A missing path's retry asks for both (docs/decisions.md#missing-upstream).
    fn cr_aliases<'p>(&self, paths: impl Iterator<Item = &'p RelPath>) -> Vec<(RelPath, RelPath)> {
        paths
            .filter(|p| !p.as_bytes().ends_with(b"\r") && self.state.is_missing(p))
            .map(|p| (RelPath::from([p.as_bytes(), b"\r"].concat()), p.clone()))
            .collect()
    }

    /// What one `--files-from` rsync of `paths` (with their events'
    /// epochs, where known) tells of each, in the state: rsync could not
    /// send it (failing: [`Mirror::record_failures`]); the origin has no
    /// such file (missing, docs/decisions.md#missing-upstream, when an
    /// event listed it; a path failing since a whole-tree pass is simply
    /// gone); or it arrived (neither). Each path is then in `attempted`.
    ///
    /// `aliases` ([`Mirror::cr_aliases`], among `paths`) are other names of
    /// missing paths: one that arrived settles its path (no longer
    /// missing: the origin has it under the name its index lost), one that
    /// did not is no news.
    fn settle_paths(
        &mut self,
        out: &Outcome,
        paths: &[&RelPath],
        epochs: &HashMap<&RelPath, &Epoch>,
        aliases: &[(RelPath, RelPath)],
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) {
        let asked: HashSet<&RelPath> = paths.iter().copied().collect();
        let failed = self.record_failures(out, Some((&asked, epochs)), &[], rep);
        let vanished: HashSet<RelPath> =
            out.vanished.iter().filter_map(|v| self.event_path_of(v, Some(&asked))).collect();
        let now = self.clock.now();
        let is_alias: HashSet<&RelPath> = aliases.iter().map(|(a, _)| a).collect();
        for p in paths.iter().filter(|p| !is_alias.contains(**p)) {
            attempted.insert((*p).clone());
            if failed.contains(*p) {
                self.state.unmiss(p);
                continue;
            }
            let was_failing = self.state.unfail(p);
            match epochs.get(p).filter(|_| vanished.contains(*p)) {
                Some(e) => {
                    let n = self.state.miss(p, e, &now);
                    if n == 1 {
                        tracing::info!(
                            "{}: listed by a new event, but the origin has no such file; waiting for its delete \
                             event (missing upstream after {MISSING_GRACE_ATTEMPTS} passes and {:.0} minutes)",
                            shown_path(p),
                            MISSING_GRACE_SECS / 60.0
                        );
                    } else {
                        tracing::debug!("{}: still not at the origin (attempt {n})", shown_path(p));
                    }
                }
                None => {
                    let was_missing = self.state.is_missing(p);
                    self.state.unmiss(p);
                    let gone = vanished.contains(*p);
                    if was_failing || was_missing {
                        let how = if gone { "is gone at the origin" } else { "arrived" };
                        let what = if was_failing { "failing" } else { "missing" };
                        tracing::info!("{} {how}; no longer {what}", shown_path(p));
                    }
                }
            }
        }
        for (alias, path) in aliases {
            attempted.insert(alias.clone());
            if !failed.contains(alias) && !vanished.contains(alias) {
                tracing::warn!(
                    "{} arrived as {}: the origin's index lost the name's trailing CR (a Perl writer's \
                     YAML::Syck reads `path: NAME\\r` as NAME); no longer missing",
                    shown_path(path),
                    shown_path(alias)
                );
                self.state.unmiss(path);
            }
        }
    }

    /// Try the failing paths again, but those a newer event in `seen`
    /// supersedes (that event is handled instead), and the missing paths
    /// with them ([`Mirror::missing_to_retry`]): one `--files-from`
    /// rsync per chunk. The state is saved after each chunk (and by a
    /// stop request, with what was decided so far); a kill -9 before the
    /// first save leaves the state file as it was, and the next pass plans
    /// the same retries.
    pub(super) fn retry_failing(
        &mut self,
        ignore: &IgnoreSet,
        seen: &HashMap<RelPath, Epoch>,
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<()> {
        let mut plan = self.plan_retries(ignore, seen, attempted);
        self.place_retyped(&mut plan, seen, ignore, rep);
        self.state.failing.retain(|f| !plan.dropped.contains(&f.path));
        // The missing paths come along: this connection is spent anyway.
        let planned: HashSet<RelPath> = plan.todo.iter().map(|(p, _)| p.clone()).collect();
        for (p, e) in self.missing_to_retry(ignore, seen, attempted) {
            if !planned.contains(&p) {
                plan.todo.push((p, Some(e)));
            }
        }
        plan.todo.sort();
        self.retry_chunks("retrying failing paths", &plan.todo, attempted, rep)
    }

    /// [`Mirror::retry_chunk`] for each chunk of `todo`, until one's rsync
    /// call fails (the rest wait for the next pass) or a stop.
    fn retry_chunks(
        &mut self,
        what: &str,
        todo: &[(RelPath, Option<Epoch>)],
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<()> {
        for chunk in todo.chunks(self.cfg.max_files_per_connection.max(1)) {
            self.check_stop()?;
            if !self.retry_chunk(what, chunk, attempted, rep)? {
                break;
            }
        }
        Ok(())
    }

    /// What is retried: each failing path not yet attempted this pass and
    /// not superseded by a newer event in `seen`, sorted into the plan's
    /// three lists by what the tree holds at its place now. Reads the
    /// state and the tree and changes neither: a kill here leaves nothing
    /// to undo.
    fn plan_retries(
        &self,
        ignore: &IgnoreSet,
        seen: &HashMap<RelPath, Epoch>,
        attempted: &HashSet<RelPath>,
    ) -> RetryPlan {
        let superseded = |f: &Failing| seen.get(&f.path).is_some_and(|n| f.epoch.as_ref().is_none_or(|e| n > e));
        let root = &self.cfg.localroot;
        let mut safe = HashSet::new();
        let mut plan = RetryPlan::default();
        for f in &self.state.failing {
            if attempted.contains(&f.path) || superseded(f) {
                continue;
            }
            // Excluded after it failed: its events are skipped now, and a
            // retry would only fail again (rsync is given the same excludes).
            if self.is_excluded(&f.path) {
                tracing::info!("no longer retrying {}: excluded", shown_path(&f.path));
                plan.dropped.push(f.path.clone());
                continue;
            }
            let blocked = blocked_by(root, &f.path, ignore).is_some()
                || fs::symlink_metadata(root.join(f.path.as_path())).is_ok_and(|m| m.is_dir());
            match (check_event_path(root, &f.path, ignore, &mut safe), &f.epoch) {
                // A type change not placed yet (Mirror::place).
                (_, Some(e)) if blocked => plan.retyped.push((f.path.clone(), e.clone())),
                (None, _) => plan.todo.push((f.path.clone(), f.epoch.clone())),
                (Some(why), _) => {
                    tracing::info!("no longer retrying {}: {why}", shown_path(&f.path));
                    plan.dropped.push(f.path.clone());
                }
            }
        }
        plan
    }

    /// Place each type change of the plan ([`Mirror::place`]): one whose
    /// place is clear joins `todo`, one a newer event made moot joins
    /// `dropped`, one that still cannot be placed stays failing (its
    /// attempt counted in memory). Nothing on disk changes here (rsync
    /// replaces a directory in the transfer): a kill -9 here loses only
    /// the attempt counts and drops, which the next pass makes again.
    fn place_retyped(
        &mut self,
        plan: &mut RetryPlan,
        seen: &HashMap<RelPath, Epoch>,
        ignore: &IgnoreSet,
        rep: &mut PassReport,
    ) {
        for (path, epoch) in std::mem::take(&mut plan.retyped) {
            let below = [path.as_bytes(), b"/"].concat();
            let under_newer = seen.iter().any(|(p, n)| p.starts_with(&below) && *n > epoch);
            let parent_newer = |p: &RelPath| seen.get(p).is_some_and(|n| *n > epoch);
            match self.place(&path, &epoch, ignore, &parent_newer, under_newer, rep) {
                Placement::Go => plan.todo.push((path, Some(epoch))),
                Placement::Superseded => plan.dropped.push(path),
                Placement::Failing => {}
            }
        }
    }

    /// One `--files-from` rsync of a chunk of failing (or missing) paths,
    /// then what it tells ([`Mirror::settle_paths`]: each path rsync could
    /// not send stays failing, attempt counted; one the origin still lacks
    /// stays missing; each that arrived is neither), and the state is
    /// saved. A kill -9 during the rsync leaves the state as it was: what
    /// arrived is retried next pass and found up to date. Returns false
    /// when the rsync call itself failed (reported; the remaining chunks
    /// wait for the next pass).
    fn retry_chunk(
        &mut self,
        what: &str,
        chunk: &[(RelPath, Option<Epoch>)],
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<bool> {
        let mut aliases = self.cr_aliases(chunk.iter().map(|(p, _)| p));
        aliases.retain(|(a, _)| !chunk.iter().any(|(p, _)| p == a));
        let mut paths: Vec<&RelPath> = chunk.iter().map(|(p, _)| p).chain(aliases.iter().map(|(a, _)| a)).collect();
        paths.sort_unstable();
        paths.dedup();
        attempted.extend(paths.iter().map(|p| (*p).clone()));
        // What the signed events said of their bytes, remembered with
        // each failing or missing path (mirror::staging).
        let mut expect: HashMap<&RelPath, Expected> = HashMap::new();
        if self.stages() {
            for (p, _) in chunk {
                if let Some(x) = self.state.expected_of(p) {
                    expect.insert(p, x.clone());
                }
            }
            for (a, p) in &aliases {
                if let Some(x) = expect.get(p).cloned() {
                    expect.insert(a, x);
                }
            }
        }
        let out = match self.run_files_from(what, &paths, &expect, rep) {
            Ok(out) => out,
            Err(e) => {
                chunk_failed(e, rep)?;
                return Ok(false);
            }
        };
        let mut epochs: HashMap<&RelPath, &Epoch> =
            chunk.iter().filter_map(|(p, e)| e.as_ref().map(|e| (p, e))).collect();
        for (a, p) in &aliases {
            if let Some(e) = epochs.get(p).copied() {
                epochs.insert(a, e);
            }
        }
        self.settle_paths(&out, &paths, &epochs, &aliases, attempted, rep);
        self.state.remember_expected(expect.iter().map(|(p, x)| (*p, x)));
        self.settle_tampered();
        self.save()?;
        Ok(true)
    }

    /// The missing paths to try again now ([`State::missing`]): each not
    /// attempted in this pass, not superseded by a newer event in `seen`
    /// (a delete explained it: dropped at the end of the walk). One
    /// excluded meanwhile, or no longer safe to write
    /// ([`check_event_path`]), is dropped now. Sorted by path.
    pub(super) fn missing_to_retry(
        &mut self,
        ignore: &IgnoreSet,
        seen: &HashMap<RelPath, Epoch>,
        attempted: &HashSet<RelPath>,
    ) -> Vec<(RelPath, Epoch)> {
        let mut safe = HashSet::new();
        let mut dropped = Vec::new();
        for m in &self.state.missing {
            let why = if self.is_excluded(&m.path) {
                Some("excluded".to_string())
            } else {
                check_event_path(&self.cfg.localroot, &m.path, ignore, &mut safe)
            };
            if let Some(why) = why {
                tracing::info!("no longer retrying {}: {why}", shown_path(&m.path));
                dropped.push(m.path.clone());
            }
        }
        for p in dropped {
            self.state.unmiss(&p);
        }
        self.state
            .missing
            .iter()
            .filter(|m| !attempted.contains(&m.path))
            .filter_map(|m| Some((m.path.clone(), m.epoch.clone()?)))
            .filter(|(p, e)| seen.get(p).is_none_or(|n| n <= e))
            .collect()
    }

    /// At the end of a walk: the missing paths that no transfer took along
    /// in this pass are tried on their own, in one connection, once
    /// [`MISSING_GRACE_SECS`] passed since their last try (so an idle
    /// mirror spends no connection on them every pass, and one past its
    /// grace is confirmed missing before it is reported).
    pub(super) fn retry_missing_alone(
        &mut self,
        ignore: &IgnoreSet,
        seen: &HashMap<RelPath, Epoch>,
        attempted: &mut HashSet<RelPath>,
        rep: &mut PassReport,
    ) -> Result<()> {
        let now = self.clock.now_f64();
        let candidates = self.missing_to_retry(ignore, seen, attempted);
        let last_try = |p: &RelPath| {
            let i = self.state.missing.binary_search_by(|m| m.path.as_bytes().cmp(p.as_bytes())).ok()?;
            Some(self.state.missing[i].last.to_f64())
        };
        let due: Vec<(RelPath, Option<Epoch>)> = candidates
            .into_iter()
            .filter(|(p, _)| last_try(p).is_some_and(|t| now - t >= MISSING_GRACE_SECS))
            .map(|(p, e)| (p, Some(e)))
            .collect();
        self.retry_chunks("retrying paths missing at the origin", &due, attempted, rep)
    }
}

/// The failing paths a pass retries, sorted by what stands at their place.
#[derive(Default)]
struct RetryPlan {
    /// Paths to transfer again, with the epoch of the event they failed at
    /// (`None`: failed in a whole-tree pass).
    todo: Vec<(RelPath, Option<Epoch>)>,
    /// Paths no longer failing without a transfer: no longer safe to
    /// write, or a newer event says their old type stands.
    dropped: Vec<RelPath>,
    /// Type changes whose place is still taken (a directory where a file
    /// goes, or a file or symlink on the way): placed first.
    retyped: Vec<(RelPath, Epoch)>,
}

/// A chunk's rsync failed: an interrupt ends the pass (`Err`); any other
/// error is reported, and the pass goes on without that chunk.
fn chunk_failed(e: anyhow::Error, rep: &mut PassReport) -> Result<()> {
    if e.downcast_ref::<Interrupted>().is_some() {
        return Err(e);
    }
    let msg = format!("{e:#}");
    tracing::error!("{msg}");
    rep.errors.push(msg);
    Ok(())
}
