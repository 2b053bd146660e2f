//! `rrr rmirror`: keep a local tree in sync with a remote collection, one
//! pass or `--loop`. First, writing nothing, it checks what can fail before
//! the first byte: the remote answers, its principal is valid, and the tree
//! may be mirrored into (docs/decisions.md#ownership; `--adopt`).
//! Then it creates the localroot and takes its run lock (`take_run_lock`,
//! `.rrr/rmirror.flock`) so two runs on one target never overlap: a
//! second one exits 75 at once, naming the holder (a tree that already has
//! the lock file is locked first, before the remote is asked). The lock is
//! held until the run ends, `--loop` included.
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
//! same code (`ops::mirrors::run_config`). A tree's options are merged and
//! validated once, before anything runs ([`crate::config`]).

use crate::clock::Clock;
use crate::config::{self, OptionLayer, RunFlags, TreeSpec};
use crate::mirror::trigger::Waker;
use crate::mirror::{Config, Mirror, PassReport, Refused, State};
use crate::ops::mirrors::{self, Prometheus, Targets};
use crate::ops::{is_closed, Ctx, Exit};
use crate::signals::Interrupted;
use crate::store::{LockError, RunLock};
use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Seconds an rsync may move no data before it is stopped
/// (docs/decisions.md#defaults: 300 s, watched by rrr itself,
/// `rsync::Rsync::stall_limit`, instead of rsync's `--timeout`).
pub const DEFAULT_TIMEOUT: u64 = config::DEFAULT_TIMEOUT;

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
/// [`crate::config`]), and the settings of the run itself.
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
        crate::human::count(r.transferred),
        crate::human::size(r.bytes),
        crate::human::count(r.deleted),
    );
    if r.deletes_skipped > 0 {
        s.push_str(&format!(", {}", crate::human::plural(r.deletes_skipped, "delete skipped", "deletes skipped")));
    }
    if r.deletes_pending > 0 {
        s.push_str(&format!(", {}", crate::human::plural(r.deletes_pending, "delete pending", "deletes pending")));
    }
    if !r.refused.is_empty() {
        s.push_str(&format!(", {} refused", r.refused.len()));
    }
    if !r.failing.is_empty() {
        s.push_str(&format!(", {} failing", r.failing.len()));
    }
    if r.future > 0 {
        s.push_str(&format!(", {} from the future", r.future));
    }
    if !r.errors.is_empty() {
        s.push_str(&format!(", {}", crate::human::plural(r.errors.len() as u64, "error", "errors")));
    }
    if !r.read.is_empty() {
        s.push_str(&format!("; read {}", r.read.join(" ")));
    }
    s.push_str(&format!("; {}", crate::human::duration(r.seconds)));
    if r.seconds >= 1.0 && r.bytes > 0 {
        s.push_str(&format!(" ({})", crate::human::rate(r.bytes as f64 / r.seconds)));
    }
    if r.complete {
        s.push_str("; complete");
    }
    s
}

/// rmirror's run lock, `<localroot>/.rrr/rmirror.flock` (flock: it dies
/// with its holder). A held lock is "another rmirror runs" (exit 75);
/// any other failure (a full disk, permissions) says what it is. A
/// `rmirror.lock/` directory of an older rrr is removed once this is held.
pub(crate) fn take_run_lock(state_dir: &std::path::Path) -> Result<RunLock> {
    let lock = RunLock::try_acquire(&state_dir.join("rmirror.flock")).map_err(|e| match e {
        LockError::Busy { .. } => anyhow::Error::new(e).context("another rmirror runs on this target"),
        e => anyhow::Error::new(e),
    })?;
    crate::store::remove_legacy_lock_dir(&state_dir.join("rmirror.lock"));
    Ok(lock)
}

/// The tree as log lines, pass objects and textfile labels name it: absolute.
pub(crate) fn shown_root(cfg: &Config) -> String {
    std::path::absolute(&cfg.localroot).unwrap_or_else(|_| cfg.localroot.clone()).display().to_string()
}

/// The span every line about this tree is logged in.
pub(crate) fn span(cfg: &Config) -> tracing::Span {
    tracing::info_span!("rmirror", localroot = %shown_root(cfg), remote = %cfg.remote.src)
}

/// Run rmirror on one tree, logging inside its `span`, or on every tree
/// of a config file. The tree's options are merged and validated, and a
/// tree that would mirror into its own remote refused, before anything
/// runs.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let mut out = ctx.out();
    let tree = match &opts.trees {
        Trees::Config(file) => return mirrors::run_config(file, opts, ctx.clock(), ctx.progress, &mut **out),
        Trees::One(tree) => tree,
    };
    let cfg = config::resolve(tree, &opts.options, opts.flags(ctx.progress)).map_err(anyhow::Error::msg)?;
    mirrors::refuse_overlaps(std::slice::from_ref(&cfg))?;
    let textfile = opts.prometheus.clone().map(|file| Prometheus {
        file,
        targets: Targets::Tree {
            state: cfg.state_file.clone(),
            localroot: cfg.localroot.clone(),
            remote: cfg.remote.src.clone(),
        },
    });
    let span = span(&cfg);
    let _in = span.enter();
    // The error is logged by the caller, outside the span: it names the tree itself.
    run_in_span(&cfg, opts, textfile.as_ref(), ctx.clock(), &mut **out)
        .with_context(|| format!("rmirror {}", shown_root(&cfg)))
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
    let res = passes(cfg, opts, textfile, clock, out);
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

/// Take the run lock before anything else when the tree already has one
/// (`.rrr/rmirror.flock` exists): a run on a held tree ends at once,
/// without asking the remote; nothing is created for a new tree.
fn lock_if_known(cfg: &Config, opts: &Options) -> Result<Option<RunLock>> {
    let state_dir = cfg.state_dir();
    if opts.dry_run || !state_dir.join("rmirror.flock").is_file() {
        return Ok(None);
    }
    take_run_lock(&state_dir).map(Some)
}

fn passes(
    cfg: &Config,
    opts: &Options,
    textfile: Option<&Prometheus>,
    clock: &Clock,
    out: &mut dyn Write,
) -> Result<Exit> {
    let state_dir = cfg.state_dir();
    let shown = shown_root(cfg);
    let mut early_lock = match lock_if_known(cfg, opts) {
        Ok(lock) => lock,
        Err(e) => {
            after_pass(cfg, opts, textfile, &shown, Exit::Error, None, Some(&e));
            return Err(e);
        }
    };
    crate::signals::install();
    let mut m = Mirror::new(cfg.clone(), clock.clone(), &crate::signals::STOP)?;
    m.full = opts.full;
    if let Some(p) = textfile.cloned().filter(|_| !opts.dry_run) {
        let c = clock.clone();
        m.on_heartbeat = Some(Box::new(move || p.write(&c)));
    }
    // Everything that can fail before the first byte (the remote answers,
    // its principal is valid, the tree may be mirrored into) runs before
    // the localroot or `.rrr/` is created: a refusal writes nothing. With
    // `--loop` a remote that does not answer yet is tried again (backing
    // off); a refusal or a held lock ends the run.
    let mut failed_passes = 0u32;
    let _lock = loop {
        let attempt = clock.now();
        let settled = m.settle_ownership(opts.adopt, opts.dry_run).and_then(|()| {
            if opts.dry_run {
                return Ok(None);
            }
            let lock = match early_lock.take() {
                Some(lock) => lock,
                None => {
                    std::fs::create_dir_all(&cfg.localroot)
                        .with_context(|| format!("cannot create {}", cfg.localroot.display()))?;
                    std::fs::create_dir_all(&state_dir)
                        .with_context(|| format!("cannot create {}", state_dir.display()))?;
                    take_run_lock(&state_dir)?
                }
            };
            crate::mirror::remote::clean_stale(&state_dir);
            // Again under the lock: another run may have finished meanwhile.
            m.settle_ownership(opts.adopt, true)?;
            Ok(Some(lock))
        });
        if let Err(e) = &settled {
            if let Err(why) = m.record_failed_attempt(&attempt, e, early_lock.is_some()) {
                tracing::warn!("cannot record the failed attempt: {why:#}");
            }
        }
        match settled {
            Ok(lock) => break lock,
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                tracing::info!("interrupted; nothing was changed");
                return Ok(Exit::Interrupted);
            }
            Err(e)
                if !opts.looping
                    || e.downcast_ref::<Refused>().is_some()
                    || crate::ops::exit_for_error(&e) == Exit::Locked =>
            {
                after_pass(cfg, opts, textfile, &shown, Exit::Error, None, Some(&e));
                return Err(e);
            }
            Err(e) => {
                failed_passes += 1;
                if report_failed_pass(&e, cfg, opts, out).is_err() || crate::log::closed() {
                    return Ok(Exit::Differences);
                }
                after_pass(cfg, opts, textfile, &shown, Exit::Error, None, Some(&e));
                if !pause(cfg.interval, failed_passes, None, None) {
                    tracing::info!("interrupted; nothing was changed");
                    return Ok(Exit::Interrupted);
                }
            }
        }
    };
    let mut trigger = (opts.looping && !opts.dry_run).then(|| Waker::listen(&state_dir));
    crate::notify::notify("READY=1");
    let mut failed_passes = 0u32;
    loop {
        let started = std::time::Instant::now();
        // Triggers that came before this pass starts are answered by it;
        // any that come during it make one more pass.
        if let Some(t) = &mut trigger {
            t.pass_starts();
        }
        if let Some(every) = cfg.full_every {
            if !m.full && full_due(&m.state, every, clock.now_f64()) {
                tracing::info!(
                    "a whole-tree pass is due (--full-every {})",
                    crate::human::duration(every.as_secs_f64())
                );
                m.full = true;
            }
        }
        let last = match m.pass() {
            Ok(mut rep) => {
                rep.localroot = shown.clone();
                rep.remote = cfg.remote.src.clone();
                if rep.bootstrap && rep.ok && !rep.mass_deletes_held && !opts.dry_run {
                    m.state.last_full = Some(clock.now());
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
                        return Ok(Exit::Differences);
                    }
                    return Err(e.into());
                }
                log_pass(&rep);
                crate::notify::notify(&format!("STATUS={}", summary_line(&rep)));
                let exit = exit_of(&rep);
                after_pass(cfg, opts, textfile, &shown, exit, Some(&rep), None);
                exit
            }
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                tracing::info!("interrupted; state saved");
                return Ok(Exit::Interrupted);
            }
            Err(e) => {
                if !opts.looping {
                    after_pass(cfg, opts, textfile, &shown, Exit::Error, None, Some(&e));
                    return Err(e);
                }
                if report_failed_pass(&e, cfg, opts, out).is_err() {
                    return Ok(Exit::Differences);
                }
                after_pass(cfg, opts, textfile, &shown, Exit::Error, None, Some(&e));
                Exit::Error
            }
        };
        if !opts.looping {
            return Ok(last);
        }
        if crate::log::closed() {
            // Nobody hears us any more: let the supervisor restart us.
            return Ok(Exit::Differences);
        }
        failed_passes = if last == Exit::Error { failed_passes + 1 } else { 0 };
        if !pause(cfg.interval, failed_passes, Some(started), trigger.as_mut()) {
            tracing::info!("interrupted; state saved");
            return Ok(Exit::Interrupted);
        }
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
    crate::log::emit(level, "pass", &fields, &summary_line(rep));
}

/// After a pass (or a failed one): rewrite the textfile, run the hook.
fn after_pass(
    cfg: &Config,
    opts: &Options,
    textfile: Option<&Prometheus>,
    shown: &str,
    exit: Exit,
    rep: Option<&PassReport>,
    err: Option<&anyhow::Error>,
) {
    if opts.dry_run {
        return;
    }
    if let Some(p) = textfile {
        p.write(&Clock::system());
    }
    if let Some(cmd) = &cfg.on_pass {
        if crate::hook::wanted(rep) {
            let msg = err.map(|e| format!("{e:#}"));
            let env = crate::hook::environment(shown, &cfg.remote.src, exit as i32, rep, msg.as_deref());
            crate::hook::after_pass(cmd, cfg.on_pass_timeout, &env);
        }
    }
}

/// Report a pass that failed (`--loop` goes on): in the log, and as a
/// `{"kind": "error"}` object with `--json`. An error: stdout closed.
fn report_failed_pass(e: &anyhow::Error, cfg: &Config, opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    tracing::error!("pass failed: {e:#}");
    if opts.json {
        print_line(out, &error_object(cfg, e).to_string())?;
    }
    Ok(())
}

/// Wait before the next `--loop` pass: until `interval` after the start of
/// a good pass, or [`pause_after`] a failed one, or until `rrr trigger`
/// or SIGUSR1 asks for a pass now. False when stopped.
fn pause(
    interval: Duration,
    failed_passes: u32,
    started: Option<std::time::Instant>,
    mut trigger: Option<&mut Waker>,
) -> bool {
    let pause = pause_after(interval, failed_passes);
    if failed_passes > 0 {
        tracing::warn!("{}", backoff_line(failed_passes, pause));
    }
    let wait = match started {
        Some(t) if failed_passes == 0 => pause.saturating_sub(t.elapsed()),
        _ => pause,
    };
    let end = std::time::Instant::now() + wait;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()).filter(|d| !d.is_zero()) {
        if crate::signals::stop_requested() {
            return false;
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
            break;
        }
    }
    !crate::signals::stop_requested()
}

/// The exit status of a finished pass: 2 with errors; 1 with refused
/// events, deletes left pending, failing paths, or a whole-tree pass owed.
pub(crate) fn exit_of(rep: &PassReport) -> Exit {
    if !rep.errors.is_empty() {
        Exit::Error
    } else if !rep.refused.is_empty() || rep.deletes_pending > 0 || rep.max_delete_reached || !rep.failing.is_empty() {
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
    format!("{n}; next pass in {}", crate::human::duration(pause.as_secs_f64()))
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
        assert_eq!(crate::human::plural(1, "delete pending", "deletes pending"), "1 delete pending");
        assert_eq!(crate::human::plural(2, "delete pending", "deletes pending"), "2 deletes pending");
        assert_eq!(backoff_line(1, Duration::from_secs(20)), "1 failed pass; next pass in 20 s");
    }
}
