//! One mirror pass against a remote collection, and the mirror's state.
//!
//! Before the first pass (`Mirror::settle_ownership`, module
//! `mirror::ownership`) rrr decides whether the localroot may be mirrored
//! into at all, fetching the remote principal into a temp dir outside the
//! target when the decision needs it: a refusal, an unreachable remote or a
//! bad principal leave the localroot as they found it.
//!
//! A pass (see README.mirror, "Running a mirror"):
//!
//! 1. fetch the principal once, in one rsync call, into a hidden temp dir
//!    under `<localroot>/.rrr/`: `RECENT.recent` with the principal it
//!    pointed to last time (and the larger files the last pass asked for,
//!    `State::refetch`), or, when a whole-tree pass is due or the
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
//!    fetches it with the principal (`State::refetch`) — no connection
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
//! A hostile event (see `safety::check_event_path`, and events the reader
//! skipped) is refused, reported, counted and marked done so that it
//! cannot stall later passes; nothing outside the target is ever touched.
//! An event more than an hour ahead of the clock is skipped as "future"
//! and never marked done ([`DoneSet::cap`](crate::done::DoneSet::cap)): it is taken when its time has
//! come. A path the origin cannot send (rsync exit 23 with a `[sender]`
//! error) is marked done and listed in `failing`, retried every pass until
//! it arrives or a newer event supersedes it; it holds back nothing else.
//! A path a new event lists that the origin does not have is done and
//! `missing`: quiet while a delete event may still explain it, then
//! "missing upstream", which keeps the pass from being complete.
//!
//! A type change (a file replaced by a directory, or the reverse) takes
//! one pass: the deletes in the new event's way go first, a directory the
//! origin replaced by a file is replaced by rsync (`deletes::Placement`);
//! what cannot be placed stays failing. A whole-tree pass on a mirror
//! that would delete more than 10 % of it stops first (`--accept-deletes`).
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
//!   "done": {"RECENT-1h.yaml": [["high","low"], …], …},   // protocol.md 12.6, see rrr::done
//!   "installed": {"RECENT-6h.yaml": "newest epoch"},       // our copies of the recentfiles
//!   "refetch": ["RECENT-6h.yaml"],                 // fetch with the next principal
//!   "pending_deletes": [{"epoch": "…", "path": "…"}],
//!   "failing": [{"path", "epoch"|null, "message", "first", "last", "attempts",
//!                "expect": {"size", "sha256"}}],   // expect: --trust-key, a hashed
//!                                                  // event's (also on "missing")
//!   "quarantined": [{"path", "epoch": null, "message", "first", "last", "attempts"}],
//!                                                  // paths rsync cannot carry
//!                                                  // (docs/decisions.md#quarantine)
//!   "missing": [{"path", "epoch", "message": "", "first", "last", "attempts"}],
//!                                                  // new events the origin lacks
//!                                                  // (docs/decisions.md#missing-upstream)
//!   "tampered": [{"path", "epoch", "expected": {"size", "sha256"}, "received",
//!                 "kept"|null, "first", "last", "attempts"}],
//!                                                  // --trust-key: bytes not as signed,
//!                                                  // never installed; absent when empty
//!                                                  // (docs/decisions.md#tampered)
//!   "future_events": 0,                            // skipped as future in the last pass
//!   "held_deletes": 0,                             // held by the mass-delete guard in
//!                                                  // the last pass (docs/decisions.md#mass-deletes)
//!   "resync": false,                               // a whole-tree pass is owed
//!   "newest_applied": "1700000400.5" | null,       // newest event transferred/deleted
//!   "counters": {"attempts", "passes", "files", "bytes", "deletes", "refused",
//!                "errors": {"connection": 1, …}},   // since the state was created
//!   "started": "epoch", "last_success": "epoch"|null,
//!   "last_complete": "epoch"|null,                 // every event of the principal done
//!   "caught_up": "epoch"|null,                     // every event done (missing ones aside)
//!   "last_error": "message"|null,                  // of the last attempt, if it failed
//!   "last_error_time": "epoch"|null,
//!   "last_attempt": "epoch"|null,                  // start of the last attempt
//!   "last_outcome": "success"|"failed"|"interrupted"|null,
//!   "consecutive_failures": 0,                     // failed attempts since a success
//!   "heartbeat": "epoch",                          // last write of this file
//!   "no_overlap": {"rsync://h:873/M/p": "epoch"},  // remotes whose daemon refused
//!                                                  // a connection of ours for its
//!                                                  // max connections: never overlap
//!   "trusted": {"origin", "time", "newest_epoch", "dirtymark", "key", "accepted",
//!               "max_age"} | null,                 // --trust-key: the last beacon
//!                                                  // accepted, the rollback floor
//!   "trust_error": "message"|null,                 // --trust-key: why the last pass
//!                                                  // refused what it fetched (module trusted)
//!   "newest_by_dirtymark": {"1700000000.5": "epoch"}, // newest installed/applied
//!   "upstream": "rsync://…",                       // several upstreams: the last
//!   "upstreams": [{"remote", "result", …}]         // pass's, each one's last result
//!                                                  // (mirror::upstreams)
//! }
//! ```
//!
//! All epochs are strings. Unknown keys are ignored on read; another
//! `version` is refused (`state::load_state`). Attempts are recorded from
//! the first one on: a first pass into a missing or empty tree that fails
//! before it is ours leaves a state with only the attempt
//! (`State::is_attempts_only`), which owns nothing.
//!
//! # Files
//!
//! `state` (the state file), `pass` (one pass, the incremental walk),
//! `transfer` (chunks, retries, the whole-tree pass), `deletes`, `safety`
//! (what is refused, ownership), `install` (our copies of the
//! recentfiles), over `report` (a leaf: the pass report and the types they
//! share); the helpers `ownership`, `health` and `pass_progress`. How the
//! origin is reached is `transport`: the `Transport` trait and the plain
//! data of its calls, `transport/rsync.rs` its one implementation (also
//! reachable as `remote`: the SRC forms, the recentfiles' fetch), and
//! where another (HTTP) would go. Around a pass: [`looping`] (one tree's
//! run, `--loop`), `fleet` (a config's trees, a thread each) and
//! [`trigger_pipe`] (how `rrr trigger` wakes a loop); `upstreams` (a
//! tree with several upstreams: which one a pass reads, never backwards).

mod deletes;
pub(crate) mod fleet;
mod freshness;
pub(crate) mod health;
mod install;
pub mod looping;
pub(crate) mod on_pass;
pub mod options;
pub(crate) mod ownership;
mod pass;
pub(crate) mod pass_progress;
#[cfg(test)]
mod pass_tests;
mod report;
mod run_lock;
mod safety;
mod staging;
mod state;
pub mod targets;
pub(crate) mod textfile;
pub(crate) mod traces;
mod transfer;
pub(crate) mod transport;
pub mod trigger_pipe;
pub(crate) mod trusted;
pub(crate) mod upstreams;

/// The rsync transport under the name the rest of the crate uses for the
/// remote (`config`, `ops::news`).
pub(crate) use transport::rsync as remote;

pub(crate) use report::PassReport;
pub(crate) use safety::Refused;
pub(crate) use state::{load_state, Failing, State};
use transport::LOST_FOUND;

use crate::recentfile::RelPath;
use crate::sys::clock::Clock;
use crate::sys::signals::Interrupted;
use anyhow::Result;
use remote::{FetchDir, Layout, Remote, RsyncSettings};
use report::Fetched;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

/// A tree's settings: `rrr rmirror`'s options after merging the command
/// line, the config file and the built-in defaults, validated
/// ([`crate::mirror::options::resolve`], the one place that builds it).
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// The upstream the pass reads: the one given, or, with several
    /// (`upstreams`), the one the pass chose (`mirror::upstreams`).
    pub remote: Remote,
    /// Every upstream given, in order (one: today's single remote).
    pub upstreams: Vec<Remote>,
    pub localroot: PathBuf,
    pub state_file: PathBuf,
    pub skip_deletes: bool,
    pub max_delete: Option<u64>,
    /// The next whole-tree pass may delete more than [`deletes::MASS_DELETE_SHARE`]
    /// of the tree (`--accept-deletes`, or `--adopt`); cleared by it.
    pub accept_deletes: bool,
    /// `--checksum`: whole-tree passes compare files of the same size and
    /// mtime by content (command line only).
    pub checksum: bool,
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
    pub excludes: Vec<crate::pattern::Pattern>,
    /// `--trace DIR` (relative to the localroot): after each complete pass
    /// the traces are written there ([`traces`]); it is in `excludes`.
    pub trace: Option<PathBuf>,
    /// `--trace-host`: this mirror's trace name (default: the host name).
    pub trace_host: Option<String>,
    /// `--timestamp FILE` (relative to the localroot): the origin time
    /// held, written after each complete pass; it is in `excludes`.
    pub timestamp: Option<PathBuf>,
    /// Between pass starts with `--loop` (at least 1 s).
    pub interval: Duration,
    /// Run through `/bin/sh -c` after a pass that changed something or failed.
    pub on_pass: Option<String>,
    /// How long the `on_pass` hook may run before it is killed.
    pub on_pass_timeout: Duration,
    /// A whole-tree pass when the last one is this old.
    pub full_every: Option<Duration>,
    /// `rrr verify` before a pass when the last one is this old.
    pub verify_every: Option<Duration>,
    /// `--trust-key` files (loaded and checked by [`Mirror::new`]); empty:
    /// nothing is verified.
    pub trust_keys: Vec<PathBuf>,
    /// `--max-signature-age`: an older origin signature is stale.
    pub max_signature_age: Duration,
}

impl Config {
    pub fn state_dir(&self) -> PathBuf {
        self.localroot.join(".rrr")
    }
}

/// A mirror: config, state and clock, across passes.
pub(crate) struct Mirror<'a> {
    pub cfg: Config,
    pub state: State,
    pub clock: Clock,
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
    future_seen: HashSet<(String, RelPath)>,
    /// Called after each heartbeat written during a long rsync (e.g. to
    /// rewrite a Prometheus textfile).
    pub on_heartbeat: Option<Box<dyn FnMut() + 'a>>,
    /// Local directories the next transfer of their path may replace by
    /// the origin's file (rsync `--force`), with their entries (`Mirror::place`).
    replacing: std::collections::HashMap<RelPath, u64>,
    /// Missing paths (`State::missing`) to try again with the pass's next
    /// transfer, with their events' epochs: no connection of their own.
    ride_along: Vec<(RelPath, crate::epoch::Epoch)>,
    /// This whole-tree pass (a `--full` one) looks at the quarantined
    /// paths again instead of leaving their directories out.
    recheck_quarantine: bool,
    /// The mirror's files at the start of the pass, counted once a pass
    /// when a mass delete is judged (`Mirror::files_at_start`).
    files_counted: Option<u64>,
    /// The running attempt, as its heartbeats record it (`running`).
    pub(crate) attempt: pass_progress::AttemptNote,
    /// How the pass's transfers reach the origin ([`transport`]): rsync to
    /// `cfg.remote`, or the test transport.
    transport: std::rc::Rc<dyn transport::Transport + 'a>,
    /// `--trust-key`, loaded at start: the recentfiles fetched are
    /// verified against the origin's signed beacon ([`trusted`]).
    trust: Option<crate::trust::TrustKeys>,
    /// With several upstreams: what the last selection found, for the
    /// state of the pass that uses it (`upstreams::Selected`).
    selected: Option<upstreams::Selected>,
}

impl<'a> Mirror<'a> {
    /// A mirror for `cfg`, its state as found (or a fresh one); nothing is
    /// written until [`Mirror::settle_ownership`] allowed it.
    pub fn new(cfg: Config, clock: Clock) -> Result<Mirror<'a>> {
        let now = clock.now();
        let trust = match cfg.trust_keys.is_empty() {
            true => None,
            false => Some(crate::trust::TrustKeys::load(&cfg.trust_keys)?),
        };
        let state = load_state(&cfg.state_file)?.unwrap_or_else(|| State::fresh(&cfg.remote.src, &now));
        let settings = cfg.rsync.clone();
        let transport =
            std::rc::Rc::new(transport::rsync::RsyncTransport::new(cfg.remote.clone(), settings, &state.no_overlap));
        Ok(Mirror {
            transport,
            cfg,
            state,
            clock,
            deletes_this_run: 0,
            full: false,
            writable: false,
            prefetched: None,
            adopt_counted: false,
            future_seen: HashSet::new(),
            on_heartbeat: None,
            replacing: Default::default(),
            ride_along: Vec::new(),
            recheck_quarantine: false,
            files_counted: None,
            attempt: Default::default(),
            trust,
            selected: None,
        })
    }

    /// Whether the user excluded `path` (its events are skipped).
    fn is_excluded(&self, path: impl AsRef<[u8]>) -> bool {
        let path = path.as_ref();
        self.cfg.excludes.iter().any(|p| p.excludes(path, false))
    }

    fn stopped(&self) -> bool {
        // The process's stop, or this tree's alone (a config reload).
        crate::sys::signals::stop_requested()
    }

    fn check_stop(&mut self) -> Result<()> {
        if self.stopped() {
            self.save()?;
            return Err(Interrupted.into());
        }
        Ok(())
    }
}
