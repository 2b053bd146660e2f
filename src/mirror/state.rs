//! The mirror's state, `<localroot>/.rrr/state.json` (its format is in the
//! [module docs](super)): what is done, which copies are installed, what is
//! owed (pending deletes, `refetch`, `resync`) and failing, the counters;
//! loading it, saving it atomically, the heartbeat a long rsync writes, and
//! the cap that keeps a done-set from reaching into the future.

use super::ownership::{self, CollectionId};
pub(crate) use super::staging::{Expected, Tampered};
use super::Mirror;
use crate::done::DoneSet;
use crate::epoch::Epoch;
use crate::recentfile::RelPath;
use crate::store;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::Path;

/// A delete event saved before the transfers, applied after them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingDelete {
    pub epoch: Epoch,
    /// A string, or `{"bytes": "<hex>"}` for a name that is not UTF-8.
    pub path: RelPath,
}

/// Counters since the state was created.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Counters {
    /// Runs that tried a pass, from the first attempt on: failed and
    /// interrupted ones too, and a first pass that failed before the
    /// tree was ours.
    pub attempts: u64,
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
pub(crate) struct Failing {
    /// A string, or `{"bytes": "<hex>"}` for a name that is not UTF-8.
    pub path: RelPath,
    /// Its newest event seen (none when the bootstrap found it).
    pub epoch: Option<Epoch>,
    /// rsync's message.
    pub message: String,
    pub first: Epoch,
    pub last: Epoch,
    pub attempts: u64,
    /// With `--trust-key`: what its signed event says the file's bytes
    /// are (`mirror::staging`), so that a retry is checked against it too.
    /// Absent in state files written before, and for unhashed events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expected>,
}

/// How long a new event's file may be missing at the origin before it is
/// `missing upstream` (docs/decisions.md#missing-upstream): a delete event
/// usually follows an upload that was removed again within a pass or two.
/// Both must have passed: this many seconds of the mirror's clock since it
/// was first found missing …
pub(crate) const MISSING_GRACE_SECS: f64 = 600.0;
/// … and this many attempts (in different passes) that found it missing.
pub(crate) const MISSING_GRACE_ATTEMPTS: u64 = 2;

impl Failing {
    /// A missing path whose grace is over at `now`: no delete event
    /// explained it in [`MISSING_GRACE_ATTEMPTS`] passes and
    /// [`MISSING_GRACE_SECS`].
    pub fn overdue(&self, now: f64) -> bool {
        self.attempts >= MISSING_GRACE_ATTEMPTS && now - self.first.to_f64() >= MISSING_GRACE_SECS
    }
}

/// How an attempt at a pass ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Outcome {
    /// Finished without errors (refused events and held-back deletes are
    /// not errors).
    Success,
    Failed,
    /// Stopped by SIGINT/SIGTERM: neither a failure nor running.
    Interrupted,
    /// A whole-tree pass stopped before a mass delete (`--max-delete N`
    /// or `--accept-deletes` goes on): not a failure, but the mirror did
    /// not move, so it is not a success either.
    Held,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failed => "failed",
            Outcome::Interrupted => "interrupted",
            Outcome::Held => "held",
        }
    }
}

/// What the last `rrr verify` of `--verify-every` found: its missing
/// and different paths became failing paths for the pass that followed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct VerifyRecord {
    /// When it ran.
    pub time: Epoch,
    /// Indexed paths absent from the tree.
    pub missing: u64,
    /// Present paths of another size or hash than the index records.
    pub different: u64,
    /// Files the index does not know (reported, never deleted).
    pub unknown: u64,
    /// Why it could not run, if it could not.
    #[serde(default)]
    pub error: Option<String>,
}

/// The state file versions this rrr reads (and the one it writes).
pub(crate) const STATE_VERSION: u32 = 1;

/// The mirror's state (module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct State {
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
    /// New events whose file the origin did not have (rsync: no such file,
    /// or vanished), and that no newer event explained yet; sorted by path.
    /// Done, left out of our copies, retried along with the next transfer
    /// (or alone once [`MISSING_GRACE_SECS`] passed); `missing upstream`
    /// once [`Failing::overdue`]. `message` is empty.
    pub missing: Vec<Failing>,
    /// Paths rsync cannot carry (longer than its 4,096-byte limit), found
    /// by a whole-tree pass; sorted by path, epoch null. Left out of later
    /// whole-tree passes (their directory excluded) so that the rest of
    /// the tree, deletes included, goes on; looked at again by each
    /// `--full` pass (docs/decisions.md#quarantine).
    pub quarantined: Vec<Failing>,
    /// With `--trust-key`: paths whose bytes did not match their signed
    /// event (`mirror::staging`, docs/decisions.md#tampered), sorted by
    /// path. Each is failing too (retried every pass, left out of our
    /// copies) and was never installed; the bytes received are kept in
    /// `.rrr/quarantine/`. `check` CRITICAL "tampered"; the pass is not
    /// complete while one is listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tampered: Vec<Tampered>,
    pub future_events: u64,
    /// Deletes the mass-delete guard held in the last pass
    /// (docs/decisions.md#mass-deletes).
    pub held_deletes: u64,
    pub resync: bool,
    pub newest_applied: Option<Epoch>,
    pub counters: Counters,
    pub started: Option<Epoch>,
    pub last_success: Option<Epoch>,
    pub last_complete: Option<Epoch>,
    /// The last pass that had every event done, though paths missing
    /// upstream kept it from being complete: how far behind the mirror is
    /// for the files it fetches (`Mirror::behind_names`), where
    /// `last_complete` is what it owes its downstreams.
    pub caught_up: Option<Epoch>,
    pub last_error: Option<String>,
    /// When `last_error` happened.
    pub last_error_time: Option<Epoch>,
    /// When the last attempt (see [`Counters::attempts`]) started.
    pub last_attempt: Option<Epoch>,
    /// How the last attempt ended; `None` while the first one runs.
    pub last_outcome: Option<Outcome>,
    /// Failed attempts since the last success (interrupted ones do not
    /// count either way), from the first attempt on.
    pub consecutive_failures: u64,
    pub heartbeat: Option<Epoch>,
    /// The pass running now (a bootstrap's progress), saved with each heartbeat.
    pub running: Option<crate::mirror::pass_progress::Running>,
    /// The last whole-tree pass that finished (`--full-every`).
    pub last_full: Option<Epoch>,
    /// The last `--verify-every` run and what it found.
    pub last_verify: Option<VerifyRecord>,
    /// The origin's beacon this mirror holds and republishes (issue 35,
    /// `mirror::freshness`): `origin_lag` is now − its `time`.
    pub origin_beacon: Option<HeldBeacon>,
    /// Remotes (normalised) whose daemon refused a connection of ours for
    /// its `max connections` while a fetch of ours was finishing, and
    /// when: calls to them never overlap, from the first call of every
    /// later run on (a one-shot run from cron would otherwise spend one
    /// refused connection to relearn it each time).
    pub no_overlap: BTreeMap<String, Epoch>,
    /// With `--trust-key`: the last beacon this mirror accepted (its
    /// signature verified), the floor a later one must not go below
    /// (rollback, `mirror::trusted`).
    pub trusted: Option<TrustedBeacon>,
    /// With `--trust-key`: why the last pass refused what it fetched (a
    /// signature, an unsigned upstream, a rollback, a recentfile the beacon
    /// does not vouch for); `None` after a pass that verified. `check`
    /// CRITICAL "signature".
    pub trust_error: Option<String>,
    /// With several upstreams (docs/decisions.md#several-upstreams): the
    /// one the last pass read, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Each upstream's last result, in the order given (`mirror::upstreams`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<crate::mirror::upstreams::UpstreamRecord>,
    /// The newest epoch this mirror installed (a recentfile's newest event)
    /// or applied, per dirtymark (`""`: none): never read an upstream
    /// whose index is older (`mirror::upstreams`).
    pub newest_by_dirtymark: BTreeMap<String, Epoch>,
}

/// What the state keeps of the last accepted beacon (`recentfile::beacon::Beacon`
/// without its file list): enough for [`recentfile::beacon::Beacon::check_progress`]
/// and for `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TrustedBeacon {
    pub origin: String,
    /// The origin's signed time.
    pub time: Epoch,
    pub newest_epoch: Option<Epoch>,
    pub dirtymark: Option<Epoch>,
    /// The fingerprint (`SHA256:…`) of the trusted key that signed it.
    pub key: String,
    /// When this mirror accepted it (its own clock).
    pub accepted: Option<Epoch>,
    /// `--max-signature-age` in seconds when it was accepted (what
    /// `status` and `check` judge its age by).
    #[serde(default)]
    pub max_age: u64,
}

/// What the state keeps of the origin's beacon installed last
/// (`mirror::freshness`): who the origin is, its clock when it wrote the
/// beacon, and how often it promises to rewrite it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeldBeacon {
    pub origin: String,
    pub time: Epoch,
    pub interval: u64,
    /// The beacon says the origin signs: its `.sig` is fetched with it
    /// and republished, with or without `--trust-key`.
    #[serde(default)]
    pub signed: bool,
}

impl State {
    pub fn fresh(remote: &str, now: &Epoch) -> State {
        State {
            version: STATE_VERSION,
            id: Some(ownership::new_id()),
            remote: remote.to_string(),
            started: Some(now.clone()),
            ..State::default()
        }
    }

    /// Record how an attempt that started at `started` ended at `now`:
    /// a success resets the failures in a row and clears the last error,
    /// a failure counts and keeps `error`, an interruption changes neither.
    pub fn record_attempt(&mut self, started: &Epoch, outcome: Outcome, error: Option<&str>, now: &Epoch) {
        self.counters.attempts += 1;
        self.last_attempt = Some(started.clone());
        self.last_outcome = Some(outcome);
        match outcome {
            Outcome::Success => {
                self.consecutive_failures = 0;
                self.last_success = Some(now.clone());
                self.last_error = None;
                self.last_error_time = None;
            }
            Outcome::Failed => {
                self.consecutive_failures += 1;
                self.last_error = Some(error.unwrap_or("failed").to_string());
                self.last_error_time = Some(now.clone());
            }
            // last_success stays where it was: its age is what tells
            // monitoring that this mirror stands still.
            Outcome::Interrupted | Outcome::Held => {}
        }
    }

    /// A state that records only attempts that failed before the remote's
    /// collection was ever seen: it owns nothing yet, so the tree is
    /// judged as if it had no state (an empty tree is a fresh mirror, a
    /// filled one must show the remote's principal or take `--adopt`).
    pub fn is_attempts_only(&self) -> bool {
        self.filenameroot.is_none()
            && self.principal.is_none()
            && self.done.is_empty()
            && self.installed.is_empty()
            && self.last_success.is_none()
            && self.last_complete.is_none()
    }

    /// A fresh state for `remote` that keeps the attempt record (and the
    /// id, which the tree's marker may hold) of an attempts-only `self`.
    pub fn renewed(self, remote: &str, now: &Epoch) -> State {
        let fresh = State::fresh(remote, now);
        State {
            id: self.id.or(fresh.id),
            started: self.started.or(fresh.started),
            counters: Counters {
                attempts: self.counters.attempts,
                errors: self.counters.errors,
                ..Counters::default()
            },
            last_error: self.last_error,
            last_error_time: self.last_error_time,
            last_attempt: self.last_attempt,
            last_outcome: self.last_outcome,
            consecutive_failures: self.consecutive_failures,
            ..fresh
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

    pub(super) fn note_applied(&mut self, e: &Epoch) {
        if self.newest_applied.as_ref().is_none_or(|n| e > n) {
            self.newest_applied = Some(e.clone());
        }
        self.note_newest(e);
    }

    /// `e` was installed or applied under the current dirtymark: the
    /// mirror never reads an upstream older than that again.
    pub(super) fn note_newest(&mut self, e: &Epoch) {
        let key = crate::mirror::upstreams::dirtymark_key(self.dirtymark.as_ref());
        let newest = self.newest_by_dirtymark.entry(key).or_insert_with(|| e.clone());
        if e > newest {
            *newest = e.clone();
        }
    }

    pub(super) fn error(&mut self, class: &str) {
        *self.counters.errors.entry(class.to_string()).or_default() += 1;
    }

    /// Record that `path` could not be had (again). `failing` stays
    /// sorted by path, so that each lookup is a binary search.
    pub(super) fn fail(&mut self, path: impl AsRef<[u8]>, epoch: Option<&Epoch>, message: &str, now: &Epoch) -> u64 {
        note(&mut self.failing, path.as_ref(), epoch, message, now)
    }

    /// `path` arrived, vanished or was superseded: no longer failing.
    /// Returns whether it was.
    pub(super) fn unfail(&mut self, path: impl AsRef<[u8]>) -> bool {
        let path = path.as_ref();
        match self.failing.binary_search_by(|f| f.path.as_bytes().cmp(path)) {
            Ok(i) => {
                self.failing.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Record that the origin does not have `path`, listed by a new event
    /// at `epoch` (again): its attempts counted, its epoch the newest.
    /// Returns the attempts.
    pub(super) fn miss(&mut self, path: &RelPath, epoch: &Epoch, now: &Epoch) -> u64 {
        note(&mut self.missing, path.as_bytes(), Some(epoch), "", now)
    }

    /// Whether `path` is missing (a binary search: `missing` is sorted).
    pub(super) fn is_missing(&self, path: impl AsRef<[u8]>) -> bool {
        let path = path.as_ref();
        self.missing.binary_search_by(|m| m.path.as_bytes().cmp(path)).is_ok()
    }

    /// `path` arrived, is failing instead, or a newer event explained it:
    /// no longer missing.
    pub(super) fn unmiss(&mut self, path: impl AsRef<[u8]>) {
        let path = path.as_ref();
        if let Ok(i) = self.missing.binary_search_by(|m| m.path.as_bytes().cmp(path)) {
            self.missing.remove(i);
        }
    }

    /// Record that rsync cannot carry `path` (again), with its message.
    pub(super) fn quarantine(&mut self, path: &RelPath, message: &str, now: &Epoch) -> u64 {
        note(&mut self.quarantined, path.as_bytes(), None, message, now)
    }

    /// Remember what the signed events of `expect` say of their paths'
    /// bytes on their failing and missing entries, so that a retry of one
    /// is checked as its first transfer was.
    pub(super) fn remember_expected<'p>(&mut self, expect: impl Iterator<Item = (&'p RelPath, &'p Expected)>) {
        for (p, x) in expect {
            for list in [&mut self.failing, &mut self.missing] {
                if let Ok(i) = list.binary_search_by(|f| f.path.as_bytes().cmp(p.as_bytes())) {
                    list[i].expect = Some(x.clone());
                }
            }
        }
    }

    /// What the failing or missing entry of `path` remembers of its
    /// signed event's bytes.
    pub(super) fn expected_of(&self, path: &RelPath) -> Option<&Expected> {
        [&self.failing, &self.missing].into_iter().find_map(|list| {
            let i = list.binary_search_by(|f| f.path.as_bytes().cmp(path.as_bytes())).ok()?;
            list[i].expect.as_ref()
        })
    }

    /// The missing paths whose grace is over at `now` (seconds).
    pub fn missing_upstream(&self, now: f64) -> impl Iterator<Item = &Failing> {
        self.missing.iter().filter(move |m| m.overdue(now))
    }

    /// Failing and missing paths (and their directories), to leave out of
    /// installed copies: a downstream never asks us for a file we lack.
    pub(super) fn failing_set(&self) -> HashSet<&[u8]> {
        self.failing.iter().chain(&self.missing).map(|f| f.path.as_bytes()).collect()
    }
}

/// Record one more attempt at `path` in `list` (sorted by path, so that
/// each lookup is a binary search): its last time and message, and its
/// epoch when `epoch` is newer. Returns its attempts.
fn note(list: &mut Vec<Failing>, path: &[u8], epoch: Option<&Epoch>, message: &str, now: &Epoch) -> u64 {
    match list.binary_search_by(|f| f.path.as_bytes().cmp(path)) {
        Ok(i) => {
            let f = &mut list[i];
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
                path: RelPath::from(path),
                epoch: epoch.cloned(),
                message: message.to_string(),
                first: now.clone(),
                last: now.clone(),
                attempts: 1,
                expect: None,
            };
            list.insert(i, f);
            1
        }
    }
}

/// Whether `path` or one of its parent directories is in `set`.
pub(super) fn under_any(set: &HashSet<&[u8]>, path: impl AsRef<[u8]>) -> bool {
    let path = path.as_ref();
    if set.is_empty() {
        return false;
    }
    if set.contains(path) {
        return true;
    }
    path.iter().enumerate().any(|(i, &b)| b == b'/' && set.contains(&path[..i]))
}

/// Load the state file; `None` when there is none. A file this rrr
/// cannot use (unreadable, not JSON of the state's shape, a version it
/// does not know) is an error that names it and says how to recover.
pub(crate) fn load_state(path: &Path) -> Result<Option<State>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read mirror state {}", path.display())),
    };
    parse_state(&bytes).map(Some).map_err(|why| anyhow::anyhow!("mirror state {}: {why}", path.display()))
}

/// The state in `bytes`, or why it cannot be used with how to recover.
fn parse_state(bytes: &[u8]) -> std::result::Result<State, String> {
    let recover = "To recover, move the file away: the tree's files stay, and the next rmirror adopts the \
                   tree if it holds the remote's principal (else it refuses and names --adopt, which makes \
                   the tree a mirror of SRC, deleting what SRC does not have) and reconciles it with one \
                   whole-tree rsync";
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON ({e}). {recover}."))?;
    match value.get("version") {
        None => {}
        Some(v) if v.as_u64() == Some(u64::from(STATE_VERSION)) => {}
        Some(v) => {
            return Err(format!(
                "version {v} is not one this rrr knows (it reads version {STATE_VERSION}): written by \
                 another rrr? Run that rrr on this tree, or: {}.",
                recover.trim_start_matches("To recover, ")
            ))
        }
    }
    serde_json::from_value(value).map_err(|e| format!("not a mirror state ({e}). {recover}."))
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

impl<'a> Mirror<'a> {
    /// Write the state atomically (only once writable, never in `--dry-run`).
    pub fn save(&mut self) -> Result<()> {
        if self.cfg.dry_run || !self.writable {
            return Ok(());
        }
        self.remember_no_overlap();
        self.state.heartbeat = Some(self.clock.now());
        self.state.version = STATE_VERSION;
        // `running` is the heartbeats' (of copies); one loaded from disk
        // was a dead run's.
        self.state.running = None;
        write_state(&self.cfg.state_file, &self.state)
    }

    /// Keep the lesson of a refused connection (the transport's
    /// [`no_overlap_key`](super::transport::Transport::no_overlap_key),
    /// learnt in this process) in the state, for the next run.
    fn remember_no_overlap(&mut self) {
        if let Some(key) = self.transport.no_overlap_key() {
            let now = self.clock.now();
            self.state.no_overlap.entry(key).or_insert(now);
        }
    }

    /// Write a heartbeat now with `phase` running (since now) in the
    /// running attempt ([`Mirror::attempt`]): a first attempt shows in
    /// `status` from its first second. Nothing when the state may not be
    /// written.
    pub(crate) fn beat_now(&mut self, phase: &str) {
        let running = crate::mirror::pass_progress::Running::of(phase, self.clock.now(), &self.attempt);
        let mut hook = self.on_heartbeat.take();
        self.heartbeat_writer(&mut hook)(&running);
        self.on_heartbeat = hook;
    }

    /// Claim a missing or empty tree for a first attempt (the caller
    /// holds its run lock, and the tree owns nothing: no state, or one
    /// that records only failed attempts). From now on the state may be
    /// written: an attempts-only one, which owns nothing, beside the
    /// marker `.rrr/id` that names it, so that `status`, `check` and the
    /// textfile see the attempt from its first second
    /// (docs/decisions.md#ownership). Nothing of the mirror is written
    /// before the remote answered with a valid principal.
    pub(crate) fn claim_first_attempt(&mut self) -> Result<()> {
        if self.cfg.dry_run || !self.state.is_attempts_only() {
            return Ok(());
        }
        let root = self.cfg.localroot.clone();
        let id = self.state.id.get_or_insert_with(ownership::new_id).clone();
        if ownership::read_marker(&root).as_deref() != Some(id.as_str()) {
            ownership::write_marker(&root, &id)
                .with_context(|| format!("cannot write {}", ownership::marker_path(&root).display()))?;
        }
        self.writable = true;
        self.save()
    }

    /// Whether the tree was claimed for a first attempt that has not
    /// reached the remote's collection yet ([`Mirror::claim_first_attempt`]).
    pub(crate) fn is_claimed(&self) -> bool {
        self.writable && !self.cfg.dry_run && self.state.is_attempts_only()
    }

    /// An attempt at a pass starts at `started`: its number and the
    /// previous attempt's error go into the heartbeats' `running` record.
    pub(crate) fn begin_attempt(&mut self, started: &Epoch) {
        let last_error = self.state.last_error.as_deref().filter(|_| self.state.last_outcome == Some(Outcome::Failed));
        self.attempt.begin(self.state.counters.attempts + 1, started.clone(), last_error);
    }

    /// Record an attempt that ended before or outside [`Mirror::pass`]
    /// (the preflight: the remote did not answer, its principal was bad),
    /// so that `status`, `check` and the textfile see a tree that was
    /// tried (docs/decisions.md#ownership). In a tree that is ours
    /// the state is saved as usual. Otherwise only a missing or empty
    /// localroot gets `.rrr/` with an attempts-only state: a filled tree
    /// that is not ours (yet), a refusal or a held lock leave everything
    /// as it was. Interruptions are not failures: nothing is recorded
    /// outside a tree that is ours. `lock_held`: the caller holds the
    /// tree's run lock already (flock is per open file: taking it again
    /// here would fail).
    pub fn record_failed_attempt(&mut self, started: &Epoch, err: &anyhow::Error, lock_held: bool) -> Result<()> {
        use crate::sys::signals::Interrupted;
        if self.cfg.dry_run || err.downcast_ref::<super::Refused>().is_some() {
            return Ok(());
        }
        if crate::exit::exit_for_error(err) == crate::exit::Exit::Locked {
            return Ok(());
        }
        let interrupted = err.downcast_ref::<Interrupted>().is_some();
        let outcome = if interrupted { Outcome::Interrupted } else { Outcome::Failed };
        let now = self.clock.now();
        let msg = format!("{err:#}");
        if self.writable {
            self.state.record_attempt(started, outcome, Some(&msg), &now);
            return self.save();
        }
        if interrupted {
            return Ok(());
        }
        let root = self.cfg.localroot.clone();
        let untouched = || -> Result<bool> {
            let empty = ownership::tree_kind(&root)? != ownership::TreeKind::NonEmpty;
            Ok(empty && load_state(&self.cfg.state_file)?.is_none_or(|s| s.is_attempts_only()))
        };
        if !untouched()? {
            return Ok(());
        }
        let dir = self.cfg.state_dir();
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let _lock = if lock_held {
            None
        } else {
            let Ok(lock) = crate::mirror::run_lock::take_run_lock(&dir) else { return Ok(()) };
            Some(lock)
        };
        // Again under the lock: another run may have made it a mirror meanwhile.
        if !untouched()? {
            return Ok(());
        }
        let mut st = match load_state(&self.cfg.state_file)? {
            Some(tried) => tried,
            None => State::fresh(&self.cfg.remote.src, started),
        };
        // The failures this attempt counted (by class) are in memory only.
        for (class, n) in &self.state.counters.errors {
            let kept = st.counters.errors.entry(class.clone()).or_default();
            *kept = (*kept).max(*n);
        }
        // No heartbeat: none of its passes ever ran.
        st.record_attempt(started, outcome, Some(&msg), &now);
        let id = st.id.clone().unwrap_or_default();
        if ownership::read_marker(&root).as_deref() != Some(id.as_str()) {
            ownership::write_marker(&root, &id)
                .with_context(|| format!("cannot write {}", ownership::marker_path(&root).display()))?;
        }
        write_state(&self.cfg.state_file, &st)
    }

    /// For a long rsync: write a copy of the state with the running pass
    /// and a new heartbeat (the state itself is not touched), then call
    /// `hook` (the [`Mirror::on_heartbeat`] taken out while the rsync runs).
    pub(super) fn heartbeat_writer<'h>(
        &self,
        hook: &'h mut Option<Box<dyn FnMut() + 'a>>,
    ) -> Box<dyn FnMut(&crate::mirror::pass_progress::Running) + 'h>
    where
        'a: 'h,
    {
        let writable = self.writable && !self.cfg.dry_run;
        let mut copy = if writable { self.state.clone() } else { State::default() };
        let (file, clock, note) = (self.cfg.state_file.clone(), self.clock.clone(), self.attempt.clone());
        Box::new(move |running: &crate::mirror::pass_progress::Running| {
            if !writable {
                return;
            }
            copy.heartbeat = Some(clock.now());
            let mut running = running.clone();
            note.fill(&mut running);
            copy.running = Some(running);
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

    /// No done-set reaches past the clock plus one hour
    /// (docs/decisions.md#future-epochs):
    /// a far-future epoch can never poison it, not even an old state's.
    /// Returns whether anything was above the limit.
    pub(super) fn cap_done(&mut self) -> bool {
        let limit = self.future_limit();
        self.state.done.values_mut().fold(false, |any, ds| ds.cap(&limit) | any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::done;

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
        // Paths that are not UTF-8 keep their bytes: `{"bytes": "<hex>"}`.
        s.pending_deletes.push(PendingDelete { epoch: now.clone(), path: RelPath::from(b"d/caf\xe9".to_vec()) });
        s.fail(b"x/\xff\xfe", None, "Permission denied (13)", &now);
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""path":{"bytes":"642f636166e9"}"#), "{text}");
        assert!(text.contains(r#""path":{"bytes":"782ffffe"}"#), "{text}");
        assert_eq!(parse_state(text.as_bytes()).unwrap(), s);
        // A state of an older rrr (no id, no failing) still reads.
        let old: State = serde_json::from_str(r#"{"version":1,"remote":"h::m/RECENT.recent"}"#).unwrap();
        assert_eq!((old.id, old.failing.len(), old.resync), (None, 0, false));
    }
}
