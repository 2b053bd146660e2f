//! One mirror pass against a remote collection, and the mirror's state.
//!
//! Before the first pass ([`Mirror::settle_ownership`], module
//! [`crate::mirror::ownership`]) rrr decides whether the localroot may be mirrored
//! into at all, fetching the remote principal into a temp dir outside the
//! target when the decision needs it: a refusal, an unreachable remote or a
//! bad principal leave the localroot as they found it.
//!
//! A pass (see README.mirror, "Running a mirror"):
//!
//! 1. fetch the principal once, in one rsync call, into a hidden temp dir
//!    under `<localroot>/.rrr/`: `RECENT.recent` with the principal it
//!    pointed to last time (and the larger files the last pass asked for,
//!    [`State::refetch`]), or, when a whole-tree pass is due or the
//!    link's target is not known yet, the whole index (the link and every
//!    recentfile, one connection);
//! 2. a changed dirtymark forgets the done-set; an empty done-set (new
//!    target, forgotten state, `--full`, a whole-tree pass still owed) is
//!    brought up with one whole-tree rsync (`-rlt --safe-links`, the ignore
//!    set excluded), after which everything up to the principal's newest
//!    epoch is done, and the pass ends: a first mirror is two connections;
//! 3. walk the recentfiles smallest first. In each, the events not done
//!    yet (done = covered by the union of all done-sets) are validated,
//!    the `new` ones transferred with `--from0 --files-from` in chunks of
//!    `--max-files-per-connection` (newest chunk first, each sorted by path
//!    and de-duplicated), then the deletes applied. The next larger file is
//!    walked into when this one no longer reaches what is done already
//!    (a mirror that fell further behind than the file spans: fetched with
//!    the principal when the time since the last complete pass predicted
//!    it, `Mirror::behind_names`, else then, a connection of its own), or
//!    when our installed copy of the next one ends before this one begins
//!    and it was fetched with the principal;
//! 4. a recentfile is installed into the target only once every event it
//!    lists is done, the principal symlink after the principal: a
//!    downstream mirror never sees an event for a file that is not there.
//!    Nor a gap: a file whose next larger copy ends before it begins (the
//!    origin's aggregate truncated its principal) waits for that copy,
//!    installed first when it was fetched, else by the next pass, which
//!    fetches it with the principal ([`State::refetch`]) — no connection
//!    of its own, the new events published one pass later.
//!    The copy is the fetched file renamed into place, or, when it lists
//!    events we must not republish (refused, from the future, failing),
//!    the file without them written with rrr's emitter.
//!
//! An event counts as done only after its transfer or delete completed,
//! and the state is saved atomically after every chunk but a file's last
//! (saved with that file's deletes, by the next save), so a kill at any
//! instant repeats at most one chunk and deletes that are no-ops by then.
//! Deletes waiting to be applied are saved as `pending_deletes` before the
//! transfers start. Each save is two fsyncs, so a pass saves no more often
//! than that: an incremental pass of new files saves once, at its end.
//!
//! A hostile event (see [`check_event_path`], and events the reader
//! skipped) is refused, reported, counted and marked done so that it
//! cannot stall later passes; nothing outside the target is ever touched.
//! An event more than an hour ahead of the clock is skipped as "future"
//! and never marked done ([`DoneSet::cap`]): it is taken when its time has
//! come. A path the origin cannot send (rsync exit 23 with a `[sender]`
//! error) is marked done and listed in `failing`, retried every pass until
//! it arrives or a newer event supersedes it; it holds back nothing else.
//!
//! # State file (`<localroot>/.rrr/state.json`, version 1)
//!
//! ```text
//! {
//!   "version": 1,
//!   "id": "3f…",                                   // = <localroot>/.rrr/id
//!   "remote": "rsync://host/CPAN/RECENT.recent",   // as given
//!   "filenameroot": "RECENT",                      // the collection …
//!   "dirtymark": "1700000000.5" | null,            // … and its dirtymark
//!   "principal": "RECENT-1h.yaml",                 // the link's target last seen
//!   "done": {"RECENT-1h.yaml": [["high","low"], …], …},   // spec 12.6, see rrr::done
//!   "installed": {"RECENT-6h.yaml": "newest epoch"},       // our copies of the recentfiles
//!   "refetch": ["RECENT-6h.yaml"],                 // fetch with the next principal
//!   "pending_deletes": [{"epoch": "…", "path": "…"}],
//!   "failing": [{"path", "epoch"|null, "message", "first", "last", "attempts"}],
//!   "future_events": 0,                            // skipped as future in the last pass
//!   "resync": false,                               // a whole-tree pass is owed
//!   "newest_applied": "1700000400.5" | null,       // newest event transferred/deleted
//!   "counters": {"passes", "files", "bytes", "deletes", "refused",
//!                "errors": {"connection": 1, …}},   // since the state was created
//!   "started": "epoch", "last_success": "epoch"|null,
//!   "last_complete": "epoch"|null,                 // every event of the principal done
//!   "last_error": "message"|null,                  // of the last pass, if it failed
//!   "heartbeat": "epoch"                           // last write of this file
//! }
//! ```
//!
//! All epochs are strings. Unknown keys are ignored on read.

pub mod ownership;
pub mod progress;
pub mod remote;
pub mod status;

use crate::clock::Clock;
use crate::done::{self, DoneSet};
use crate::epoch::Epoch;
use crate::recentfile::{check_relative_path, shown_path, Event, EventKind, Format, Producer, Recentfile};
use crate::rsync::{Rsync, RsyncError, RsyncOutcome};
use crate::store;
use crate::tree::IgnoreSet;
use anyhow::{anyhow, bail, Context, Result};
use ownership::{CollectionId, Decision, Facts};
use remote::{FetchDir, Layout, Remote, RsyncSettings};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

/// How far ahead of the clock an event may be and still be taken.
const FUTURE_SECS: f64 = 3600.0;

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
    /// Files rsync really transferred (its itemized output).
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    pub deletes: u64,
    pub refused: u64,
    /// Failures by class (rsync failure classes or causes, `delete`, `fetch`, `index`).
    pub errors: BTreeMap<String, u64>,
}

/// A path the origin could not send, retried every pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failing {
    pub path: String,
    /// Its newest event seen (none when the bootstrap found it).
    pub epoch: Option<Epoch>,
    /// rsync's message.
    pub message: String,
    pub first: Epoch,
    pub last: Epoch,
    pub attempts: u64,
}

/// The mirror's state (module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    pub version: u32,
    pub id: Option<String>,
    pub remote: String,
    pub filenameroot: Option<String>,
    pub principal: Option<String>,
    pub dirtymark: Option<Epoch>,
    pub done: BTreeMap<String, DoneSet>,
    pub installed: BTreeMap<String, Epoch>,
    /// Larger recentfiles to fetch with the next principal: our copy is
    /// older than the smaller file's oldest event, so the smaller file
    /// waits for it (installing it first would leave a downstream mirror
    /// a gap), and the next pass fetches it in the principal's connection.
    pub refetch: Vec<String>,
    pub pending_deletes: Vec<PendingDelete>,
    pub failing: Vec<Failing>,
    pub future_events: u64,
    pub resync: bool,
    pub newest_applied: Option<Epoch>,
    pub counters: Counters,
    pub started: Option<Epoch>,
    pub last_success: Option<Epoch>,
    pub last_complete: Option<Epoch>,
    pub last_error: Option<String>,
    pub heartbeat: Option<Epoch>,
    /// The pass running now (a bootstrap's progress), saved with each heartbeat.
    pub running: Option<crate::mirror::progress::Running>,
    /// The last whole-tree pass that finished (`--full-every`).
    pub last_full: Option<Epoch>,
}

impl State {
    pub fn fresh(remote: &str, now: &Epoch) -> State {
        State {
            version: 1,
            id: Some(ownership::new_id()),
            remote: remote.to_string(),
            started: Some(now.clone()),
            ..State::default()
        }
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

    /// The collection this state belongs to, if it says.
    pub fn collection(&self) -> Option<CollectionId> {
        let root = self.filenameroot.clone().or_else(|| {
            self.principal.as_deref().and_then(crate::collection::split_name).map(|(r, _, _)| r.to_string())
        })?;
        Some(CollectionId { filenameroot: root, dirtymark: self.dirtymark.clone() })
    }

    fn note_applied(&mut self, e: &Epoch) {
        if self.newest_applied.as_ref().is_none_or(|n| e > n) {
            self.newest_applied = Some(e.clone());
        }
    }

    fn error(&mut self, class: &str) {
        *self.counters.errors.entry(class.to_string()).or_default() += 1;
    }

    /// Record that `path` could not be had (again). `failing` stays
    /// sorted by path, so that each lookup is a binary search.
    fn fail(&mut self, path: &str, epoch: Option<&Epoch>, message: &str, now: &Epoch) -> u64 {
        match self.failing.binary_search_by(|f| f.path.as_str().cmp(path)) {
            Ok(i) => {
                let f = &mut self.failing[i];
                f.attempts += 1;
                f.last = now.clone();
                f.message = message.to_string();
                if epoch.is_some_and(|e| f.epoch.as_ref().is_none_or(|old| e > old)) {
                    f.epoch = epoch.cloned();
                }
                f.attempts
            }
            Err(i) => {
                let f = Failing {
                    path: path.to_string(),
                    epoch: epoch.cloned(),
                    message: message.to_string(),
                    first: now.clone(),
                    last: now.clone(),
                    attempts: 1,
                };
                self.failing.insert(i, f);
                1
            }
        }
    }

    /// `path` arrived, vanished or was superseded: no longer failing.
    fn unfail(&mut self, path: &str) {
        if let Ok(i) = self.failing.binary_search_by(|f| f.path.as_str().cmp(path)) {
            self.failing.remove(i);
        }
    }

    /// Failing paths and their directories, to leave out of installed copies.
    fn failing_set(&self) -> HashSet<&str> {
        self.failing.iter().map(|f| f.path.as_str()).collect()
    }
}

/// Whether `path` or one of its parent directories is in `set`.
fn under_any(set: &HashSet<&str>, path: &str) -> bool {
    if set.is_empty() {
        return false;
    }
    if set.contains(path) {
        return true;
    }
    path.match_indices('/').any(|(i, _)| set.contains(&path[..i]))
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
                return Some(format!("parent {} is a symlink", shown_path(parent)));
            }
            Ok(m) if !m.is_dir() => return Some(format!("parent {} is not a directory", shown_path(parent))),
            Ok(_) => {
                safe_dirs.insert(parent.to_string());
            }
            // Not there yet: rsync creates it (as a directory).
            Err(_) => break,
        }
    }
    None
}

/// The top-level directory rrr never deletes (a filesystem's own).
const LOST_FOUND: &str = "lost+found";

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
    /// Remote recentfiles larger than this are refused unread.
    pub max_recentfile_size: u64,
    /// The user's exclude patterns (rsync's syntax): passed to the
    /// whole-tree rsync, and events for such paths are skipped (done, never
    /// transferred, deleted or republished).
    pub excludes: Vec<String>,
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
    pub kind: Option<EventKind>,
    pub path: String,
    pub reason: String,
}

/// A failing path as the pass reports it.
#[derive(Clone, Debug, Serialize)]
pub struct FailingReport {
    pub path: String,
    pub epoch: Option<Epoch>,
    pub message: String,
    pub attempts: u64,
}

/// What one pass did (the `--json` object has `"kind": "pass"`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PassReport {
    pub kind: &'static str,
    /// The tree (absolute) and SRC, so that the passes of several trees can be told apart.
    pub localroot: String,
    pub remote: String,
    /// The pass finished without errors (refused events are not errors).
    pub ok: bool,
    /// Every event of the principal and the files it needs is done.
    pub complete: bool,
    pub bootstrap: bool,
    pub dry_run: bool,
    /// Recentfiles read this pass, smallest first.
    pub read: Vec<String>,
    /// Files rsync really transferred (its itemized output).
    pub transferred: u64,
    pub bytes: u64,
    pub deleted: u64,
    /// Delete events skipped (`--skip-deletes`) or left pending (`--max-delete`).
    pub deletes_skipped: u64,
    pub deletes_pending: u64,
    /// `--max-delete` stopped deletes in this run.
    pub max_delete_reached: bool,
    pub refused: Vec<Refusal>,
    /// Paths the origin could not send, after this pass.
    pub failing: Vec<FailingReport>,
    /// Events skipped because their epoch is more than an hour ahead.
    pub future: u64,
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

/// The tree may not be mirrored into without `--adopt` (the message says
/// why and how to proceed); nothing was written.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

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
    /// The state may be written: the lock is held (not in the preflight,
    /// never in `--dry-run`).
    writable: bool,
    /// The principal fetched to decide ownership, for the first pass.
    prefetched: Option<(FetchDir, Fetched, Layout)>,
    /// `--adopt`'s delete count was checked against `--max-delete`.
    adopt_counted: bool,
    /// Future events seen in this pass (epoch, path).
    future_seen: HashSet<(String, String)>,
    /// Called after each heartbeat written during a long rsync (e.g. to
    /// rewrite a Prometheus textfile).
    pub on_heartbeat: Option<Box<dyn FnMut() + 'a>>,
    /// [`Config::excludes`], compiled.
    excluded: Vec<crate::pattern::Pattern>,
}

/// Write `state` to `file` atomically, creating its directory.
fn write_state(file: &Path, state: &State) -> Result<()> {
    if let Some(dir) = file.parent() {
        if !dir.as_os_str().is_empty() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
    }
    let mut bytes = serde_json::to_vec_pretty(state)?;
    bytes.push(b'\n');
    store::write_atomic(file, &bytes, None).with_context(|| format!("cannot save mirror state {}", file.display()))
}

/// Test hook (debug builds only: a release rrr ignores the variable):
/// `RRR_TEST_ABORT_AT=before-deletes` or `after-chunk:N` aborts the process
/// there (like kill -9: no cleanup), for the resume tests.
fn abort_point(what: &str, n: u64) {
    #[cfg(not(debug_assertions))]
    let _ = (what, n);
    #[cfg(debug_assertions)]
    if let Ok(v) = std::env::var("RRR_TEST_ABORT_AT") {
        let hit = match v.split_once(':') {
            Some((w, k)) => w == what && k.parse::<u64>().ok() == Some(n),
            None => v == what,
        };
        if hit {
            tracing::error!("test hook: aborting at {v}");
            std::process::abort();
        }
    }
}

/// A fetched recentfile, parsed.
struct Fetched {
    name: String,
    rf: Recentfile,
}

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
            let mut at: foldhash::HashMap<&str, u32> = foldhash::HashMap::default();
            for (fi, f) in files.iter().enumerate() {
                let mut these = Vec::with_capacity(f.rf.events.len());
                for (ei, e) in f.rf.events.iter().enumerate() {
                    let id = *at.entry(e.path.as_str()).or_insert_with(|| {
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

    fn path(&self, file: usize, event: usize) -> &str {
        &self.files[file].rf.events[event].path
    }
}

/// rsync's `--out-format` for transfers: item codes, length, name.
const OUT_FORMAT: &str = "--out-format=%i %l %n";

/// What rsync's [`OUT_FORMAT`] lines said: one line per item it changed,
/// so this counts what really arrived (not what was asked for).
#[derive(Debug, Default)]
struct Itemized {
    files: u64,
    bytes: u64,
    deleted: u64,
    /// Keep [`Itemized::would`] (a dry run).
    listing: bool,
    /// `new PATH` / `delete PATH`.
    would: Vec<String>,
}

impl Itemized {
    fn listing(listing: bool) -> Itemized {
        Itemized { listing, ..Itemized::default() }
    }

    fn line(&mut self, line: &str) {
        if self.stats_line(line) {
            return;
        }
        if let Some(rest) = line.strip_prefix("*deleting") {
            self.deleted += 1;
            let name = rest.trim_start().split_once(' ').map_or("", |(_, n)| n);
            if self.listing {
                self.would.push(format!("delete {}", crate::rsync::unescape(name)));
            }
            return;
        }
        let mut it = line.splitn(3, ' ');
        let (Some(item), Some(len), Some(name)) = (it.next(), it.next(), it.next()) else { return };
        let b = item.as_bytes();
        if b.len() != 11 {
            return;
        }
        // `>f`: a file received; `cL` etc.: a symlink (or device) created.
        let received = b[0] == b'>' && b[1] == b'f';
        let created = b[0] == b'c' && b[1] != b'd';
        if received || created {
            self.files += 1;
            if received {
                self.bytes += len.parse::<u64>().unwrap_or(0);
            }
            if self.listing {
                self.would.push(format!("new {}", crate::rsync::unescape(name)));
            }
        }
    }

    /// A line of rsync's `--stats` (a whole-tree pass that lists nothing:
    /// see [`Mirror::bootstrap_command`]), counted the way the itemized
    /// lines would be: regular files received and links, devices or
    /// specials created; their bytes; deletes. Returns whether it was one.
    fn stats_line(&mut self, line: &str) -> bool {
        fn number(s: &str) -> u64 {
            let digits: String = s.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
            digits.replace(',', "").parse().unwrap_or(0)
        }
        if let Some(rest) = line.strip_prefix("Number of regular files transferred:") {
            self.files += number(rest);
        } else if let Some(rest) = line.strip_prefix("Total transferred file size:") {
            self.bytes += number(rest);
        } else if let Some(rest) = line.strip_prefix("Number of deleted files:") {
            self.deleted += number(rest);
        } else if let Some(rest) = line.strip_prefix("Number of created files:") {
            // "424 (reg: 382, dir: 41, link: 1)": the regular ones are
            // among those transferred.
            let kinds = rest.split_once('(').map_or("", |(_, k)| k.trim_end_matches(')'));
            for kind in kinds.split(',') {
                if let Some((k, n)) = kind.split_once(':') {
                    if matches!(k.trim(), "link" | "dev" | "special") {
                        self.files += number(n);
                    }
                }
            }
        } else {
            return false;
        }
        true
    }
}

/// Where a pass gets its principal from.
type Principal = (FetchDir, Fetched, Layout);

impl<'a> Mirror<'a> {
    /// A mirror for `cfg`, its state as found (or a fresh one); nothing is
    /// written until [`Mirror::settle_ownership`] allowed it.
    pub fn new(cfg: Config, clock: Clock, stop: &'a AtomicBool) -> Result<Mirror<'a>> {
        let now = clock.now();
        let state = load_state(&cfg.state_file)?.unwrap_or_else(|| State::fresh(&cfg.remote.src, &now));
        let excluded = cfg
            .excludes
            .iter()
            .map(|p| crate::pattern::Pattern::parse(p).map_err(anyhow::Error::msg))
            .collect::<Result<_>>()?;
        Ok(Mirror {
            cfg,
            state,
            clock,
            stop,
            deletes_this_run: 0,
            full: false,
            writable: false,
            prefetched: None,
            adopt_counted: false,
            future_seen: HashSet::new(),
            on_heartbeat: None,
            excluded,
        })
    }

    /// Whether the user excluded `path` (its events are skipped).
    fn is_excluded(&self, path: &str) -> bool {
        self.excluded.iter().any(|p| p.excludes(path, false))
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

    /// Write the state atomically (only once writable, never in `--dry-run`).
    pub fn save(&mut self) -> Result<()> {
        if self.cfg.dry_run || !self.writable {
            return Ok(());
        }
        self.state.heartbeat = Some(self.clock.now());
        write_state(&self.cfg.state_file, &self.state)
    }

    /// For a long rsync: write a copy of the state with the running pass
    /// and a new heartbeat (the state itself is not touched), then call
    /// `hook` (the [`Mirror::on_heartbeat`] taken out while the rsync runs).
    fn heartbeat_writer<'h>(
        &self,
        hook: &'h mut Option<Box<dyn FnMut() + 'a>>,
    ) -> Box<dyn FnMut(&crate::mirror::progress::Running) + 'h>
    where
        'a: 'h,
    {
        let writable = self.writable && !self.cfg.dry_run;
        let mut copy = if writable { self.state.clone() } else { State::default() };
        let (file, clock) = (self.cfg.state_file.clone(), self.clock.clone());
        Box::new(move |running: &crate::mirror::progress::Running| {
            if !writable {
                return;
            }
            copy.heartbeat = Some(clock.now());
            copy.running = Some(running.clone());
            match write_state(&file, &copy) {
                Ok(()) => {
                    if let Some(h) = hook.as_mut() {
                        h();
                    }
                }
                Err(e) => tracing::warn!("heartbeat: {e:#}"),
            }
        })
    }

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
    fn with_retries<T>(&mut self, what: &str, mut f: impl FnMut() -> Result<T, RsyncError>) -> Result<T> {
        let mut delay = self.cfg.backoff;
        let mut attempt = 1;
        loop {
            match f() {
                Ok(v) => return Ok(v),
                Err(e) => {
                    self.state.error(e.kind());
                    tracing::debug!("{what}: {}", e.details());
                    if self.stopped() {
                        self.save()?;
                        return Err(Interrupted.into());
                    }
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
        if self.cfg.dry_run || !self.writable {
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

    /// Fetch the whole index (link and every recentfile) in one call, with
    /// retries; false when it cannot be named by a filter.
    fn fetch_index(&mut self, dir: &FetchDir) -> Result<bool> {
        let remote = self.cfg.remote.clone();
        let settings = self.cfg.rsync.clone();
        let what = format!("fetching the recentfiles of {}", remote.root);
        self.with_retries(&what, || dir.fetch_index(&remote, &settings))
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
    /// asked for ([`State::refetch`]); or, when a whole-tree pass is due
    /// or the link's target is not known yet, the whole index
    /// ([`FetchDir::fetch_index`]). Returns its name, content and layout.
    fn fetch_principal(&mut self, dir: &FetchDir) -> Result<(Fetched, Layout)> {
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
            if !indexed && !dir.has(&target) {
                // The link points elsewhere than last time.
                self.fetch(dir, &[&target])?;
            }
            target
        } else {
            remote.name.clone()
        };
        let rf = dir
            .read(&name, self.cfg.max_recentfile_size)?
            .with_context(|| format!("remote principal {} does not exist", remote.source(&name)))?;
        let layout = remote::check_meta(&name, &rf)?;
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

    // ----- ownership ---------------------------------------------------

    /// Decide whether the localroot may be mirrored into (module
    /// [`crate::mirror::ownership`]); a refusal is an error that names `--adopt`.
    /// When the decision needs the remote principal it is fetched into a
    /// temp dir outside the target and kept for the first pass. With
    /// `apply` (the lock is held, or a dry run) the decision is acted on:
    /// the state is taken over, switched or made fresh, and, unless a dry
    /// run, the marker `.rrr/id` and the state are written. Without it
    /// nothing is written.
    pub fn settle_ownership(&mut self, adopt: bool, apply: bool) -> Result<()> {
        // The tree first, the state second: a run that starts a mirror
        // saves its state before the first byte, so a tree seen with files
        // is never paired with a state read before that run saved it.
        let root = self.cfg.localroot.clone();
        let tree = ownership::tree_kind(&root)?;
        let on_disk = load_state(&self.cfg.state_file)?;
        let as_found = on_disk.clone();
        let decision = loop {
            let facts = self.facts(on_disk.as_ref(), adopt, tree);
            let verdict = ownership::decide(&facts);
            // A tree that is not ours yet: the remote must answer with a
            // valid principal before anything is created in it.
            let needs_principal = !matches!(verdict, Decision::Owned | Decision::Refuse(_));
            match verdict {
                Decision::Refuse(r) => return Err(Refused(self.refusal_message(&r, on_disk.as_ref(), &facts)).into()),
                _ if needs_principal && self.prefetched.is_none() => {
                    let dir = FetchDir::new(&std::env::temp_dir())?;
                    let (p, l) = self.fetch_principal(&dir)?;
                    self.prefetched = Some((dir, p, l));
                }
                Decision::NeedPrincipal => bail!("internal error: ownership undecided with the principal fetched"),
                d => break (d, facts),
            }
        };
        let (decision, facts) = decision;
        if decision == Decision::Adopt && !self.adopt_counted && !self.cfg.dry_run {
            self.count_adopt_deletes()?;
        }
        if !apply {
            return Ok(());
        }
        let now = self.clock.now();
        let src = self.cfg.remote.src.clone();
        let shown = root.display();
        let remote_coll = facts.remote.as_ref().map_or_else(String::new, |c| format!(" ({c})"));
        self.state = match decision {
            Decision::Owned => on_disk.expect("owned implies a state"),
            Decision::Switch => {
                let mut st = on_disk.expect("a switch implies a state");
                tracing::info!(
                    "{shown}: switching from {} to {src}, a mirror of the same collection{remote_coll}",
                    st.remote
                );
                st.remote = src;
                st
            }
            Decision::Fresh => State::fresh(&src, &now),
            Decision::AutoAdopt => {
                tracing::info!(
                    "adopting {shown}: it holds the principal of {src}'s collection{remote_coll} \
                     (a mirror made by rrr-client or rsync); the first pass reconciles it with one rsync"
                );
                State::fresh(&src, &now)
            }
            Decision::Adopt => {
                tracing::info!("adopting {shown} as a mirror of {src} (--adopt)");
                State::fresh(&src, &now)
            }
            Decision::NeedPrincipal | Decision::Refuse(_) => unreachable!("handled above"),
        };
        if self.state.id.is_none() {
            self.state.id = Some(ownership::new_id());
        }
        // Kept sorted (State::fail); a state edited by hand may not be.
        self.state.failing.sort_by(|a, b| a.path.cmp(&b.path));
        self.state.failing.dedup_by(|a, b| a.path == b.path);
        if let Some((_, p, l)) = &self.prefetched {
            self.state.filenameroot = Some(l.filenameroot.clone());
            if decision != Decision::Owned && decision != Decision::Switch {
                self.state.dirtymark = p.rf.meta.dirtymark.clone();
            }
        }
        if self.cfg.dry_run {
            return Ok(());
        }
        self.writable = true;
        let id = self.state.id.clone().unwrap_or_default();
        if ownership::read_marker(&root).as_deref() != Some(id.as_str()) {
            ownership::write_marker(&root, &id)
                .with_context(|| format!("cannot write {}", ownership::marker_path(&root).display()))?;
        } else if as_found.as_ref() == Some(&self.state) {
            // Our own state, unchanged: the pass saves it soon enough (each
            // save is two fsyncs, a good part of an incremental pass).
            return Ok(());
        }
        self.save()
    }

    /// The facts [`ownership::decide`] needs.
    fn facts(&self, on_disk: Option<&State>, adopt: bool, tree: ownership::TreeKind) -> Facts {
        let root = &self.cfg.localroot;
        let remote = self.prefetched.as_ref().map(|(_, p, l)| CollectionId {
            filenameroot: l.filenameroot.clone(),
            dirtymark: p.rf.meta.dirtymark.clone(),
        });
        // The tree's own principal: the remote's name, or the state's.
        let local_name =
            self.prefetched.as_ref().map(|(_, p, _)| p.name.clone()).or_else(|| on_disk?.principal.clone());
        // Only a tree without a state, or with one older than ids, is
        // judged by it: not read (parsed) on every pass.
        let judged_by_tree = on_disk.is_none_or(|s| s.id.is_none());
        let local = local_name.filter(|_| judged_by_tree).and_then(|n| self.local_collection(&n));
        let norm = self.cfg.remote.normalized();
        Facts {
            has_state: on_disk.is_some(),
            state_id: on_disk.and_then(|s| s.id.clone()),
            state_collection: on_disk.and_then(State::collection),
            same_remote: on_disk.is_some_and(|s| Remote::parse(&s.remote).is_ok_and(|r| r.normalized() == norm)),
            external_state: ownership::is_external(&self.cfg.state_file, root),
            marker: ownership::read_marker(root),
            tree: Some(tree),
            remote,
            local,
            adopt,
        }
    }

    /// The collection of the recentfile `name` in the localroot, if it is
    /// one (a name that does not match its meta is not).
    fn local_collection(&self, name: &str) -> Option<CollectionId> {
        remote::check_name(name).ok()?;
        let p = self.cfg.localroot.join(name);
        let m = fs::metadata(&p).ok()?;
        if !m.is_file() || m.len() > self.cfg.max_recentfile_size {
            return None;
        }
        let rf = store::read_file(&p).ok()??;
        let (root, _, _) = crate::collection::split_name(name)?;
        if rf.meta.filenameroot.as_deref().is_some_and(|r| r != root) {
            return None;
        }
        Some(CollectionId { filenameroot: root.to_string(), dirtymark: rf.meta.dirtymark })
    }

    fn refusal_message(&self, r: &ownership::Refusal, st: Option<&State>, f: &Facts) -> String {
        let root = self.cfg.localroot.display();
        let src = &self.cfg.remote.src;
        let coll = |c: &Option<CollectionId>| c.as_ref().map_or("unknown collection".to_string(), |c| c.to_string());
        let adopt = format!(
            "Nothing was changed. To make {root} a mirror of {src}, deleting whatever {src} does not have, \
             run again with --adopt (--dry-run --adopt lists the deletes; --max-delete N caps them)."
        );
        match r {
            ownership::Refusal::NotAMirror => format!(
                "refusing to mirror into {root}: it is not empty, has no rrr state and no principal of {src}'s \
                 collection ({}) — a typo in --localroot? {adopt}",
                coll(&f.remote)
            ),
            ownership::Refusal::OtherCollection => format!(
                "refusing to mirror {src} into {root}: its state {} belongs to {} ({}), another collection than \
                 {src} ({}). {adopt}",
                self.cfg.state_file.display(),
                st.map_or("", |s| s.remote.as_str()),
                coll(&f.state_collection),
                coll(&f.remote)
            ),
            ownership::Refusal::NoMarker => format!(
                "refusing to use the state {} for {root}: the state belongs to a tree marked {}, but {} {} — \
                 is the filesystem mounted? Nothing was changed. If {root} really is that mirror, run again \
                 with --adopt.",
                self.cfg.state_file.display(),
                f.state_id.as_deref().unwrap_or("(no id)"),
                ownership::marker_path(&self.cfg.localroot).display(),
                f.marker.as_ref().map_or("is missing".to_string(), |m| format!("says {m}"))
            ),
        }
    }

    /// `--adopt` with `--max-delete`: count the deletes first (one dry
    /// run of the whole-tree rsync) and refuse when there are too many.
    fn count_adopt_deletes(&mut self) -> Result<()> {
        self.adopt_counted = true;
        let Some(max) = self.cfg.max_delete.filter(|_| !self.cfg.skip_deletes) else { return Ok(()) };
        let layout = match &self.prefetched {
            Some((_, _, l)) => l.clone(),
            None => {
                let dir = FetchDir::new(&std::env::temp_dir())?;
                let (p, l) = self.fetch_principal(&dir)?;
                self.prefetched = Some((dir, p, l.clone()));
                l
            }
        };
        let r = self.bootstrap_command(&layout, true, None)?;
        let mut seen = Itemized::default();
        self.with_retries("counting the deletes of --adopt", || {
            seen = Itemized::default();
            r.run_with(&mut |l| seen.line(l))
        })?;
        if seen.deleted > max {
            return Err(Refused(format!(
                "--adopt: making {} a mirror of {} would delete {} files or directories, more than \
                 --max-delete {max}; nothing was changed. List them with --dry-run --adopt.",
                self.cfg.localroot.display(),
                self.cfg.remote.src,
                seen.deleted
            ))
            .into());
        }
        tracing::info!("--adopt: {} deletes, within --max-delete {max}", seen.deleted);
        Ok(())
    }

    // ----- installing our copies -----------------------------------------

    /// The clock plus one hour: the done-set never reaches past it.
    fn future_limit(&self) -> Epoch {
        Epoch::from_clock(self.clock.now_f64() + FUTURE_SECS)
    }

    /// Install `f` into the target: renamed as fetched, or, when it lists
    /// events a downstream must not see (refused, from the future, failing,
    /// or skipped by the reader), rewritten without them by rrr's emitter.
    fn install(&mut self, dir: &FetchDir, f: &Fetched, ignore: &IgnoreSet) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        let limit = self.future_limit();
        let keep = self.publishable(&f.rf.events, ignore, &limit);
        self.install_kept(dir, f, &keep)
    }

    /// Install `f` with only the events `keep` says.
    fn install_kept(&mut self, dir: &FetchDir, f: &Fetched, keep: &[bool]) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        let dst = self.cfg.localroot.join(&f.name);
        let newest = keep.iter().zip(&f.rf.events).find(|(k, _)| **k).map(|(_, e)| e.epoch.clone());
        if keep.iter().all(|k| *k) && f.rf.skipped.is_empty() {
            match fs::rename(dir.file(&f.name), &dst) {
                Ok(()) => {}
                // The preflight's fetch dir is outside the target.
                Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                    let bytes = fs::read(dir.file(&f.name))?;
                    store::write_atomic(&dst, &bytes, None)?;
                }
                Err(e) => return Err(e).with_context(|| format!("cannot install {}", dst.display())),
            }
        } else {
            let mut rf = Recentfile { meta: f.rf.meta.clone(), events: Vec::new(), skipped: Vec::new() };
            rf.events = f.rf.events.iter().zip(keep).filter(|(_, k)| **k).map(|(e, _)| e.clone()).collect();
            let format = store::format_of(&dst).map_err(anyhow::Error::msg)?;
            let producer = Producer { program: program_name(), time: self.clock.now() };
            let written = match format {
                Format::Yaml => store::write_atomic_with(&dst, self.clock.file_mtime(), |out| {
                    crate::recentfile::yaml::emit_to(&rf, &producer, out)
                }),
                Format::Json => store::write_atomic(
                    &dst,
                    &crate::recentfile::serialize(&rf, format, &producer),
                    self.clock.file_mtime(),
                ),
            };
            written.with_context(|| format!("cannot install {}", dst.display()))?;
        }
        match newest {
            Some(e) => self.state.installed.insert(f.name.clone(), e),
            None => self.state.installed.remove(&f.name),
        };
        Ok(())
    }

    /// Which of `events` may be published: not hostile, not from the
    /// future, not a failing path.
    fn publishable(&self, events: &[Event], ignore: &IgnoreSet, limit: &Epoch) -> Vec<bool> {
        let failing = self.state.failing_set();
        let mut safe = HashSet::new();
        events
            .iter()
            .map(|e| {
                e.epoch <= *limit
                    && !under_any(&failing, &e.path)
                    && !self.is_excluded(&e.path)
                    && check_event_path(&self.cfg.localroot, &e.path, ignore, &mut safe).is_none()
            })
            .collect()
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

    // ----- the pass ----------------------------------------------------

    /// Run one pass.
    pub fn pass(&mut self) -> Result<PassReport> {
        let t0 = Instant::now();
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
                if rep.ok {
                    self.state.last_success = Some(self.clock.now());
                    self.state.last_error = None;
                } else {
                    self.state.last_error = rep.errors.first().cloned();
                }
                if rep.complete {
                    self.state.last_complete = Some(self.clock.now());
                }
                self.save()?;
                Ok(rep)
            }
            Err(e) => {
                if e.downcast_ref::<Interrupted>().is_none() {
                    self.state.last_error = Some(format!("{e:#}"));
                    let _ = self.save();
                }
                Err(e)
            }
        }
    }

    /// No done-set reaches past the clock plus one hour (DECISIONS.md):
    /// a far-future epoch can never poison it, not even an old state's.
    /// Returns whether anything was above the limit.
    fn cap_done(&mut self) -> bool {
        let limit = self.future_limit();
        self.state.done.values_mut().fold(false, |any, ds| ds.cap(&limit) | any)
    }

    fn pass_inner(&mut self, rep: &mut PassReport) -> Result<()> {
        let (dir, principal, layout) = match self.principal() {
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

    /// The whole-tree rsync: `-rlt --safe-links`, the ignore set excluded,
    /// `--delete` within `--max-delete` unless `--skip-deletes`; what it
    /// did is read from `--stats` (a dry run lists it with [`OUT_FORMAT`]).
    ///
    /// Its temp files go beside their files, as rsync's own default: with
    /// `--temp-dir` every new file's inode was allocated near one directory
    /// and renamed out of it, which made a first mirror of many small files
    /// twice as slow on ext4 (10k files: 2.3-2.8 s against 0.9-1.7 s). rsync
    /// removes its temp file when stopped (and rrr's death stops it); one
    /// left by an rsync killed outright is deleted by the next whole-tree
    /// pass, which a killed one always owes. Only with `--skip-deletes`,
    /// which cannot delete them, does it keep `temp_dir`.
    fn bootstrap_command(&self, layout: &Layout, dry: bool, temp_dir: Option<&Path>) -> Result<Rsync> {
        let mut r = self.cfg.rsync.command(self.cfg.remote.transport);
        // `--info=progress2` drives the bar, the log's progress lines and
        // the heartbeat (one line every so often, not one per file).
        r.args(["-rlt", "--safe-links", "--info=progress2"]);
        if dry {
            r.args(["--dry-run", OUT_FORMAT]);
        } else {
            // Counted from its summary: a line per file cost rsync a quarter
            // of a first mirror of small files (10k: 1.05 s against 0.80 s).
            r.arg("--stats");
        }
        if !self.cfg.skip_deletes {
            r.arg("--delete");
            if let Some(n) = self.cfg.max_delete.filter(|_| !dry) {
                let left = n.saturating_sub(self.deletes_this_run);
                r.arg(format!("--max-delete={left}"));
            }
            r.arg(format!("--filter=H {RSYNC_TEMP_PATTERN}"));
        } else {
            if let Some(t) = temp_dir {
                r.arg(format!("--temp-dir={}", t.display()));
            }
            r.arg(format!("--exclude={RSYNC_TEMP_PATTERN}"));
        }
        for x in bootstrap_excludes(&layout.filenameroot).iter().chain(&self.cfg.excludes) {
            r.arg(format!("--exclude={x}"));
        }
        r.arg(self.cfg.remote.tree_source());
        r.arg(format!("{}/", self.cfg.localroot.display()));
        Ok(r)
    }

    /// One whole-tree rsync, then everything up to the principal's newest
    /// epoch is done. The recentfiles are fetched before the tree (so they
    /// list nothing the tree lacks), validated, and installed after it
    /// without the events a downstream must not see.
    fn bootstrap(&mut self, dir: &FetchDir, principal: Fetched, layout: &Layout, rep: &mut PassReport) -> Result<()> {
        let names: Vec<String> = layout.intervals.iter().skip(1).map(|iv| layout.name_of(iv)).collect();
        // Usually fetched with the principal already (the whole index);
        // not when a changed dirtymark made this pass a whole-tree one.
        let missing: Vec<&str> =
            names.iter().map(String::as_str).filter(|n| !dir.has_whole_index() && !dir.has(n)).collect();
        if !missing.is_empty() {
            self.fetch(dir, &missing)?;
        }
        let dry = self.cfg.dry_run;
        if !dry && !self.state.resync && !self.state.done_union().is_empty() {
            // Owed until it is done: an interrupted `--full` pass too, and
            // the next whole-tree pass removes what a killed rsync left.
            // (Without a done-set the next pass is a whole-tree one anyway.)
            self.state.resync = true;
            self.save()?;
        }
        let temp = if dry || !self.cfg.skip_deletes { None } else { Some(self.rsync_temp_dir()?) };
        let r = self.bootstrap_command(layout, dry, temp.as_deref())?;
        tracing::info!("bootstrap: one rsync of the whole tree{}", if dry { " (dry run)" } else { "" });
        let mut seen = Itemized::listing(dry);
        // The larger recentfiles are read on a second thread meanwhile
        // (they are installed after the tree): 8 × 19 MB after `init
        // --aggregate` of 200k files, ~0.4 s of CPU.
        let max_size = self.cfg.max_recentfile_size;
        let (bar, started) = (self.cfg.progress, self.clock.now());
        let mut hook = self.on_heartbeat.take();
        let (index, res) = std::thread::scope(|sc| {
            let reader = sc.spawn(|| Index::read(principal, dir, &names, max_size));
            let mut progress =
                crate::mirror::progress::Reporter::new(bar, "bootstrap", started, self.heartbeat_writer(&mut hook));
            let res = self.with_retries("bootstrap rsync", || {
                seen = Itemized::listing(dry);
                r.run_with(&mut |line| {
                    seen.line(line);
                    progress.line(line);
                })
            });
            progress.finish();
            (reader.join(), res)
        });
        self.on_heartbeat = hook;
        let index = index.map_err(|_| anyhow!("internal error: reading the recentfiles failed"))?;
        for (name, e) in &index.errors {
            let msg = format!("cannot use the remote {name} (not installed): {e:#}");
            tracing::warn!("{msg}");
            rep.errors.push(msg);
        }
        let fetched = &index.files;
        rep.read = fetched.iter().map(|f| f.name.clone()).collect();
        let limit = self.future_limit();
        let newest =
            fetched.iter().filter_map(|f| f.rf.events.iter().find(|e| e.epoch <= limit)).map(|e| e.epoch.clone()).max();
        let (outcome, max_delete_hit) = match res {
            Ok(out) => (Some(out), false),
            Err(e) if e.downcast_ref::<RsyncError>().is_some_and(|r| r.code == Some(25)) => (None, true),
            Err(e) => return Err(e),
        };
        if dry {
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
        if dry {
            return Ok(());
        }
        if let Some(out) = &outcome {
            rep.vanished += out.vanished.len() as u64;
            if out.deletion_skipped && !self.cfg.skip_deletes {
                tracing::warn!(
                    "rsync skipped the deletes of the whole-tree pass because the origin had \
                     read errors; it is repeated once no path is failing"
                );
                self.state.resync = true;
            }
            self.record_failures(out, None, fetched, rep);
        }
        // Leftovers of the Perl client.
        if let Ok(rd) = fs::read_dir(&self.cfg.localroot) {
            for de in rd.flatten() {
                if de.file_name().to_str().is_some_and(|n| n.starts_with(".FRMRecent-")) {
                    let _ = fs::remove_file(de.path());
                }
            }
        }
        // Validate what the recentfiles list before installing them: each
        // distinct path once (after `init --aggregate` every file lists
        // every path).
        let ignore = Self::ignore_set(layout);
        let done = self.state.done_union();
        let mut safe = HashSet::new();
        let verdicts: Vec<Option<String>> = index
            .paths
            .iter()
            .map(|&(f, e)| check_event_path(&self.cfg.localroot, index.path(f, e), &ignore, &mut safe))
            .collect();
        let failing_now = self.state.failing.clone();
        let failing: HashSet<&str> = failing_now.iter().map(|f| f.path.as_str()).collect();
        let mut reported: HashSet<(String, String)> = HashSet::new();
        let mut keeps: Vec<Vec<bool>> = Vec::with_capacity(fetched.len());
        for (f, ids) in fetched.iter().zip(&index.ids) {
            self.refuse_skipped(f, &done, rep);
            // Strictly decreasing epochs: the future ones come first.
            let past = f.rf.events.partition_point(|e| e.epoch > limit);
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
        for (f, keep) in fetched.iter().zip(&keeps).rev() {
            self.install_kept(dir, f, keep)?;
        }
        self.install_link(&fetched[0].name)?;
        let ds = self.state.done.entry(fetched[0].name.clone()).or_default();
        ds.insert(newest.unwrap_or_else(done::beginning), done::beginning());
        self.state.pending_deletes.clear();
        self.state.refetch.clear();
        rep.complete = rep.errors.is_empty() && !self.state.resync;
        // Freeing millions of events takes a while; not on the way out.
        std::thread::spawn(move || drop(index));
        // The pass saves the state when it ends, right after this.
        Ok(())
    }

    /// The event path rsync means by `reported` (module-relative with a
    /// leading `/` through a daemon below the module, absolute for a local
    /// source). With `asked`, only one of those paths.
    fn event_path_of(&self, reported: &str, asked: Option<&HashSet<&str>>) -> Option<String> {
        let r = reported.trim_start_matches('/');
        let mut cands: Vec<&str> = Vec::new();
        let (_, prefix) = self.cfg.remote.files_from_base();
        if let Some(x) = prefix.strip_suffix("./").and_then(|sub| r.strip_prefix(sub)) {
            cands.push(x);
        }
        let root = std::path::absolute(&self.cfg.remote.root).unwrap_or_else(|_| self.cfg.remote.root.clone().into());
        let root = root.to_string_lossy();
        let root = root.trim_matches('/');
        if let Some(x) = r.strip_prefix(root).and_then(|x| x.strip_prefix('/')) {
            cands.push(x);
        }
        cands.push(r);
        match asked {
            Some(asked) => cands.iter().find(|c| asked.contains(**c)).map(|c| c.to_string()).or_else(|| {
                // Another spelling (e.g. over ssh): the longest asked path it ends with.
                asked
                    .iter()
                    .filter(|p| r == **p || r.ends_with(&format!("/{p}")))
                    .max_by_key(|p| p.len())
                    .map(|p| p.to_string())
            }),
            None => cands.into_iter().find(|c| check_relative_path(c).is_ok()).map(str::to_string),
        }
    }

    /// Note the paths an rsync run could not get: each in `failing` (with
    /// its newest event's epoch), said once on stderr. `asked`: the paths
    /// of a `--files-from` run; a failure rsync reports for another path
    /// is an error of the pass.
    fn record_failures(
        &mut self,
        out: &RsyncOutcome,
        asked: Option<(&HashSet<&str>, &HashMap<&str, &Epoch>)>,
        fetched: &[Fetched],
        rep: &mut PassReport,
    ) -> HashSet<String> {
        let now = self.clock.now();
        let mut failed = HashSet::new();
        // For the bootstrap: each path's newest event in the fetched files.
        let mut newest: HashMap<&str, &Epoch> = HashMap::new();
        if asked.is_none() && !out.failed.is_empty() {
            for e in fetched.iter().flat_map(|f| f.rf.events.iter()) {
                newest.entry(e.path.as_str()).and_modify(|n| *n = (*n).max(&e.epoch)).or_insert(&e.epoch);
            }
        }
        for fp in &out.failed {
            let Some(path) = self.event_path_of(&fp.path, asked.map(|a| a.0)) else {
                let msg = format!("rsync could not send {:?}, a path rrr did not ask for: {}", fp.path, fp.message);
                tracing::error!("{msg}");
                rep.errors.push(msg);
                continue;
            };
            let epochs = asked.map_or(&newest, |a| a.1);
            let epoch = epochs.get(path.as_str()).map(|e| (*e).clone());
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

    /// Refuse the events the reader skipped (an over-long path, an unknown
    /// type) that are not done yet, and mark them done.
    fn refuse_skipped(&mut self, f: &Fetched, done: &DoneSet, rep: &mut PassReport) {
        for s in &f.rf.skipped {
            let Ok(epoch) = Epoch::parse(&s.epoch) else { continue };
            if done.covered(&epoch) || self.cfg.dry_run {
                continue;
            }
            let e = Refusal {
                file: f.name.clone(),
                epoch: epoch.clone(),
                kind: None,
                path: reported_path(&s.path),
                reason: s.reason.clone(),
            };
            tracing::warn!("refused event {} {}: {}", e.epoch, shown_path(&s.path), e.reason);
            rep.refused.push(e);
            self.state.counters.refused += 1;
            self.state.done.entry(f.name.clone()).or_default().insert(epoch.clone(), epoch);
        }
    }

    /// Walk the recentfiles smallest first (module docs, step 3).
    fn incremental(&mut self, dir: &FetchDir, principal: Fetched, layout: &Layout, rep: &mut PassReport) -> Result<()> {
        let ignore = Self::ignore_set(layout);
        let limit = self.future_limit();
        // path -> newest epoch seen in this pass (smaller files first).
        let mut newest_seen: HashMap<String, Epoch> = HashMap::new();
        // Paths rsync was asked for in this pass.
        let mut attempted: HashSet<String> = HashSet::new();
        let mut all_done = true;
        let principal_name = principal.name.clone();
        let mut current = principal;
        let mut i = 0;
        // Pending deletes of an earlier run go first into the delete queue.
        let mut carried: Vec<PendingDelete> = std::mem::take(&mut self.state.pending_deletes);
        // Files whose events are done, waiting to be installed until our
        // copy of the next larger file is (see [`Mirror::our_copy`]).
        let mut waiting: Vec<String> = Vec::new();
        let note_seen = |seen: &mut HashMap<String, Epoch>, rf: &Recentfile| {
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

    /// How our copy of the recentfile `next` joins `rf`, the next smaller
    /// file: a [`OurCopy::Gap`] when it ends before `rf` begins, so that a
    /// downstream mirror reading our copies would miss the events between
    /// them. That happens after the origin's aggregate truncated its
    /// principal past the events our copy of the next file has (about once
    /// per principal interval).
    fn our_copy(&self, rf: &Recentfile, next: &str) -> OurCopy {
        match (rf.oldest(), self.state.installed.get(next)) {
            (Some(o), Some(have)) if o.epoch > *have => OurCopy::Gap,
            (_, Some(_)) => OurCopy::Joins,
            // Not ours (a tree rrr took over), or none at all.
            (_, None) if self.cfg.localroot.join(next).exists() => OurCopy::Joins,
            (_, None) => OurCopy::Missing,
        }
    }

    /// Install the files that waited for the copy just installed, the
    /// larger first (read again from `dir`: only their names were kept).
    fn install_waiting(
        &mut self,
        dir: &FetchDir,
        waiting: &mut Vec<String>,
        ignore: &IgnoreSet,
        principal: &str,
    ) -> Result<()> {
        while let Some(name) = waiting.pop() {
            let rf = dir
                .read(&name, self.cfg.max_recentfile_size)?
                .with_context(|| format!("{} is gone from {}", name, dir.path().display()))?;
            self.install(dir, &Fetched { name: name.clone(), rf }, ignore)?;
            if name == principal {
                self.install_link(&name)?;
            }
        }
        Ok(())
    }

    /// Handle the not-done events of one file. Returns true when all its
    /// events are done afterwards (but those from the future).
    fn process_file(
        &mut self,
        f: &Fetched,
        ignore: &IgnoreSet,
        newest_seen: &mut HashMap<String, Epoch>,
        carried: &mut Vec<PendingDelete>,
        attempted: &mut HashSet<String>,
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
        let mut seen_here: HashMap<&str, &Epoch> = HashMap::new();
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
        let transfers_ok = self.transfer(f, &epochs, &news, ignore, attempted, rep)?;
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
        // Saved by the caller: repeating a delete is a no-op.
        Ok(transfers_ok && left == 0)
    }

    /// One `--files-from` rsync of `paths` (sorted, unique) into the target.
    fn run_files_from(&mut self, what: &str, paths: &[&str], rep: &mut PassReport) -> Result<RsyncOutcome> {
        let (source, prefix) = self.cfg.remote.files_from_base();
        let listed: Vec<String> = paths.iter().map(|p| format!("{prefix}{p}")).collect();
        let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
        let list = crate::rsync::write_files_from(&self.cfg.state_dir(), &listed)
            .with_context(|| format!("cannot write a --files-from list in {}", self.cfg.state_dir().display()))?;
        let mut r = self.cfg.rsync.command(self.cfg.remote.transport);
        r.args(["-rlt", "--safe-links", "--from0", OUT_FORMAT]);
        r.arg(format!("--temp-dir={}", self.rsync_temp_dir()?.display()));
        r.arg(format!("--files-from={}", list.path().display()));
        r.arg(source);
        r.arg(format!("{}/", self.cfg.localroot.display()));
        let mut seen = Itemized::default();
        let res = self.with_retries(what, || {
            seen = Itemized::default();
            r.run_with(&mut |line| seen.line(line))
        });
        // What arrived before a failure arrived too.
        rep.transferred += seen.files;
        rep.bytes += seen.bytes;
        self.state.counters.files += seen.files;
        self.state.counters.bytes += seen.bytes;
        let out = res?;
        rep.vanished += out.vanished.len() as u64;
        Ok(out)
    }

    /// Transfer the `new` events `news` (indices into `f`) in chunks.
    /// Returns false when a chunk failed (the error is in the report).
    fn transfer(
        &mut self,
        f: &Fetched,
        epochs: &[&Epoch],
        news: &[usize],
        ignore: &IgnoreSet,
        attempted: &mut HashSet<String>,
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
                let out = match self.run_files_from("transfer", &paths, rep) {
                    Ok(out) => out,
                    Err(e) => {
                        pb.finish_and_clear();
                        chunk_failed(e, rep)?;
                        return Ok(false);
                    }
                };
                // The newest event of each path in this chunk.
                let mut newest: HashMap<&str, &Epoch> = HashMap::new();
                for &ix in &ok_ix {
                    let e = &f.rf.events[ix];
                    newest.entry(e.path.as_str()).or_insert(&e.epoch);
                }
                let asked: HashSet<&str> = paths.iter().copied().collect();
                let failed = self.record_failures(&out, Some((&asked, &newest)), &[], rep);
                for p in &paths {
                    attempted.insert(p.to_string());
                    if !failed.contains(*p) {
                        self.state.unfail(p);
                    }
                }
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

    /// Try the failing paths again, but those a newer event in `seen`
    /// supersedes (that event is handled instead): one `--files-from`
    /// rsync per chunk.
    fn retry_failing(
        &mut self,
        ignore: &IgnoreSet,
        seen: &HashMap<String, Epoch>,
        attempted: &mut HashSet<String>,
        rep: &mut PassReport,
    ) -> Result<()> {
        let superseded = |f: &Failing| seen.get(&f.path).is_some_and(|n| f.epoch.as_ref().is_none_or(|e| n > e));
        let mut safe = HashSet::new();
        let mut todo: Vec<(String, Option<Epoch>)> = Vec::new();
        let mut dropped: Vec<String> = Vec::new();
        for f in &self.state.failing {
            if attempted.contains(&f.path) || superseded(f) {
                continue;
            }
            match check_event_path(&self.cfg.localroot, &f.path, ignore, &mut safe) {
                None => todo.push((f.path.clone(), f.epoch.clone())),
                Some(why) => {
                    tracing::info!("no longer retrying {}: {why}", shown_path(&f.path));
                    dropped.push(f.path.clone());
                }
            }
        }
        self.state.failing.retain(|f| !dropped.contains(&f.path));
        if todo.is_empty() {
            return Ok(());
        }
        todo.sort();
        for chunk in todo.chunks(self.cfg.max_files_per_connection.max(1)) {
            self.check_stop()?;
            let paths: Vec<&str> = chunk.iter().map(|(p, _)| p.as_str()).collect();
            attempted.extend(paths.iter().map(|p| p.to_string()));
            let out = match self.run_files_from("retrying failing paths", &paths, rep) {
                Ok(out) => out,
                Err(e) => {
                    chunk_failed(e, rep)?;
                    break;
                }
            };
            let asked: HashSet<&str> = paths.iter().copied().collect();
            let epochs: HashMap<&str, &Epoch> =
                chunk.iter().filter_map(|(p, e)| e.as_ref().map(|e| (p.as_str(), e))).collect();
            let failed = self.record_failures(&out, Some((&asked, &epochs)), &[], rep);
            let vanished: HashSet<String> =
                out.vanished.iter().filter_map(|v| self.event_path_of(v, Some(&asked))).collect();
            for p in &paths {
                if !failed.contains(*p) {
                    let how = if vanished.contains(*p) { "is gone at the origin" } else { "arrived" };
                    tracing::info!("{} {how}; no longer failing", shown_path(p));
                    self.state.unfail(p);
                }
            }
            self.save()?;
        }
        Ok(())
    }

    /// Remove the directories above `path` that its delete left empty,
    /// deepest first: never the localroot or above it, never `.rrr` or a
    /// top-level `lost+found`, never one that still holds anything (rmdir
    /// refuses). The parents were checked to be real directories.
    fn prune_parents(&self, path: &str) {
        let mut p = path;
        while let Some(i) = p.rfind('/') {
            p = &p[..i];
            if p == LOST_FOUND || p == ".rrr" || fs::remove_dir(self.cfg.localroot.join(p)).is_err() {
                break;
            }
        }
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
            let why = if p.path == LOST_FOUND || p.path.starts_with("lost+found/") {
                Some("rrr never deletes lost+found".to_string())
            } else {
                check_event_path(&self.cfg.localroot, &p.path, ignore, &mut safe)
            };
            if let Some(reason) = why {
                tracing::warn!("refused delete event {} {}: {reason}", p.epoch, shown_path(&p.path));
                rep.refused.push(Refusal {
                    file: String::new(),
                    epoch: p.epoch.clone(),
                    kind: Some(EventKind::Delete),
                    path: reported_path(&p.path),
                    reason,
                });
                self.state.counters.refused += 1;
                on_done(&p, false);
                continue;
            }
            let target = self.cfg.localroot.join(&p.path);
            let unlinked = match fs::symlink_metadata(&target) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.prune_parents(&p.path);
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
                    self.prune_parents(&p.path);
                    on_done(&p, true);
                }
                Some(Err(e)) => {
                    let msg = format!("cannot delete {}: {e}", target.display());
                    tracing::error!("{msg}");
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
                    self.prune_parents(&p.path);
                    on_done(&p, true);
                }
                Err(e) => {
                    // A directory that is not empty stays: its files have their own events.
                    tracing::warn!("cannot remove directory {}: {e}", target.display());
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
            tracing::warn!("{msg}");
            rep.max_delete_reached = true;
        }
        rep.deletes_pending = left.len() as u64;
        let n = left.len();
        self.state.pending_deletes = left;
        Ok(n)
    }
}

/// How our copy of a larger recentfile joins the smaller one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OurCopy {
    Joins,
    Gap,
    Missing,
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

/// Report and count a hostile event; the caller marks it done.
fn refuse(rep: &mut PassReport, counters: &mut Counters, file: &str, e: &Event, reason: String) {
    tracing::warn!("refused {} event {} {}: {reason}", e.kind, e.epoch, shown_path(&e.path));
    rep.refused.push(Refusal {
        file: file.to_string(),
        epoch: e.epoch.clone(),
        kind: Some(e.kind),
        path: reported_path(&e.path),
        reason,
    });
    counters.refused += 1;
}

/// A path as the `--json` report carries it: exact, unless it is over-long.
fn reported_path(path: &str) -> String {
    if path.len() <= crate::recentfile::read::MAX_PATH_BYTES {
        path.to_string()
    } else {
        shown_path(path)
    }
}

/// `$0` for the `Producers` of the recentfiles a mirror rewrites.
fn program_name() -> String {
    std::env::args().next().unwrap_or_else(|| "rrr".into())
}

/// rsync filter rules for the bootstrap: the ignore set (DECISIONS.md),
/// and a top-level `lost+found` (excluded files are never deleted).
pub fn bootstrap_excludes(filenameroot: &str) -> Vec<String> {
    let r = filenameroot;
    vec![
        "/.rrr/".to_string(),
        format!("/{LOST_FOUND}/"),
        format!("/{r}.recent"),
        format!("/{r}.recent.*"),
        format!("/{r}-*.yaml"),
        format!("/{r}-*.json"),
        format!("/{r}-*.lock"),
        format!("/{r}-*.new"),
        ".~tmp~/".to_string(),
        ".FRMRecent-*".to_string(),
    ]
}

/// rsync's temp file names, `.NAME.XXXXXX`: never sent, and (unlike the
/// other excludes) deleted by a whole-tree pass with `--delete`, which is
/// how the leftovers of a transfer killed without `--temp-dir` go.
pub const RSYNC_TEMP_PATTERN: &str = ".*.[a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9]";

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
        let long = "x".repeat(4097);
        for bad in [
            "../x",
            "/abs",
            "a/../b",
            "a\nb",
            "a\0b",
            "link/x",
            "f/x",
            "RECENT-1h.yaml",
            ".rrr/state.json",
            "a//b",
            long.as_str(),
        ] {
            assert!(check(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn itemized_lines_count_what_arrived() {
        let mut s = Itemized::listing(true);
        for l in [
            "*deleting   0 old/x",
            "*deleting   0 old/",
            ".d..t...... 4096 ./",
            ">f+++++++++ 2 f",
            ">f..t...... 30 changed",
            "cL+++++++++ 1 l",
            "cd+++++++++ 4096 d/",
            ">f+++++++++ 3 d/with space",
            "Number of files: 3",
            "",
        ] {
            s.line(l);
        }
        assert_eq!((s.files, s.bytes, s.deleted), (4, 35, 2));
        assert_eq!(s.would, ["delete old/x", "delete old/", "new f", "new changed", "new l", "new d/with space"]);
    }

    #[test]
    fn stats_count_like_itemized_lines() {
        let mut s = Itemized::listing(false);
        for l in [
            "",
            "Number of files: 10,425 (reg: 10,382, dir: 42, link: 1)",
            "Number of created files: 1,424 (reg: 1,382, dir: 39, link: 2, dev: 1)",
            "Number of deleted files: 3 (reg: 2, dir: 1)",
            "Number of regular files transferred: 1,383",
            "Total file size: 5,187,727 bytes",
            "Total transferred file size: 1,187,724 bytes",
            "Literal data: 187,724 bytes",
            "sent 215,965 bytes  received 7,469 bytes  148,956.00 bytes/sec",
        ] {
            s.line(l);
        }
        assert_eq!((s.files, s.bytes, s.deleted), (1383 + 3, 1_187_724, 3));
    }

    #[test]
    fn failing_paths_are_recorded_once_each() {
        let now = Epoch::parse("1700000000.5").unwrap();
        let later = Epoch::parse("1700000100.5").unwrap();
        let mut s = State::fresh("rsync://h/m/RECENT.recent", &now);
        assert_eq!(s.fail("a/b", Some(&now), "denied", &now), 1);
        assert_eq!(s.fail("a/b", Some(&later), "denied again", &later), 2);
        assert_eq!(s.failing.len(), 1);
        assert_eq!((s.failing[0].epoch.as_ref(), s.failing[0].last.clone()), (Some(&later), later.clone()));
        assert_eq!(s.failing[0].first, now);
        s.fail("closed", None, "opendir", &now);
        let set = s.failing_set();
        assert!(under_any(&set, "a/b") && under_any(&set, "closed/f") && !under_any(&set, "a/bc"));
        s.unfail("a/b");
        assert_eq!(s.failing.len(), 1);
    }

    #[test]
    fn state_round_trips_and_tolerates_unknown_keys() {
        let now = Epoch::parse("1700000000.5").unwrap();
        let mut s = State::fresh("rsync://h/m/RECENT.recent", &now);
        s.done.entry("RECENT-1h.yaml".into()).or_default().insert(now.clone(), done::beginning());
        s.pending_deletes.push(PendingDelete { epoch: now.clone(), path: "a/b".into() });
        s.fail("x/y", Some(&now), "Permission denied (13)", &now);
        let mut v = serde_json::to_value(&s).unwrap();
        v["future_key"] = serde_json::json!(1);
        let back: State = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        assert!(back.done_union().complete_through(&now));
        // A state of an older rrr (no id, no failing) still reads.
        let old: State = serde_json::from_str(r#"{"version":1,"remote":"h::m/RECENT.recent"}"#).unwrap();
        assert_eq!((old.id, old.failing.len(), old.resync), (None, 0, false));
    }
}
