//! One mirror pass against a remote collection, and the mirror's state.
//!
//! A pass (see README.mirror, "Running a mirror"):
//!
//! 1. fetch the principal once (with `RECENT.recent` and, from the second
//!    pass on, the principal it pointed to last time: one rsync call) into
//!    a hidden temp dir under `<localroot>/.rrr/`;
//! 2. a changed dirtymark forgets the done-set; an empty done-set (new
//!    target, forgotten state, `--full`) is brought up with one whole-tree
//!    rsync (`-rlt --safe-links`, the ignore set excluded), after which
//!    everything up to the principal's newest epoch is done;
//! 3. walk the recentfiles smallest first. In each, the events not done
//!    yet (done = covered by the union of all done-sets) are validated,
//!    the `new` ones transferred with `--from0 --files-from` in chunks of
//!    `--max-files-per-connection` (newest chunk first, each sorted by path
//!    and de-duplicated), then the deletes applied. The next larger file is
//!    fetched only when this one no longer reaches what is done already,
//!    or when our installed copy of the next one ends before this one
//!    begins (a downstream mirror reading our copies would find a gap);
//! 4. a recentfile is installed into the target (rename from the temp
//!    dir) only once every event it lists is done, the principal symlink
//!    after the principal: a downstream mirror never sees an event for a
//!    file that is not there yet.
//!
//! An event counts as done only after its transfer or delete completed,
//! and the state is saved atomically after every chunk, so a kill at any
//! instant repeats at most one chunk. Deletes waiting to be applied are
//! saved as `pending_deletes` before the transfers start.
//!
//! A hostile event (see [`check_event_path`]) is refused, reported, counted
//! and marked done so that it cannot stall later passes; nothing outside
//! the target is ever touched.
//!
//! # State file (`<localroot>/.rrr/state.json`, version 1)
//!
//! ```text
//! {
//!   "version": 1,
//!   "remote": "rsync://host/CPAN/RECENT.recent",   // another remote resets the state
//!   "principal": "RECENT-1h.yaml",                 // the link's target last seen
//!   "dirtymark": "1700000000.5" | null,            // the principal's, last seen
//!   "done": {"RECENT-1h.yaml": [["high","low"], …], …},   // spec 12.6, see rrr::done
//!   "installed": {"RECENT-6h.yaml": "newest epoch"},       // our copies of the recentfiles
//!   "pending_deletes": [{"epoch": "…", "path": "…"}],
//!   "newest_applied": "1700000400.5" | null,       // newest event transferred/deleted
//!   "counters": {"passes", "files", "bytes", "deletes", "refused",
//!                "errors": {"connection": 1, …}},   // since the state was created
//!   "started": "epoch", "last_success": "epoch"|null,
//!   "last_complete": "epoch"|null,                 // every event of the principal done
//!   "heartbeat": "epoch"                           // last write of this file
//! }
//! ```
//!
//! All epochs are strings. Unknown keys are ignored on read.

use crate::clock::Clock;
use crate::done::{self, DoneSet};
use crate::epoch::Epoch;
use crate::recentfile::{check_relative_path, escape_path, EventKind, Recentfile};
use crate::remote::{self, FetchDir, Layout, Remote, RsyncSettings};
use crate::rsync::RsyncError;
use crate::store;
use crate::tree::IgnoreSet;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

/// A delete event saved before the transfers, applied after them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDelete {
    pub epoch: Epoch,
    pub path: String,
}

/// Counters since the state was created.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    pub passes: u64,
    /// Paths handed to rsync (events and bootstrap files).
    pub files: u64,
    /// Bytes rsync reported transferred ("Total transferred file size").
    pub bytes: u64,
    pub deletes: u64,
    pub refused: u64,
    /// Failures by class (rsync failure classes, `delete`, `fetch`, `index`).
    pub errors: BTreeMap<String, u64>,
}

/// Report and count a hostile event; the caller marks it done.
fn refuse(rep: &mut PassReport, counters: &mut Counters, file: &str, e: &crate::recentfile::Event, reason: String) {
    eprintln!("rrr: rmirror: refused {} event {} {}: {reason}", e.kind, e.epoch, escape_path(&e.path));
    rep.refused.push(Refusal {
        file: file.to_string(),
        epoch: e.epoch.clone(),
        kind: e.kind,
        path: e.path.clone(),
        reason,
    });
    counters.refused += 1;
}

/// The mirror's state (module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    pub version: u32,
    pub remote: String,
    pub principal: Option<String>,
    pub dirtymark: Option<Epoch>,
    pub done: BTreeMap<String, DoneSet>,
    pub installed: BTreeMap<String, Epoch>,
    pub pending_deletes: Vec<PendingDelete>,
    pub newest_applied: Option<Epoch>,
    pub counters: Counters,
    pub started: Option<Epoch>,
    pub last_success: Option<Epoch>,
    pub last_complete: Option<Epoch>,
    pub heartbeat: Option<Epoch>,
}

impl State {
    pub fn fresh(remote: &str, now: &Epoch) -> State {
        State { version: 1, remote: remote.to_string(), started: Some(now.clone()), ..State::default() }
    }

    /// The union of all done-sets: what coverage is decided on (an event
    /// has the same epoch in every file it flows through).
    pub fn done_union(&self) -> DoneSet {
        DoneSet::union(self.done.values())
    }

    /// Forget what is done (a changed dirtymark).
    pub fn forget_done(&mut self) {
        self.done.clear();
    }

    fn note_applied(&mut self, e: &Epoch) {
        if self.newest_applied.as_ref().is_none_or(|n| e > n) {
            self.newest_applied = Some(e.clone());
        }
    }

    fn error(&mut self, class: &str) {
        *self.counters.errors.entry(class.to_string()).or_default() += 1;
    }
}

/// Load the state file; `None` when there is none.
pub fn load_state(path: &Path) -> Result<Option<State>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(
            serde_json::from_slice(&b).with_context(|| format!("cannot read mirror state {}", path.display()))?,
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read mirror state {}", path.display())),
    }
}

/// Why an event path must not be acted on, or `None`. Pure checks first
/// ([`check_relative_path`], rrr's own files), then each parent component
/// under `root` is lstat'ed: a symlink (which could lead out of the tree)
/// or a non-directory refuses the path. `safe_dirs` caches parents found
/// to be real directories.
pub fn check_event_path(
    root: &Path,
    path: &str,
    ignore: &IgnoreSet,
    safe_dirs: &mut HashSet<String>,
) -> Option<String> {
    if let Err(why) = check_relative_path(path) {
        return Some(why);
    }
    if ignore.is_ignored(path) {
        return Some("names one of rrr's own files (recentfile, state or temp file)".into());
    }
    let mut end = 0;
    while let Some(i) = path[end..].find('/') {
        end += i;
        let parent = &path[..end];
        end += 1;
        if safe_dirs.contains(parent) {
            continue;
        }
        match fs::symlink_metadata(root.join(parent)) {
            Ok(m) if m.file_type().is_symlink() => {
                return Some(format!("parent {} is a symlink", escape_path(parent)));
            }
            Ok(m) if !m.is_dir() => return Some(format!("parent {} is not a directory", escape_path(parent))),
            Ok(_) => {
                safe_dirs.insert(parent.to_string());
            }
            // Not there yet: rsync creates it (as a directory).
            Err(_) => break,
        }
    }
    None
}

/// Settings of a mirror (from `rrr rmirror`'s options).
#[derive(Clone, Debug)]
pub struct Config {
    pub remote: Remote,
    pub localroot: PathBuf,
    pub state_file: PathBuf,
    pub skip_deletes: bool,
    pub max_delete: Option<u64>,
    pub max_files_per_connection: usize,
    pub rsync: RsyncSettings,
    pub dry_run: bool,
    /// Attempts per rsync call (1 = no retry).
    pub attempts: u32,
    /// First retry delay; doubled per attempt.
    pub backoff: Duration,
    pub progress: bool,
}

impl Config {
    pub fn state_dir(&self) -> PathBuf {
        self.localroot.join(".rrr")
    }
}

/// One refused event, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct Refusal {
    pub file: String,
    pub epoch: Epoch,
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub path: String,
    pub reason: String,
}

/// What one pass did (the `--json` object has `"kind": "pass"`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PassReport {
    pub kind: &'static str,
    /// The pass finished without errors (refused events are not errors).
    pub ok: bool,
    /// Every event of the principal and the files it needs is done.
    pub complete: bool,
    pub bootstrap: bool,
    pub dry_run: bool,
    /// Recentfiles read this pass, smallest first.
    pub read: Vec<String>,
    /// Paths handed to rsync (events, or the bootstrap's files).
    pub transferred: u64,
    pub bytes: u64,
    pub deleted: u64,
    /// Delete events skipped (`--skip-deletes`) or left pending (`--max-delete`).
    pub deletes_skipped: u64,
    pub deletes_pending: u64,
    /// `--max-delete` stopped deletes in this run.
    pub max_delete_reached: bool,
    pub refused: Vec<Refusal>,
    pub vanished: u64,
    /// Errors, each with its message.
    pub errors: Vec<String>,
    pub newest_applied: Option<Epoch>,
    pub dirtymark_changed: bool,
    pub seconds: f64,
    /// `--dry-run`: what would be done, `new PATH` / `delete PATH`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would: Vec<String>,
}

/// The pass was stopped by SIGINT/SIGTERM (state saved).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// `--max-delete` was reached in this run.
const MAX_DELETE_MSG: &str = "--max-delete reached";

/// A mirror: config, state, clock and the stop flag, across passes.
pub struct Mirror<'a> {
    pub cfg: Config,
    pub state: State,
    pub clock: Clock,
    stop: &'a AtomicBool,
    deletes_this_run: u64,
    /// `--full` for the next pass.
    pub full: bool,
}

/// Test hook: `RRR_TEST_ABORT_AT=before-deletes` or `after-chunk:N` aborts
/// the process there (like kill -9: no cleanup), for the resume tests.
fn abort_point(what: &str, n: u64) {
    if let Ok(v) = std::env::var("RRR_TEST_ABORT_AT") {
        let hit = match v.split_once(':') {
            Some((w, k)) => w == what && k.parse::<u64>().ok() == Some(n),
            None => v == what,
        };
        if hit {
            eprintln!("rrr: test hook: aborting at {v}");
            std::process::abort();
        }
    }
}

/// A fetched recentfile, parsed.
struct Fetched {
    name: String,
    rf: Recentfile,
}

impl<'a> Mirror<'a> {
    /// Open (or reset) the state for `cfg`.
    pub fn new(cfg: Config, clock: Clock, stop: &'a AtomicBool) -> Result<Mirror<'a>> {
        let now = clock.now();
        let state = match load_state(&cfg.state_file)? {
            Some(s) if s.remote == cfg.remote.src => s,
            Some(s) => {
                eprintln!(
                    "rrr: rmirror: state {} belongs to remote {:?}; starting afresh for {:?}",
                    cfg.state_file.display(),
                    s.remote,
                    cfg.remote.src
                );
                State::fresh(&cfg.remote.src, &now)
            }
            None => State::fresh(&cfg.remote.src, &now),
        };
        Ok(Mirror { cfg, state, clock, stop, deletes_this_run: 0, full: false })
    }

    fn stopped(&self) -> bool {
        self.stop.load(AtomicOrdering::SeqCst)
    }

    fn check_stop(&mut self) -> Result<()> {
        if self.stopped() {
            self.save()?;
            return Err(Interrupted.into());
        }
        Ok(())
    }

    /// Write the state atomically (not in `--dry-run`).
    pub fn save(&mut self) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        self.state.heartbeat = Some(self.clock.now());
        if let Some(dir) = self.cfg.state_file.parent() {
            if !dir.as_os_str().is_empty() {
                fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            }
        }
        let mut bytes = serde_json::to_vec_pretty(&self.state)?;
        bytes.push(b'\n');
        store::write_atomic(&self.cfg.state_file, &bytes, None)
            .with_context(|| format!("cannot save mirror state {}", self.cfg.state_file.display()))
    }

    /// Sleep up to `d`, waking early when stopped.
    fn nap(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stopped() {
            std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
        }
    }

    /// Run `f` (an rsync call) with retries and backoff; each failure is
    /// reported with the exact command and stderr, and counted.
    fn with_retries<T>(&mut self, what: &str, mut f: impl FnMut() -> Result<T, RsyncError>) -> Result<T> {
        let mut delay = self.cfg.backoff;
        let mut attempt = 1;
        loop {
            match f() {
                Ok(v) => return Ok(v),
                Err(e) => {
                    self.state.error(e.kind());
                    if self.stopped() {
                        self.save()?;
                        return Err(Interrupted.into());
                    }
                    if attempt >= self.cfg.attempts || !e.is_retryable() {
                        return Err(anyhow!(e)).with_context(|| format!("{what} (attempt {attempt})"));
                    }
                    eprintln!(
                        "rrr: rmirror: {what}: attempt {attempt} of {} failed, retrying in {:.0?}: {e}",
                        self.cfg.attempts, delay
                    );
                    self.nap(delay);
                    delay = (delay * 2).min(Duration::from_secs(300));
                    attempt += 1;
                }
            }
        }
    }

    /// rsync's `--temp-dir`: `<localroot>/.rrr/tmp` (same filesystem, so
    /// files are still renamed into place), so that the temp files of a
    /// killed rsync are not left all over the tree; emptied at start.
    fn rsync_temp_dir(&self) -> Result<PathBuf> {
        let d = self.cfg.state_dir().join("tmp");
        fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
        // Absolute: rsync resolves a relative --temp-dir against the
        // destination directory, not the cwd, so a relative --localroot
        // made every transfer fail ("The temp-dir does not exist").
        std::path::absolute(&d).with_context(|| format!("cannot resolve {}", d.display()))
    }

    fn fetch_dir(&self) -> Result<FetchDir> {
        if self.cfg.dry_run {
            // Change nothing in the target: fetch into the system temp dir.
            return FetchDir::new(&std::env::temp_dir());
        }
        Ok(FetchDir::new(&self.cfg.state_dir())?.with_basis(&self.cfg.localroot))
    }

    /// Fetch `names` into `dir`, with retries.
    fn fetch(&mut self, dir: &FetchDir, names: &[&str]) -> Result<()> {
        let remote = self.cfg.remote.clone();
        let settings = self.cfg.rsync.clone();
        let what = format!("fetching {} from {}", names.join(" "), remote.root);
        self.with_retries(&what, || dir.fetch(&remote, &settings, names))
    }

    fn parse_fetched(dir: &FetchDir, name: &str) -> Result<Option<Recentfile>> {
        let p = dir.file(name);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_file() => {}
            Ok(_) => bail!("remote {name} is not a regular file"),
            Err(_) => return Ok(None),
        }
        store::read_file(&p).with_context(|| format!("remote {name}"))
    }

    /// Fetch and validate the principal. Returns its name, content and layout.
    fn fetch_principal(&mut self, dir: &FetchDir) -> Result<(Fetched, Layout)> {
        let remote = self.cfg.remote.clone();
        let name = if remote.is_link() {
            let mut names = vec![remote.name.as_str()];
            let last = self.state.principal.clone();
            if let Some(p) = &last {
                names.push(p);
            }
            self.fetch(dir, &names)?;
            let target = dir
                .link_target(&remote.name)?
                .with_context(|| format!("remote {} does not exist", remote.source(&remote.name)))?;
            if last.as_deref() != Some(target.as_str()) || !dir.file(&target).exists() {
                self.fetch(dir, &[&target])?;
            }
            target
        } else {
            self.fetch(dir, &[&remote.name])?;
            remote.name.clone()
        };
        let rf = Self::parse_fetched(dir, &name)?
            .with_context(|| format!("remote principal {} does not exist", remote.source(&name)))?;
        let layout = remote::check_meta(&name, &rf)?;
        Ok((Fetched { name, rf }, layout))
    }

    /// Rename a fetched recentfile into the target.
    fn install(&mut self, dir: &FetchDir, f: &Fetched) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        let dst = self.cfg.localroot.join(&f.name);
        fs::rename(dir.file(&f.name), &dst).with_context(|| format!("cannot install {}", dst.display()))?;
        match f.rf.newest() {
            Some(e) => self.state.installed.insert(f.name.clone(), e.epoch.clone()),
            None => self.state.installed.remove(&f.name),
        };
        Ok(())
    }

    fn install_link(&mut self, principal: &str) -> Result<()> {
        if self.cfg.dry_run || !self.cfg.remote.is_link() {
            return Ok(());
        }
        let link = self.cfg.remote.name.clone();
        store::ensure_symlink(&self.cfg.localroot, &link, principal)
            .with_context(|| format!("cannot install {}", self.cfg.localroot.join(&link).display()))
    }

    fn ignore_set(layout: &Layout) -> IgnoreSet {
        IgnoreSet::new(&layout.filenameroot, &[])
    }

    /// Run one pass.
    pub fn pass(&mut self) -> Result<PassReport> {
        let t0 = Instant::now();
        let mut rep = PassReport { kind: "pass", dry_run: self.cfg.dry_run, ..PassReport::default() };
        if !self.cfg.dry_run {
            fs::create_dir_all(&self.cfg.localroot)
                .with_context(|| format!("cannot create {}", self.cfg.localroot.display()))?;
        }
        let res = self.pass_inner(&mut rep);
        rep.seconds = t0.elapsed().as_secs_f64();
        rep.newest_applied = self.state.newest_applied.clone();
        self.state.counters.passes += 1;
        match res {
            Ok(()) => {
                rep.ok = rep.errors.is_empty();
                if rep.ok {
                    self.state.last_success = Some(self.clock.now());
                }
                if rep.complete {
                    self.state.last_complete = Some(self.clock.now());
                }
                self.save()?;
                Ok(rep)
            }
            Err(e) => {
                if e.downcast_ref::<Interrupted>().is_none() {
                    let _ = self.save();
                }
                Err(e)
            }
        }
    }

    fn pass_inner(&mut self, rep: &mut PassReport) -> Result<()> {
        let dir = self.fetch_dir()?;
        let (principal, layout) = match self.fetch_principal(&dir) {
            Ok(x) => x,
            Err(e) => {
                let class = if e.downcast_ref::<RsyncError>().is_some() { "fetch" } else { "index" };
                self.state.error(class);
                return Err(e);
            }
        };
        // Dirtymark: a change means events were inserted into the past.
        let dm = principal.rf.meta.dirtymark.clone();
        if self.state.dirtymark != dm && !self.state.done_union().is_empty() {
            eprintln!(
                "rrr: rmirror: dirtymark changed ({} -> {}): forgetting what is done and resyncing",
                self.state.dirtymark.as_ref().map_or("-", |d| d.as_str()),
                dm.as_ref().map_or("-", |d| d.as_str())
            );
            self.state.forget_done();
            rep.dirtymark_changed = true;
        }
        self.state.dirtymark = dm;
        self.state.principal = Some(principal.name.clone());

        let (principal, layout, dir) = if self.state.done_union().is_empty() || self.full {
            self.full = false;
            rep.bootstrap = true;
            self.bootstrap(&dir, principal, &layout, rep)?;
            drop(dir);
            if self.cfg.dry_run {
                return Ok(());
            }
            self.check_stop()?;
            // Continue incrementally with what changed meanwhile.
            let dir = self.fetch_dir()?;
            let (p, l) = self.fetch_principal(&dir)?;
            (p, l, dir)
        } else {
            (principal, layout, dir)
        };
        self.incremental(&dir, principal, &layout, rep)
    }

    /// One whole-tree rsync, then everything up to the principal's newest
    /// epoch is done. The recentfiles are fetched before the tree (so they
    /// list nothing the tree lacks) and installed after it.
    fn bootstrap(&mut self, dir: &FetchDir, principal: Fetched, layout: &Layout, rep: &mut PassReport) -> Result<()> {
        let names: Vec<String> = layout.intervals.iter().skip(1).map(|iv| layout.name_of(iv)).collect();
        if !names.is_empty() {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            self.fetch(dir, &refs)?;
        }
        let mut fetched = vec![principal];
        for n in &names {
            if let Some(rf) = Self::parse_fetched(dir, n)? {
                remote::check_meta(n, &rf)?;
                fetched.push(Fetched { name: n.clone(), rf });
            }
        }
        let newest = fetched.iter().filter_map(|f| f.rf.newest()).map(|e| e.epoch.clone()).max();

        let mut r = self.cfg.rsync.command(self.cfg.remote.transport);
        r.args(["-rlt", "--safe-links", "--stats"]);
        if !self.cfg.dry_run {
            r.arg(format!("--temp-dir={}", self.rsync_temp_dir()?.display()));
        }
        if self.cfg.dry_run {
            r.args(["--dry-run", "--out-format=%o %n"]);
        }
        let deletes = !self.cfg.skip_deletes;
        if deletes {
            r.arg("--delete");
            if let Some(n) = self.cfg.max_delete {
                let left = n.saturating_sub(self.deletes_this_run);
                r.arg(format!("--max-delete={left}"));
            }
        }
        for x in bootstrap_excludes(&layout.filenameroot) {
            r.arg(format!("--exclude={x}"));
        }
        r.arg(self.cfg.remote.tree_source());
        r.arg(format!("{}/", self.cfg.localroot.display()));
        eprintln!(
            "rrr: rmirror: bootstrap: one rsync of the whole tree{}",
            if self.cfg.dry_run { " (dry run)" } else { "" }
        );
        let pb = crate::progress::spinner(self.cfg.progress, "rmirror bootstrap");
        let mut stats = Stats::default();
        let mut would = Vec::new();
        let dry = self.cfg.dry_run;
        let res = self.with_retries("bootstrap rsync", || {
            stats = Stats::default();
            would.clear();
            r.run_with(&mut |line| {
                stats.line(line);
                if dry {
                    if let Some(p) = line.strip_prefix("recv ") {
                        if !p.ends_with('/') {
                            would.push(format!("new {p}"));
                        }
                    } else if let Some(p) = line.strip_prefix("del. ") {
                        would.push(format!("delete {p}"));
                    }
                }
                pb.tick();
            })
        });
        pb.finish_and_clear();
        let max_delete_hit = match res {
            Ok(out) => {
                rep.vanished += out.vanished.len() as u64;
                false
            }
            Err(e) if e.downcast_ref::<RsyncError>().is_some_and(|r| r.code == Some(25)) => true,
            Err(e) => return Err(e),
        };
        rep.would.extend(would);
        rep.transferred += stats.files;
        rep.bytes += stats.bytes;
        rep.deleted += stats.deleted;
        self.deletes_this_run += stats.deleted;
        self.state.counters.files += stats.files;
        self.state.counters.bytes += stats.bytes;
        self.state.counters.deletes += stats.deleted;
        if max_delete_hit {
            let msg = format!(
                "{MAX_DELETE_MSG} ({}): the bootstrap rsync stopped deleting; run --full to finish",
                self.cfg.max_delete.unwrap_or(0)
            );
            eprintln!("rrr: rmirror: {msg}");
            rep.max_delete_reached = true;
        }
        if dry {
            return Ok(());
        }
        // Leftovers of the Perl client.
        if let Ok(rd) = fs::read_dir(&self.cfg.localroot) {
            for de in rd.flatten() {
                if de.file_name().to_str().is_some_and(|n| n.starts_with(".FRMRecent-")) {
                    let _ = fs::remove_file(de.path());
                }
            }
        }
        for f in fetched.iter().rev() {
            self.install(dir, f)?;
        }
        self.install_link(&fetched[0].name)?;
        let ds = self.state.done.entry(fetched[0].name.clone()).or_default();
        ds.insert(newest.unwrap_or_else(done::beginning), done::beginning());
        self.state.pending_deletes.clear();
        self.save()
    }

    /// Walk the recentfiles smallest first (module docs, step 3).
    fn incremental(&mut self, dir: &FetchDir, principal: Fetched, layout: &Layout, rep: &mut PassReport) -> Result<()> {
        let ignore = Self::ignore_set(layout);
        // path -> newest epoch seen in this pass (smaller files first).
        let mut newest_seen: HashMap<String, Epoch> = HashMap::new();
        let mut installed_all = true;
        let mut current = principal;
        let mut i = 0;
        // Pending deletes of an earlier run go first into the delete queue.
        let mut carried: Vec<PendingDelete> = std::mem::take(&mut self.state.pending_deletes);
        let mut installed: Vec<String> = Vec::new();
        loop {
            rep.read.push(current.name.clone());
            let file_ok = self.process_file(&current, &ignore, &mut newest_seen, &mut carried, rep)?;
            let is_last = i + 1 >= layout.intervals.len();
            if file_ok {
                // Every event of this file is done: record its whole span.
                let ds = self.state.done.entry(current.name.clone()).or_default();
                let newest = current.rf.newest().map(|e| e.epoch.clone());
                let oldest = current.rf.oldest().map(|e| e.epoch.clone());
                if let (Some(n), Some(o)) = (&newest, &oldest) {
                    ds.insert(n.clone(), o.clone());
                }
                if is_last {
                    // The last file (Z) knows everything older.
                    let top = newest.clone().unwrap_or_else(done::beginning);
                    ds.insert(top, done::beginning());
                }
                self.install(dir, &current)?;
                installed.push(current.name.clone());
                if i == 0 {
                    self.install_link(&current.name)?;
                }
                self.save()?;
            } else {
                installed_all = false;
            }
            if is_last {
                break;
            }
            // Does this file reach what is done already?
            let union = self.state.done_union();
            let probe =
                current.rf.oldest().map(|e| e.epoch.clone()).or_else(|| current.rf.meta.merged.epoch().cloned());
            let reaches = probe.as_ref().is_some_and(|p| union.complete_through(p));
            let next_name = layout.name_of(&layout.intervals[i + 1]);
            // Would a downstream mirror reading our copies find a gap
            // between this file and our copy of the next one?
            let stale = match (current.rf.oldest(), self.state.installed.get(&next_name)) {
                (Some(o), Some(have)) => o.epoch > *have,
                (Some(_), None) => !self.cfg.localroot.join(&next_name).exists(),
                (None, _) => false,
            };
            if reaches && !stale {
                break;
            }
            self.check_stop()?;
            self.fetch(dir, &[&next_name])?;
            let Some(rf) = Self::parse_fetched(dir, &next_name)? else {
                // The origin has not written it yet: nothing older is known.
                break;
            };
            remote::check_meta(&next_name, &rf)?;
            for e in &current.rf.events {
                newest_seen.entry(e.path.clone()).or_insert_with(|| e.epoch.clone());
            }
            current = Fetched { name: next_name, rf };
            i += 1;
        }
        for e in &current.rf.events {
            newest_seen.entry(e.path.clone()).or_insert_with(|| e.epoch.clone());
        }
        // Pending deletes that no file of this pass superseded are still owed.
        if !carried.is_empty() && !self.cfg.dry_run {
            self.apply_deletes(&ignore, carried, &newest_seen, rep, &mut |_, _| {})?;
        }
        rep.complete = installed_all
            && rep.errors.is_empty()
            && !installed.is_empty()
            && self.state.pending_deletes.is_empty()
            && !self.cfg.dry_run;
        Ok(())
    }

    /// Handle the not-done events of one file. Returns true when all its
    /// events are done afterwards.
    fn process_file(
        &mut self,
        f: &Fetched,
        ignore: &IgnoreSet,
        newest_seen: &mut HashMap<String, Epoch>,
        carried: &mut Vec<PendingDelete>,
        rep: &mut PassReport,
    ) -> Result<bool> {
        let union = self.state.done_union();
        let epochs: Vec<&Epoch> = f.rf.events.iter().map(|e| &e.epoch).collect();
        let mut mark: Vec<usize> = Vec::new();
        let mut news: Vec<usize> = Vec::new();
        let mut dels: Vec<usize> = Vec::new();
        let mut safe_dirs = HashSet::new();
        let mut seen_here: HashMap<&str, &Epoch> = HashMap::new();
        for (ix, e) in f.rf.events.iter().enumerate() {
            if union.covered(&e.epoch) {
                continue;
            }
            let superseded = newest_seen.get(&e.path).is_some_and(|n| *n >= e.epoch)
                || seen_here.get(e.path.as_str()).is_some_and(|n| **n > e.epoch);
            seen_here.entry(e.path.as_str()).or_insert(&e.epoch);
            if superseded {
                mark.push(ix);
                continue;
            }
            if let Some(reason) = check_event_path(&self.cfg.localroot, &e.path, ignore, &mut safe_dirs) {
                refuse(rep, &mut self.state.counters, &f.name, e, reason);
                mark.push(ix);
                continue;
            }
            match e.kind {
                EventKind::New => news.push(ix),
                EventKind::Delete if self.cfg.skip_deletes => {
                    rep.deletes_skipped += 1;
                    mark.push(ix);
                }
                EventKind::Delete => dels.push(ix),
            }
        }
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
            let here: HashMap<&str, &Epoch> = f.rf.events.iter().map(|e| (e.path.as_str(), &e.epoch)).rev().collect();
            carried.retain(|p| {
                let newer = here.get(p.path.as_str()).is_some_and(|e| **e > p.epoch);
                let same = pending.iter().any(|q| q.path == p.path);
                !(newer || same)
            });
        }
        let changed = !mark.is_empty() || !pending.is_empty();
        self.state.pending_deletes = pending.clone();
        self.state.pending_deletes.extend(carried.iter().cloned());
        if changed {
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
        let transfers_ok = self.transfer(f, &epochs, &news, ignore, rep)?;
        self.check_stop()?;
        abort_point("before-deletes", 0);
        // Apply this file's deletes (and mark them done one by one).
        let name = f.name.clone();
        let mut done_ix: Vec<usize> = Vec::new();
        let by_key: HashMap<(String, String), usize> = dels
            .iter()
            .map(|&ix| ((f.rf.events[ix].path.clone(), f.rf.events[ix].epoch.as_str().to_string()), ix))
            .collect();
        let all = std::mem::take(&mut pending);
        let left = self.apply_deletes(ignore, all, newest_seen, rep, &mut |p, _| {
            if let Some(ix) = by_key.get(&(p.path.clone(), p.epoch.as_str().to_string())) {
                done_ix.push(*ix);
            }
        })?;
        let ds = self.state.done.entry(name).or_default();
        ds.register(&epochs, done_ix.iter().copied());
        self.state.pending_deletes.extend(carried.iter().cloned());
        if !dels.is_empty() {
            self.save()?;
        }
        Ok(transfers_ok && left == 0)
    }

    /// Transfer the `new` events `news` (indices into `f`) in chunks.
    /// Returns false when a chunk failed (the error is in the report).
    fn transfer(
        &mut self,
        f: &Fetched,
        epochs: &[&Epoch],
        news: &[usize],
        ignore: &IgnoreSet,
        rep: &mut PassReport,
    ) -> Result<bool> {
        if news.is_empty() {
            return Ok(true);
        }
        let pb = crate::progress::bar(self.cfg.progress, news.len() as u64, "rmirror");
        let n = self.cfg.max_files_per_connection.max(1);
        let mut chunks_done = 0u64;
        for chunk in news.chunks(n) {
            self.check_stop()?;
            // Re-check parents right before the transfer (earlier chunks
            // may have created symlinks).
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
            let mut paths: Vec<&str> = ok_ix.iter().map(|&ix| f.rf.events[ix].path.as_str()).collect();
            paths.sort_unstable();
            paths.dedup();
            if !paths.is_empty() {
                let (source, prefix) = self.cfg.remote.files_from_base();
                let listed: Vec<String> = paths.iter().map(|p| format!("{prefix}{p}")).collect();
                let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
                let list = crate::rsync::write_files_from(&self.cfg.state_dir(), &listed).with_context(|| {
                    format!("cannot write a --files-from list in {}", self.cfg.state_dir().display())
                })?;
                let mut r = self.cfg.rsync.command(self.cfg.remote.transport);
                r.args(["-rlt", "--safe-links", "--from0", "--stats"]);
                r.arg(format!("--temp-dir={}", self.rsync_temp_dir()?.display()));
                r.arg(format!("--files-from={}", list.path().display()));
                r.arg(source);
                r.arg(format!("{}/", self.cfg.localroot.display()));
                let mut stats = Stats::default();
                let res = self.with_retries("transfer", || {
                    stats = Stats::default();
                    r.run_with(&mut |line| stats.line(line))
                });
                match res {
                    Ok(out) => rep.vanished += out.vanished.len() as u64,
                    Err(e) => {
                        if e.downcast_ref::<Interrupted>().is_some() {
                            return Err(e);
                        }
                        let msg = format!("{e:#}");
                        eprintln!("rrr: rmirror: {msg}");
                        rep.errors.push(msg);
                        pb.finish_and_clear();
                        return Ok(false);
                    }
                }
                rep.transferred += paths.len() as u64;
                rep.bytes += stats.bytes;
                self.state.counters.files += paths.len() as u64;
                self.state.counters.bytes += stats.bytes;
            }
            for &ix in chunk {
                self.state.note_applied(&f.rf.events[ix].epoch);
            }
            let ds = self.state.done.entry(f.name.clone()).or_default();
            ds.register(epochs, chunk.iter().copied());
            self.save()?;
            pb.inc(chunk.len() as u64);
            chunks_done += 1;
            abort_point("after-chunk", chunks_done);
        }
        pb.finish_and_clear();
        Ok(true)
    }

    /// Apply deletes in order, respecting `--max-delete`; `on_done` is
    /// called for each one that is complete. Returns how many are left
    /// (kept in `pending_deletes`).
    fn apply_deletes(
        &mut self,
        ignore: &IgnoreSet,
        list: Vec<PendingDelete>,
        newest_seen: &HashMap<String, Epoch>,
        rep: &mut PassReport,
        on_done: &mut dyn FnMut(&PendingDelete, bool),
    ) -> Result<usize> {
        let mut left: Vec<PendingDelete> = Vec::new();
        let mut dirs: Vec<(PendingDelete, PathBuf)> = Vec::new();
        let mut since_save = 0;
        let mut it = list.into_iter();
        while let Some(p) = it.next() {
            if newest_seen.get(&p.path).is_some_and(|n| *n > p.epoch) {
                on_done(&p, false);
                continue;
            }
            if self.cfg.max_delete.is_some_and(|m| self.deletes_this_run >= m) {
                left.push(p);
                left.extend(it.by_ref());
                break;
            }
            let mut safe = HashSet::new();
            if let Some(reason) = check_event_path(&self.cfg.localroot, &p.path, ignore, &mut safe) {
                eprintln!("rrr: rmirror: refused delete event {} {}: {reason}", p.epoch, escape_path(&p.path));
                rep.refused.push(Refusal {
                    file: String::new(),
                    epoch: p.epoch.clone(),
                    kind: EventKind::Delete,
                    path: p.path.clone(),
                    reason,
                });
                self.state.counters.refused += 1;
                on_done(&p, false);
                continue;
            }
            let target = self.cfg.localroot.join(&p.path);
            let unlinked = match fs::symlink_metadata(&target) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    on_done(&p, false);
                    None
                }
                Ok(m) if m.is_dir() => {
                    dirs.push((p.clone(), target.clone()));
                    None
                }
                Ok(_) => Some(fs::remove_file(&target)),
                Err(e) => Some(Err(e)),
            };
            match unlinked {
                None => {}
                Some(Ok(())) => {
                    self.deletes_this_run += 1;
                    rep.deleted += 1;
                    self.state.counters.deletes += 1;
                    self.state.note_applied(&p.epoch);
                    on_done(&p, true);
                }
                Some(Err(e)) => {
                    let msg = format!("cannot delete {}: {e}", target.display());
                    eprintln!("rrr: rmirror: {msg}");
                    self.state.error("delete");
                    rep.errors.push(msg);
                    left.push(p);
                }
            }
            since_save += 1;
            if since_save >= 1000 {
                since_save = 0;
                self.state.pending_deletes = left.iter().cloned().chain(it.as_slice().iter().cloned()).collect();
                self.save()?;
            }
        }
        // Directories last, deepest first (the reference's rmdir order).
        dirs.sort_by_key(|d| std::cmp::Reverse(d.1.as_os_str().len()));
        for (p, target) in dirs {
            match fs::remove_dir(&target) {
                Ok(()) => {
                    self.deletes_this_run += 1;
                    rep.deleted += 1;
                    self.state.counters.deletes += 1;
                    on_done(&p, true);
                }
                Err(e) => {
                    // A directory that is not empty stays: its files have their own events.
                    eprintln!("rrr: rmirror: warning: cannot remove directory {}: {e}", target.display());
                    on_done(&p, false);
                }
            }
        }
        if !left.is_empty() && self.cfg.max_delete.is_some_and(|m| self.deletes_this_run >= m) {
            let msg = format!(
                "{MAX_DELETE_MSG} ({} deletes): {} deletes not applied, kept pending for the next run",
                self.cfg.max_delete.unwrap_or(0),
                left.len()
            );
            eprintln!("rrr: rmirror: {msg}");
            rep.max_delete_reached = true;
        }
        rep.deletes_pending = left.len() as u64;
        let n = left.len();
        self.state.pending_deletes = left;
        Ok(n)
    }
}

/// rsync filter rules for the bootstrap: the ignore set (DECISIONS.md).
pub fn bootstrap_excludes(filenameroot: &str) -> Vec<String> {
    let r = filenameroot;
    vec![
        "/.rrr/".to_string(),
        format!("/{r}.recent"),
        format!("/{r}.recent.*"),
        format!("/{r}-*.yaml"),
        format!("/{r}-*.json"),
        format!("/{r}-*.lock"),
        format!("/{r}-*.new"),
        ".~tmp~/".to_string(),
        ".FRMRecent-*".to_string(),
        ".*.[a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9]".to_string(),
    ]
}

/// What rsync's `--stats` said.
#[derive(Debug, Default)]
struct Stats {
    files: u64,
    bytes: u64,
    deleted: u64,
}

impl Stats {
    fn line(&mut self, line: &str) {
        let num = |s: &str| -> u64 {
            s.split_whitespace().next().map(|w| w.replace(',', "")).and_then(|w| w.parse().ok()).unwrap_or(0)
        };
        if let Some(rest) = line.strip_prefix("Number of regular files transferred: ") {
            self.files = num(rest);
        } else if let Some(rest) = line.strip_prefix("Total transferred file size: ") {
            self.bytes = num(rest);
        } else if let Some(rest) = line.strip_prefix("Number of deleted files: ") {
            self.deleted = num(rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_paths_are_checked_against_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("f"), "x").unwrap();
        std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap();
        let ig = IgnoreSet::new("RECENT", &[]);
        let mut safe = HashSet::new();
        let mut check = |p: &str| check_event_path(root, p, &ig, &mut safe);
        assert_eq!(check("a/b/c"), None);
        assert_eq!(check("new/dir/x"), None);
        assert_eq!(check("link"), None, "a symlink itself may be replaced or deleted");
        for bad in
            ["../x", "/abs", "a/../b", "a\nb", "a\0b", "link/x", "f/x", "RECENT-1h.yaml", ".rrr/state.json", "a//b"]
        {
            assert!(check(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn stats_lines() {
        let mut s = Stats::default();
        for l in [
            "Number of regular files transferred: 1,234",
            "Total transferred file size: 56,789 bytes",
            "Number of deleted files: 3 (reg: 3)",
        ] {
            s.line(l);
        }
        assert_eq!((s.files, s.bytes, s.deleted), (1234, 56789, 3));
    }

    #[test]
    fn state_round_trips_and_tolerates_unknown_keys() {
        let now = Epoch::parse("1700000000.5").unwrap();
        let mut s = State::fresh("rsync://h/m/RECENT.recent", &now);
        s.done.entry("RECENT-1h.yaml".into()).or_default().insert(now.clone(), done::beginning());
        s.pending_deletes.push(PendingDelete { epoch: now.clone(), path: "a/b".into() });
        let mut v = serde_json::to_value(&s).unwrap();
        v["future_key"] = serde_json::json!(1);
        let back: State = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        assert!(back.done_union().complete_through(&now));
    }
}
