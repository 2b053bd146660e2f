//! One tree's `rrr rmirror` run: keep a local tree in sync with a remote
//! collection, one pass or `--loop`. The run lock (`take_run_lock`,
//! `.rrr/rmirror.flock`) keeps two runs on one target apart: a second one
//! exits 75 at once, naming the holder. A tree that has the lock file, and
//! a new (missing or empty) one, is locked before the remote is asked; a
//! new tree is claimed for its first attempt (only `.rrr/`, with a state
//! recording the running attempt: `lock_early`), so that monitoring, `rrr
//! trigger` and a second run see it from the first second, and `READY=1`
//! goes to systemd as soon as the loop runs. Then, writing nothing of the
//! mirror, it checks what can fail before the first byte: the remote
//! answers, its principal is valid, and the tree may be mirrored into
//! (docs/decisions.md#ownership; `--adopt`); a filled tree that is not ours
//! yet is created into and locked only then. The lock is held until the
//! run ends, `--loop` included.
//! SIGINT/SIGTERM set a flag and stop the running rsync; the pass stops at
//! the next safe point after saving its state and the run exits 130. A
//! failed pass is reported (one line; `-v` adds the rsync command and its
//! stderr) and, with `--loop`, followed by the next one after a pause that
//! doubles with each failed pass in a row.
//!
//! Everything it logs is inside an `rmirror` span naming the tree
//! (`localroot`, absolute, and `remote`). After each pass it rewrites the
//! `--prometheus` textfile, runs the `--on-pass` hook ([`crate::hook`])
//! when the pass changed something or failed, and, with `--loop`, stops
//! (exit 1, state saved) when its log stream or stdout has closed.
//! `--config FILE` runs several trees, each on its own thread through this
//! same code (`mirror::fleet`). A tree's options are merged and
//! validated once, before anything runs ([`crate::mirror::options`]).

use crate::exit::{exit_for_error, is_closed, Exit};
use crate::mirror::options::{OptionLayer, RunFlags, TreeSpec};
use crate::mirror::run_lock::take_run_lock;
use crate::mirror::textfile::Prometheus;
use crate::mirror::trigger_pipe::Waker;
use crate::mirror::{Config, Mirror, PassReport, Refused, State};
use crate::monitor::trace::Trigger;
use crate::store::RunLock;
use crate::sys::clock::Clock;
use crate::sys::signals::Interrupted;
use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Which trees a run mirrors.
#[derive(Clone, Debug)]
pub enum Trees {
    /// `--remote SRC --localroot DIR [--state FILE]`.
    One(TreeSpec),
    /// Every `[[tree]]` of this TOML file, each on its own thread.
    Config(PathBuf),
}

/// What `rrr rmirror` was asked to do, as the binary parsed it: which
/// trees, the per-tree options the command line set (the top layer of
/// [`crate::mirror::options`]), and the settings of the run itself.
#[derive(Clone, Debug)]
pub struct Options {
    /// One tree from the command line, or a config file's trees.
    pub trees: Trees,
    /// Per-tree options given on the command line; they beat the config.
    pub options: OptionLayer,
    /// `--loop`: passes until SIGINT/SIGTERM instead of one.
    pub looping: bool,
    /// `--accept-deletes`: the next whole-tree pass may delete a mass of the tree.
    pub accept_deletes: bool,
    /// List what would be transferred and deleted; change nothing.
    pub dry_run: bool,
    /// Reconcile once with a whole-tree rsync.
    pub full: bool,
    /// Make a tree that is not (yet) a mirror of SRC one (docs/decisions.md#ownership).
    pub adopt: bool,
    /// The node-exporter textfile to rewrite after each pass and heartbeat
    /// (one file for every tree of a config).
    pub prometheus: Option<PathBuf>,
    /// `--metrics-listen ADDR:PORT` (with `--loop`): the textfile's metrics
    /// over HTTP at `/metrics`, every tree of the run.
    pub metrics_listen: Option<String>,
    /// One JSON object per pass on stdout instead of the summary line.
    pub json: bool,
}

impl Options {
    /// The run's settings that every tree shares.
    pub(crate) fn flags(&self, progress: bool) -> RunFlags {
        RunFlags { dry_run: self.dry_run, progress, accept_deletes: self.accept_deletes }
    }
}

/// Whether a pass did nothing worth a line at the default level.
pub(crate) fn is_idle(r: &PassReport) -> bool {
    !r.bootstrap
        && !r.dry_run
        && r.transferred == 0
        && r.deleted == 0
        && r.vanished == 0
        && r.deletes_skipped == 0
        && r.deletes_pending == 0
        && r.refused.is_empty()
        && r.failing.is_empty()
        && r.missing_upstream.is_empty()
        && r.quarantined.is_empty()
        && r.tampered.is_empty()
        && r.errors.is_empty()
        && r.future == 0
        && !r.dirtymark_changed
}

/// The summary of a pass as a person reads it (the log's `pass` line).
pub(crate) fn summary_line(r: &PassReport) -> String {
    let mut s = format!(
        "{}{}: {} transferred ({}), {} deleted",
        if r.dry_run { "dry run" } else { "pass" },
        if r.bootstrap { " (bootstrap)" } else { "" },
        crate::output::human::count(r.transferred),
        crate::output::human::size(r.bytes),
        crate::output::human::count(r.deleted),
    );
    if r.deletes_skipped > 0 {
        s.push_str(&format!(
            ", {}",
            crate::output::human::plural(r.deletes_skipped, "delete skipped", "deletes skipped")
        ));
    }
    if r.deletes_pending > 0 {
        s.push_str(&format!(
            ", {}",
            crate::output::human::plural(r.deletes_pending, "delete pending", "deletes pending")
        ));
    }
    if !r.refused.is_empty() {
        s.push_str(&format!(", {} refused", r.refused.len()));
    }
    if !r.failing.is_empty() {
        s.push_str(&format!(", {} failing", r.failing.len()));
    }
    if !r.missing_upstream.is_empty() {
        s.push_str(&format!(", {} missing upstream", r.missing_upstream.len()));
    }
    if !r.quarantined.is_empty() {
        s.push_str(&format!(", {} quarantined", r.quarantined.len()));
    }
    if !r.tampered.is_empty() {
        s.push_str(&format!(", {} tampered", r.tampered.len()));
    }
    if r.future > 0 {
        s.push_str(&format!(", {} from the future", r.future));
    }
    if !r.errors.is_empty() {
        s.push_str(&format!(", {}", crate::output::human::plural(r.errors.len() as u64, "error", "errors")));
    }
    if !r.read.is_empty() {
        s.push_str(&format!("; read {}", r.read.join(" ")));
    }
    s.push_str(&format!("; {}", crate::output::human::duration(r.seconds)));
    if r.seconds >= 1.0 && r.bytes > 0 {
        s.push_str(&format!(" ({})", crate::output::human::rate(r.bytes as f64 / r.seconds)));
    }
    if r.complete {
        s.push_str("; complete");
    }
    s
}

/// The tree as log lines, pass objects and textfile labels name it: absolute.
pub(crate) fn shown_root(cfg: &Config) -> String {
    std::path::absolute(&cfg.localroot).unwrap_or_else(|_| cfg.localroot.clone()).display().to_string()
}

/// The span every line about this tree is logged in.
pub(crate) fn span(cfg: &Config) -> tracing::Span {
    tracing::info_span!("rmirror", localroot = %shown_root(cfg), remote = %cfg.remote.src)
}

/// One tree, in the [`span`] the caller entered, rewriting `textfile`
/// after each pass. With `--json`, a run that fails still prints a
/// `{"kind": "error"}` object on stdout.
pub(crate) fn run_in_span(
    cfg: &Config,
    opts: &Options,
    textfile: Option<&Prometheus>,
    clock: &Clock,
    out: &mut dyn Write,
) -> Result<Exit> {
    let run = Run {
        cfg,
        opts,
        textfile,
        clock,
        shown: shown_root(cfg),
        traces: Default::default(),
        triggered: Default::default(),
    };
    let res = run.passes(out);
    if let Err(e) = &res {
        if opts.json && !is_closed(e) {
            let _ = print_line(out, &error_object(cfg, e).to_string());
        }
    }
    res
}

fn print_line(out: &mut dyn Write, line: &str) -> io::Result<()> {
    writeln!(out, "{line}")?;
    out.flush()
}

fn error_object(cfg: &Config, e: &anyhow::Error) -> serde_json::Value {
    serde_json::json!({"kind": "error", "localroot": shown_root(cfg), "remote": cfg.remote.src,
                       "message": format!("{e:#}")})
}

/// Whether a whole-tree pass is due under `--full-every`: the last one
/// (or the mirror's start) is that old.
pub(crate) fn full_due(state: &State, every: Duration, now: f64) -> bool {
    state.last_full.as_ref().or(state.started.as_ref()).is_some_and(|e| now - e.to_f64() >= every.as_secs_f64())
}

/// Whether `rrr verify` is due under `--verify-every`: the mirror has
/// installed its copies of the recentfiles, and the last verify (or the
/// mirror's start) is that old.
pub(crate) fn verify_due(state: &State, every: Duration, now: f64) -> bool {
    !state.installed.is_empty()
        && state
            .last_verify
            .as_ref()
            .map(|v| &v.time)
            .or(state.started.as_ref())
            .is_some_and(|e| now - e.to_f64() >= every.as_secs_f64())
}

/// `--verify-every`: verify the tree against our copies of the
/// recentfiles (by size: reading every file is `rrr verify --hash`'s
/// job) and hand what is missing or different to the pass that follows as
/// failing paths (retried first, before the principal is installed; a
/// newer event supersedes them as any failing path). Unknown files are
/// reported, never deleted: that is a whole-tree pass's decision. A
/// verify that cannot run is logged and recorded; the pass goes on.
fn verify_before_pass(m: &mut Mirror, clock: &crate::sys::clock::Clock) -> Result<()> {
    let excludes: Vec<String> = m.cfg.excludes.iter().map(|p| p.as_str().to_string()).collect();
    let now = clock.now();
    let record = match crate::verify::verify(&m.cfg.localroot, &excludes, false, false) {
        Ok(r) => {
            for (path, want) in &r.to_fetch {
                m.state.fail(
                    path,
                    Some(&want.epoch),
                    "missing or different in the tree (found by --verify-every)",
                    &now,
                );
            }
            // The bytes each event records go with its retry, so that with
            // `--trust-key` the retry is staged and checked like any other
            // transfer of a hashed path (never straight into the tree).
            let recorded: Vec<(&crate::recentfile::RelPath, super::staging::Expected)> = r
                .to_fetch
                .iter()
                .filter(|(_, want)| want.size.is_some() || want.sha256.is_some())
                .map(|(path, want)| {
                    let sha256 = want.sha256.as_ref().map(|h| h.as_str().to_string());
                    (path, super::staging::Expected { size: want.size, sha256 })
                })
                .collect();
            m.state.remember_expected(recorded.iter().map(|(p, x)| (*p, x)));
            let level_warn = !r.complete();
            let line = format!(
                "verify: {} indexed files, {} missing, {} different, {} unknown{}",
                r.indexed,
                r.missing.len(),
                r.different.len(),
                r.unknown.len(),
                if r.to_fetch.is_empty() { "" } else { "; the pass fetches the missing and different ones" }
            );
            if level_warn {
                tracing::warn!("{line}");
            } else {
                tracing::info!("{line}");
            }
            crate::mirror::state::VerifyRecord {
                time: now,
                missing: r.missing.len() as u64,
                different: r.different.len() as u64,
                unknown: r.unknown.len() as u64,
                error: None,
            }
        }
        Err(e) => {
            tracing::warn!("verify failed: {e:#}");
            crate::mirror::state::VerifyRecord {
                time: now,
                missing: 0,
                different: 0,
                unknown: 0,
                error: Some(format!("{e:#}")),
            }
        }
    };
    m.state.last_verify = Some(record);
    m.save()
}

/// The run lock taken before anything is asked of the remote
/// ([`lock_early`]), and whether the tree was claimed for a first attempt.
struct EarlyLock {
    lock: RunLock,
    /// The tree was missing or empty: it got `.rrr/` and the lock for a
    /// first attempt, recorded from its first second ([`Mirror::claim_first_attempt`]).
    claimed: bool,
}

/// Take the run lock before anything else, so that a second run on the
/// tree ends at once (exit 75) without asking the remote:
/// - a tree that already has the lock file (`.rrr/rmirror.flock`);
/// - a tree that is missing or empty (nothing but `lost+found` and `.rrr/`)
///   and owns nothing yet (no state, or one that records only failed
///   attempts): it is claimed, the localroot (and any missing parent, as
///   `mkdir -p` does) and `.rrr/` are created, so that the first attempt
///   holds the lock and is recorded from its first second
///   (docs/decisions.md#ownership). Nothing else is created: no file of
///   the mirror before the remote answered with a valid principal.
///
/// Any other tree (a filled one that is not ours yet, a state elsewhere
/// whose tree lacks its marker) is locked only once the remote answered
/// and the tree may be mirrored into ([`Run::settle`]). None for a dry run.
fn lock_early(cfg: &Config, opts: &Options) -> Result<Option<EarlyLock>> {
    let state_dir = cfg.state_dir();
    if opts.dry_run {
        return Ok(None);
    }
    if state_dir.join("rmirror.flock").is_file() {
        let claimed = claimable(cfg);
        return Ok(Some(EarlyLock { lock: take_run_lock(&state_dir)?, claimed }));
    }
    if !claimable(cfg) {
        return Ok(None);
    }
    std::fs::create_dir_all(&state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
    Ok(Some(EarlyLock { lock: take_run_lock(&state_dir)?, claimed: true }))
}

/// A tree a first attempt may claim: missing or empty, and no state that
/// owns anything ([`State::is_attempts_only`]). A state rrr cannot read
/// or a tree it cannot list is left to the checks that name the trouble.
fn claimable(cfg: &Config) -> bool {
    use crate::mirror::ownership::{tree_kind, TreeKind};
    let empty = matches!(tree_kind(&cfg.localroot), Ok(TreeKind::Missing | TreeKind::Empty));
    empty && crate::mirror::load_state(&cfg.state_file).is_ok_and(|s| s.is_none_or(|s| s.is_attempts_only()))
}

impl Run<'_> {
    /// One tree's run, as the steps below: [`Run::start`] (the lock of a
    /// known or new tree, the mirror), then, at once, `READY=1` for
    /// systemd and the trigger pipe of a loop that holds its lock;
    /// [`Run::settle`] (what can fail before the first byte, then the
    /// lock), then [`Run::pass_loop`].
    fn passes(&self, out: &mut dyn Write) -> Result<Exit> {
        let (mut m, early_lock) = self.start()?;
        let listen = self.opts.looping && !self.opts.dry_run;
        let mut trigger = (listen && early_lock.is_some()).then(|| Waker::listen(&self.cfg.state_dir()));
        // The loop runs: whether the upstream answers is not systemd's to wait for.
        crate::sys::notify::notify("READY=1");
        let _lock = match self.settle(&mut m, early_lock, trigger.as_mut(), out)? {
            Step::Go(lock) => lock,
            Step::End(exit) => return Ok(exit),
        };
        if listen && trigger.is_none() {
            trigger = Some(Waker::listen(&self.cfg.state_dir()));
        }
        self.pass_loop(&mut m, trigger, out)
    }
}

/// What every step of one tree's run reads: its options, the run's
/// settings, the textfile to rewrite, the clock.
struct Run<'a> {
    cfg: &'a Config,
    opts: &'a Options,
    textfile: Option<&'a Prometheus>,
    clock: &'a Clock,
    /// The tree as log lines, pass objects and the hook name it.
    shown: String,
    /// `--trace`, `--timestamp`: the upstream's traces fetched for the
    /// running pass ([`crate::mirror::traces`]).
    traces: std::cell::RefCell<crate::mirror::traces::Traces>,
    /// The pause before the running pass was ended by `rrr trigger`.
    triggered: std::cell::Cell<bool>,
}

/// How a step ended: the run goes on with its result, or ends with this exit.
enum Step<T> {
    Go(T),
    End(Exit),
}

impl Run<'_> {
    /// The textfile (at the run's clock, which `--now` pins) and the
    /// `--on-pass` hook after a pass (or a failed one).
    fn after_pass(&self, exit: Exit, rep: Option<&PassReport>, err: Option<&anyhow::Error>, began: Instant) {
        if self.opts.dry_run {
            return;
        }
        if let Some(p) = self.textfile {
            p.write(self.clock);
        }
        if let Some(cmd) = &self.cfg.on_pass {
            if super::on_pass::wanted(rep) {
                let msg = err.map(|e| format!("{e:#}"));
                let seconds = began.elapsed().as_secs_f64();
                let env = super::on_pass::environment(
                    &self.shown,
                    &self.cfg.remote.src,
                    exit as i32,
                    rep,
                    msg.as_deref(),
                    seconds,
                );
                crate::hook::after_pass(cmd, self.cfg.on_pass_timeout, &env);
            }
        }
    }

    /// A step of its own because it runs before anything is asked: the
    /// early lock ([`lock_early`]), so that a second run on the tree ends
    /// at once; then the mirror, its heartbeat rewriting the textfile,
    /// and a claimed tree's first attempt recorded.
    fn start(&self) -> Result<(Mirror<'static>, Option<EarlyLock>)> {
        let (cfg, opts, clock) = (self.cfg, self.opts, self.clock);
        let early_lock = match lock_early(cfg, opts) {
            Ok(lock) => lock,
            Err(e) => {
                self.after_pass(Exit::Error, None, Some(&e), Instant::now());
                return Err(e);
            }
        };
        let mut m = Mirror::new(cfg.clone(), clock.clone())?;
        m.full = opts.full;
        if let Some(p) = self.textfile.cloned().filter(|_| !opts.dry_run) {
            let c = clock.clone();
            m.on_heartbeat = Some(Box::new(move || p.write_for_heartbeat(&c)));
        }
        if early_lock.as_ref().is_some_and(|l| l.claimed) {
            m.claim_first_attempt()?;
        }
        Ok((m, early_lock))
    }

    /// Everything that can fail before the first byte (the remote answers,
    /// its principal is valid, the tree may be mirrored into) runs before
    /// anything of the mirror is written: a refusal writes nothing, and a
    /// tree that is not ours yet gets nothing. With `--loop` a remote that
    /// does not answer yet is tried again (backing off; a trigger ends the
    /// pause); a refusal or a held lock ends the run. Goes on with the run
    /// lock (none for a dry run).
    fn settle(
        &self,
        m: &mut Mirror,
        early_lock: Option<EarlyLock>,
        mut trigger: Option<&mut Waker>,
        out: &mut dyn Write,
    ) -> Result<Step<Option<RunLock>>> {
        let (cfg, opts) = (self.cfg, self.opts);
        let mut lock = early_lock.map(|l| l.lock);
        let mut failed_passes = 0u32;
        loop {
            let (attempt, began) = (self.clock.now(), Instant::now());
            m.begin_attempt(&attempt);
            if m.is_claimed() {
                // A first attempt shows from its first second.
                m.beat_now("recentfiles");
            }
            let settled = self.settle_once(m, &mut lock);
            if let Err(e) = &settled {
                if let Err(why) = m.record_failed_attempt(&attempt, e, lock.is_some()) {
                    tracing::warn!("cannot record the failed attempt: {why:#}");
                }
            }
            match settled {
                Ok(()) => return Ok(Step::Go(lock)),
                Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                    tracing::info!("interrupted; nothing was changed");
                    return Ok(Step::End(Exit::Interrupted));
                }
                Err(e)
                    if !opts.looping
                        || e.downcast_ref::<Refused>().is_some()
                        || exit_for_error(&e) == Exit::Locked
                        || ends_the_loop(&e) =>
                {
                    self.after_pass(Exit::Error, None, Some(&e), began);
                    return Err(e);
                }
                Err(e) => {
                    failed_passes += 1;
                    if report_failed_pass(&e, cfg, opts, out).is_err() || crate::output::log::closed() {
                        return Ok(Step::End(Exit::Differences));
                    }
                    self.after_pass(Exit::Error, None, Some(&e), began);
                    let woken = pause(cfg.interval, failed_passes, None, trigger.as_deref_mut());
                    self.triggered.set(woken == Some(true));
                    if woken.is_none() {
                        tracing::info!("interrupted; nothing was changed");
                        return Ok(Step::End(Exit::Interrupted));
                    }
                }
            }
        }
    }

    /// One attempt of [`Run::settle`]: ownership checked without writing,
    /// then the localroot, `.rrr/` and the run lock (unless held already;
    /// kept in `lock` whatever happens next), then ownership again under
    /// the lock (another run may have finished meanwhile).
    fn settle_once(&self, m: &mut Mirror, lock: &mut Option<RunLock>) -> Result<()> {
        let (cfg, opts) = (self.cfg, self.opts);
        let state_dir = cfg.state_dir();
        m.settle_ownership(opts.adopt, opts.dry_run)?;
        if opts.dry_run {
            return Ok(());
        }
        if lock.is_none() {
            std::fs::create_dir_all(&cfg.localroot)
                .with_context(|| format!("cannot create {}", cfg.localroot.display()))?;
            std::fs::create_dir_all(&state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
            *lock = Some(take_run_lock(&state_dir)?);
        }
        crate::mirror::remote::clean_stale(&state_dir);
        m.settle_ownership(opts.adopt, true)
    }

    /// The passes: one, or with `--loop` until stopped, pausing between
    /// them ([`pause`]: the interval, a backoff after failures, or a
    /// trigger). Ends when the log stream closes, so a supervisor restarts
    /// a daemon nobody hears.
    fn pass_loop(&self, m: &mut Mirror, mut trigger: Option<Waker>, out: &mut dyn Write) -> Result<Exit> {
        let opts = self.opts;
        let mut failed_passes = 0u32;
        let mut first = true;
        loop {
            let started = std::time::Instant::now();
            if !std::mem::take(&mut first) {
                // The settled attempt's pass is the first; later ones count anew.
                m.begin_attempt(&self.clock.now());
            }
            // Triggers that came before this pass starts are answered by it;
            // any that come during it make one more pass.
            if let Some(t) = &mut trigger {
                t.pass_starts();
            }
            let last = match self.one_pass(m, out)? {
                Step::Go(exit) => exit,
                Step::End(exit) => return Ok(exit),
            };
            if !opts.looping {
                return Ok(last);
            }
            if crate::output::log::closed() {
                // Nobody hears us any more: let the supervisor restart us.
                return Ok(Exit::Differences);
            }
            failed_passes = if last == Exit::Error { failed_passes + 1 } else { 0 };
            let woken = pause(self.cfg.interval, failed_passes, Some(started), trigger.as_mut());
            self.triggered.set(woken == Some(true));
            if woken.is_none() {
                tracing::info!("interrupted; state saved");
                return Ok(Exit::Interrupted);
            }
        }
    }

    /// One pass and what follows it: its exit, or the run's end (a signal,
    /// a closed stdout, a failed one-shot pass). A whole-tree pass is made
    /// when `--full-every` says one is due.
    fn one_pass(&self, m: &mut Mirror, out: &mut dyn Write) -> Result<Step<Exit>> {
        let (cfg, opts) = (self.cfg, self.opts);
        let began = Instant::now();
        if let Some(every) = cfg.full_every {
            if !m.full && full_due(&m.state, every, self.clock.now_f64()) {
                tracing::info!(
                    "a whole-tree pass is due (--full-every {})",
                    crate::output::human::duration(every.as_secs_f64())
                );
                m.full = true;
            }
        }
        if let Some(every) = cfg.verify_every {
            if !opts.dry_run && verify_due(&m.state, every, self.clock.now_f64()) {
                verify_before_pass(m, self.clock)?;
            }
        }
        self.traces.borrow_mut().before_pass(&m.cfg);
        match m.pass() {
            Ok(rep) => self.passed(m, rep, out),
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                tracing::info!("interrupted; state saved");
                Ok(Step::End(Exit::Interrupted))
            }
            Err(e) => {
                if !opts.looping || ends_the_loop(&e) {
                    self.after_pass(Exit::Error, None, Some(&e), began);
                    return Err(e);
                }
                if report_failed_pass(&e, cfg, opts, out).is_err() {
                    return Ok(Step::End(Exit::Differences));
                }
                self.after_pass(Exit::Error, None, Some(&e), began);
                Ok(Step::Go(Exit::Error))
            }
        }
    }

    /// A finished pass: the time of a good whole-tree pass saved, the
    /// report on stdout (a JSON object, or what a dry run would do), the
    /// log line, sd_notify's status, the textfile and the hook.
    fn passed(&self, m: &mut Mirror, mut rep: PassReport, out: &mut dyn Write) -> Result<Step<Exit>> {
        let opts = self.opts;
        rep.localroot = self.shown.clone();
        rep.remote = self.cfg.remote.src.clone();
        rep.upstream = (m.cfg.upstreams.len() > 1).then(|| m.cfg.remote.src.clone());
        if rep.bootstrap && rep.ok && !rep.mass_deletes_held && !opts.dry_run {
            m.state.last_full = Some(self.clock.now());
            m.save()?;
        }
        let printed = if opts.json {
            print_line(out, &serde_json::to_string(&rep)?)
        } else {
            rep.would
                .iter()
                .try_for_each(|w| writeln!(out, "{}", crate::recentfile::escape_path(w)))
                .and_then(|()| out.flush())
        };
        if let Err(e) = printed {
            if opts.looping {
                tracing::info!("stdout closed: stopping (state saved)");
                return Ok(Step::End(Exit::Differences));
            }
            return Err(e.into());
        }
        log_pass(&rep);
        if rep.complete && rep.errors.is_empty() && !rep.mass_deletes_held && !rep.dry_run {
            let now = self.clock.now_f64();
            let trigger = match (opts.looping, self.triggered.get()) {
                (false, _) => Trigger::Cron,
                (true, false) => Trigger::Loop,
                (true, true) => Trigger::Push,
            };
            let (started, now) = ((now - rep.seconds).floor() as i64, now.floor() as i64);
            self.traces.borrow_mut().after_complete_pass(&m.cfg, &m.state, started, now, trigger);
        }
        crate::sys::notify::notify(&format!("STATUS={}: {}", self.shown, summary_line(&rep)));
        let exit = exit_of(&rep);
        self.after_pass(exit, Some(&rep), None, Instant::now());
        Ok(Step::Go(exit))
    }
}

/// The pass's summary line: at debug level for an idle pass (4,320 a day
/// per tree would drown the log), a warning when it had errors. In JSON
/// the object carries the pass report's fields.
fn log_pass(rep: &PassReport) {
    let level = if !rep.errors.is_empty() {
        tracing::Level::WARN
    } else if is_idle(rep) {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    let mut fields = serde_json::to_value(rep).unwrap_or_default();
    if let Some(o) = fields.as_object_mut() {
        o.shift_remove("kind");
        o.shift_remove("would");
    }
    crate::output::log::emit(level, "pass", &fields, &summary_line(rep));
}

/// Report a pass that failed (`--loop` goes on): in the log, and as a
/// `{"kind": "error"}` object with `--json`. An error: stdout closed.
fn report_failed_pass(e: &anyhow::Error, cfg: &Config, opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    tracing::error!("pass failed: {e:#}");
    let first = format!("{e:#}");
    let first = first.lines().next().unwrap_or("");
    crate::sys::notify::notify(&format!("STATUS={}: pass failed: {first}", shown_root(cfg)));
    if opts.json {
        print_line(out, &error_object(cfg, e).to_string())?;
    }
    Ok(())
}

/// A failure no later pass can cure before an operator acts: the
/// transport's program (rsync) cannot be run (docs/decisions.md#retries). A loop ends on it (exit 2),
/// rather than retrying it every 10 minutes for ever; a supervisor's
/// restart policy, or the operator, decides what follows.
fn ends_the_loop(e: &anyhow::Error) -> bool {
    use crate::mirror::transport::Failure;
    e.chain().any(|c| c.downcast_ref::<Failure>().is_some_and(Failure::is_program_missing))
}

/// Wait before the next `--loop` pass: until `interval` after the start of
/// a good pass, or [`pause_after`] a failed one, or until `rrr trigger`
/// or SIGUSR1 asks for a pass now. None when stopped, else whether a
/// trigger ended it (the next trace's `Trigger: push`).
fn pause(
    interval: Duration,
    failed_passes: u32,
    started: Option<std::time::Instant>,
    mut trigger: Option<&mut Waker>,
) -> Option<bool> {
    let pause = pause_after(interval, failed_passes);
    if failed_passes > 0 {
        tracing::warn!("{}", backoff_line(failed_passes, pause));
    }
    let wait = match started {
        Some(t) if failed_passes == 0 => pause.saturating_sub(t.elapsed()),
        _ => pause,
    };
    let end = std::time::Instant::now() + wait;
    let mut triggered = false;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()).filter(|d| !d.is_zero()) {
        if crate::sys::signals::stop_requested() {
            return None;
        }
        let step = Duration::from_millis(50).min(left);
        let woken = match trigger.as_deref_mut() {
            Some(t) => t.wait(step),
            None => {
                std::thread::sleep(step);
                false
            }
        };
        if woken {
            tracing::debug!("triggered: passing now");
            triggered = true;
            break;
        }
    }
    (!crate::sys::signals::stop_requested()).then_some(triggered)
}

/// The exit status of a finished pass: 2 with errors; 1 with refused
/// events, deletes left pending, failing or missing-upstream paths, or a
/// whole-tree pass owed.
pub(crate) fn exit_of(rep: &PassReport) -> Exit {
    if !rep.errors.is_empty() {
        Exit::Error
    } else if !rep.refused.is_empty()
        || rep.deletes_pending > 0
        || rep.max_delete_reached
        || !rep.failing.is_empty()
        || !rep.missing_upstream.is_empty()
        || !rep.quarantined.is_empty()
        || !rep.tampered.is_empty()
    {
        Exit::Differences
    } else {
        Exit::Ok
    }
}

/// The warning after a failed `--loop` pass: how many in a row, and when
/// the next one comes.
pub(crate) fn backoff_line(failed_passes: u32, pause: Duration) -> String {
    let n = if failed_passes == 1 {
        "1 failed pass".to_string()
    } else {
        format!("{failed_passes} failed passes in a row")
    };
    format!("{n}; next pass in {}", crate::output::human::duration(pause.as_secs_f64()))
}

/// Seconds between pass starts with `--loop`: the interval, doubled for
/// each failed pass in a row (the first failure waits the interval), at
/// most 10 minutes; a good pass resets it (docs/decisions.md#retries).
pub(crate) fn pause_after(interval: Duration, failed_passes: u32) -> Duration {
    let base = interval;
    if failed_passes == 0 {
        return base;
    }
    let doubled = base.saturating_mul(1u32 << (failed_passes - 1).min(20));
    doubled.min(MAX_BACKOFF).max(base)
}

/// The longest pause between failing `--loop` passes.
const MAX_BACKOFF: Duration = Duration::from_secs(600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_ten_minutes() {
        let secs = |n| pause_after(Duration::from_secs(20), n).as_secs();
        assert_eq!([secs(0), secs(1), secs(2), secs(3), secs(5), secs(6), secs(40)], [20, 20, 40, 80, 320, 600, 600]);
        assert_eq!(pause_after(Duration::from_secs(900), 3).as_secs(), 900, "never below the interval");
    }

    #[test]
    fn counts_are_pluralised() {
        assert_eq!(crate::output::human::plural(1, "delete pending", "deletes pending"), "1 delete pending");
        assert_eq!(crate::output::human::plural(2, "delete pending", "deletes pending"), "2 deletes pending");
        assert_eq!(backoff_line(1, Duration::from_secs(20)), "1 failed pass; next pass in 20 s");
    }
}
