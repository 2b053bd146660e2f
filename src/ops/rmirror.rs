//! `rrr rmirror`: keep a local tree in sync with a remote collection, one
//! pass or `--loop`. First, writing nothing, it checks what can fail before
//! the first byte: the remote answers, its principal is valid, and the tree
//! may be mirrored into (DECISIONS.md, "What rrr may delete"; `--adopt`).
//! Then it creates the localroot and takes its run lock (`take_run_lock`,
//! `.rrr/rmirror.flock`) so two runs on one target never overlap: a
//! second one exits 75 at once, naming the holder.
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
//! `--config FILE` runs several trees (`ops::mirrors::run_config`).

use crate::clock::Clock;
use crate::mirror::remote::{Remote, RsyncSettings};
use crate::mirror::{Config, Mirror, PassReport, Refused, State};
use crate::ops::mirrors::{self, Prometheus, Targets};
use crate::ops::{is_closed, Ctx, Exit};
use crate::signals::Interrupted;
use crate::store::{LockError, RunLock};
use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Seconds an rsync may move no data before it is stopped (DECISIONS.md:
/// rsync's `--timeout=300`, now watched by rrr, `rsync::Rsync::stall_limit`).
pub const DEFAULT_TIMEOUT: u64 = 300;

/// What `rrr rmirror` was asked to do, as the binary parsed it.
#[derive(Clone, Debug)]
pub struct Options {
    /// Every tree of this TOML file instead of `remote` and `localroot`
    /// (its settings win over the ones here).
    pub config: Option<PathBuf>,
    /// The remote principal (SRC): `rsync://…`, `HOST::MODULE/…`,
    /// `HOST:PATH` or a local path.
    pub remote: String,
    /// The local tree mirrored into.
    pub localroot: PathBuf,
    /// `--loop`: passes until SIGINT/SIGTERM instead of one.
    pub looping: bool,
    /// Seconds between pass starts with `--loop`.
    pub interval: f64,
    /// Do not apply delete events.
    pub skip_deletes: bool,
    /// Deletes this run may apply; the rest stays pending in the state.
    pub max_delete: Option<u64>,
    /// `--accept-deletes`: the next whole-tree pass may delete a mass of the tree.
    pub accept_deletes: bool,
    /// Paths per rsync call (`--files-from` chunk size).
    pub max_files_per_connection: usize,
    /// The state file (default `<localroot>/.rrr/state.json`).
    pub state: Option<PathBuf>,
    /// `--rsync-option` values, passed to every rsync call in order.
    pub rsync_options: Vec<String>,
    /// rsync's `--password-file` (daemon sources only).
    pub password_file: Option<PathBuf>,
    /// List what would be transferred and deleted; change nothing.
    pub dry_run: bool,
    /// Reconcile once with a whole-tree rsync.
    pub full: bool,
    /// A whole-tree pass when the last one is this many seconds old.
    pub full_every: Option<f64>,
    /// Make a tree that is not (yet) a mirror of SRC one (DECISIONS.md).
    pub adopt: bool,
    /// Remote recentfiles larger than this are refused unread.
    pub max_recentfile_size: u64,
    /// Seconds an rsync may move no data before it is stopped (0: never).
    pub timeout: u64,
    /// Paths left out (rsync's `--exclude` syntax).
    pub excludes: Vec<String>,
    /// `--on-pass CMD`, run through `/bin/sh -c` after a pass that changed
    /// something or failed.
    pub on_pass: Option<String>,
    /// How long an `--on-pass` hook may run before it is killed.
    pub on_pass_timeout: Duration,
    /// The node-exporter textfile to rewrite after each pass and heartbeat
    /// (one file for every tree of a config).
    pub prometheus: Option<PathBuf>,
    /// One JSON object per pass on stdout instead of the summary line.
    pub json: bool,
}

impl Options {
    /// The state file: `--state`, or `<localroot>/.rrr/state.json`.
    pub(crate) fn state_file(&self) -> PathBuf {
        self.state.clone().unwrap_or_else(|| self.localroot.join(".rrr/state.json"))
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
        s.push_str(&format!(", {} deletes skipped", r.deletes_skipped));
    }
    if r.deletes_pending > 0 {
        s.push_str(&format!(", {} deletes pending", r.deletes_pending));
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
        s.push_str(&format!(", {} errors", r.errors.len()));
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
pub(crate) fn shown_root(opts: &Options) -> String {
    std::path::absolute(&opts.localroot).unwrap_or_else(|_| opts.localroot.clone()).display().to_string()
}

/// The span every line about this tree is logged in.
pub(crate) fn span(opts: &Options) -> tracing::Span {
    tracing::info_span!("rmirror", localroot = %shown_root(opts), remote = %opts.remote)
}

/// Run rmirror on one tree, logging inside its `span`, or on every tree
/// of `opts.config`.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let mut out = ctx.out();
    if let Some(file) = &opts.config {
        return mirrors::run_config(file, opts, ctx.clock(), ctx.progress, &mut **out);
    }
    let textfile = opts.prometheus.clone().map(|file| Prometheus {
        file,
        targets: Targets::Tree {
            state: opts.state_file(),
            localroot: opts.localroot.clone(),
            remote: opts.remote.clone(),
        },
    });
    let span = span(opts);
    let _in = span.enter();
    run_in_span(opts, textfile.as_ref(), ctx.clock(), ctx.progress, &mut **out)
}

/// One tree, in the [`span`] the caller entered, rewriting `textfile`
/// after each pass. With `--json`, a run that fails still prints a
/// `{"kind": "error"}` object on stdout.
pub(crate) fn run_in_span(
    opts: &Options,
    textfile: Option<&Prometheus>,
    clock: &Clock,
    progress: bool,
    out: &mut dyn Write,
) -> Result<Exit> {
    let res = passes(opts, textfile, clock, progress, out);
    if let Err(e) = &res {
        if opts.json && !is_closed(e) {
            let _ = print_line(out, &error_object(opts, e).to_string());
        }
    }
    res
}

fn print_line(out: &mut dyn Write, line: &str) -> io::Result<()> {
    writeln!(out, "{line}")?;
    out.flush()
}

fn error_object(opts: &Options, e: &anyhow::Error) -> serde_json::Value {
    serde_json::json!({"kind": "error", "localroot": shown_root(opts), "remote": opts.remote,
                       "message": format!("{e:#}")})
}

/// Whether a whole-tree pass is due under `--full-every` (seconds): the
/// last one (or the mirror's start) is that old.
pub(crate) fn full_due(state: &State, every: f64, now: f64) -> bool {
    state.last_full.as_ref().or(state.started.as_ref()).is_some_and(|e| now - e.to_f64() >= every)
}

fn passes(
    opts: &Options,
    textfile: Option<&Prometheus>,
    clock: &Clock,
    progress: bool,
    out: &mut dyn Write,
) -> Result<Exit> {
    let remote = Remote::parse(&opts.remote)?;
    let state_dir = opts.localroot.join(".rrr");
    let state_file = opts.state_file();
    let shown = shown_root(opts);
    let cfg = Config {
        remote,
        localroot: opts.localroot.clone(),
        state_file,
        skip_deletes: opts.skip_deletes,
        max_delete: opts.max_delete,
        accept_deletes: opts.accept_deletes,
        max_files_per_connection: opts.max_files_per_connection,
        rsync: RsyncSettings {
            password_file: opts.password_file.clone(),
            extra: opts.rsync_options.clone(),
            timeout: opts.timeout,
            contimeout: 30,
        },
        dry_run: opts.dry_run,
        attempts: 3,
        backoff: Duration::from_secs(2),
        progress,
        max_recentfile_size: opts.max_recentfile_size,
        excludes: opts.excludes.clone(),
    };
    crate::signals::install();
    let mut m = Mirror::new(cfg, clock.clone(), &crate::signals::STOP)?;
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
        let settled = m.settle_ownership(opts.adopt, opts.dry_run).and_then(|()| {
            if opts.dry_run {
                return Ok(None);
            }
            std::fs::create_dir_all(&opts.localroot)
                .with_context(|| format!("cannot create {}", opts.localroot.display()))?;
            std::fs::create_dir_all(&state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
            let lock = take_run_lock(&state_dir)?;
            crate::mirror::remote::clean_stale(&state_dir);
            // Again under the lock: another run may have finished meanwhile.
            m.settle_ownership(opts.adopt, true)?;
            Ok(Some(lock))
        });
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
                after_pass(opts, textfile, &shown, Exit::Error, None, Some(&e));
                return Err(e);
            }
            Err(e) => {
                failed_passes += 1;
                if report_failed_pass(&e, opts, out).is_err() || crate::log::closed() {
                    return Ok(Exit::Differences);
                }
                after_pass(opts, textfile, &shown, Exit::Error, None, Some(&e));
                if !pause(opts, failed_passes, None) {
                    tracing::info!("interrupted; nothing was changed");
                    return Ok(Exit::Interrupted);
                }
            }
        }
    };
    crate::notify::notify("READY=1");
    let mut failed_passes = 0u32;
    loop {
        let started = std::time::Instant::now();
        if let Some(every) = opts.full_every {
            if !m.full && full_due(&m.state, every, clock.now_f64()) {
                tracing::info!("a whole-tree pass is due (--full-every {})", crate::human::duration(every));
                m.full = true;
            }
        }
        let last = match m.pass() {
            Ok(mut rep) => {
                rep.localroot = shown.clone();
                rep.remote = opts.remote.clone();
                if rep.bootstrap && rep.ok && !opts.dry_run {
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
                after_pass(opts, textfile, &shown, exit, Some(&rep), None);
                exit
            }
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                tracing::info!("interrupted; state saved");
                return Ok(Exit::Interrupted);
            }
            Err(e) => {
                if !opts.looping {
                    after_pass(opts, textfile, &shown, Exit::Error, None, Some(&e));
                    return Err(e);
                }
                if report_failed_pass(&e, opts, out).is_err() {
                    return Ok(Exit::Differences);
                }
                after_pass(opts, textfile, &shown, Exit::Error, None, Some(&e));
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
        if !pause(opts, failed_passes, Some(started)) {
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
    if let Some(cmd) = &opts.on_pass {
        if crate::hook::wanted(rep) {
            let msg = err.map(|e| format!("{e:#}"));
            let env = crate::hook::environment(shown, &opts.remote, exit as i32, rep, msg.as_deref());
            crate::hook::after_pass(cmd, opts.on_pass_timeout, &env);
        }
    }
}

/// Report a pass that failed (`--loop` goes on): in the log, and as a
/// `{"kind": "error"}` object with `--json`. An error: stdout closed.
fn report_failed_pass(e: &anyhow::Error, opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    tracing::error!("pass failed: {e:#}");
    if opts.json {
        print_line(out, &error_object(opts, e).to_string())?;
    }
    Ok(())
}

/// Wait before the next `--loop` pass: until `interval` after the start of
/// a good pass, or [`pause_after`] a failed one. False when stopped.
fn pause(opts: &Options, failed_passes: u32, started: Option<std::time::Instant>) -> bool {
    let pause = pause_after(opts.interval, failed_passes);
    if failed_passes > 0 {
        tracing::warn!("{}", backoff_line(failed_passes, pause));
    }
    let wait = match started {
        Some(t) if failed_passes == 0 => pause.saturating_sub(t.elapsed()),
        _ => pause,
    };
    let end = std::time::Instant::now() + wait;
    while std::time::Instant::now() < end {
        if crate::signals::stop_requested() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(end - std::time::Instant::now()));
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
/// most 10 minutes; a good pass resets it (DECISIONS.md).
pub(crate) fn pause_after(interval: f64, failed_passes: u32) -> Duration {
    let base = Duration::from_secs_f64(interval.max(0.0));
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
        let secs = |n| pause_after(20.0, n).as_secs();
        assert_eq!([secs(0), secs(1), secs(2), secs(3), secs(5), secs(6), secs(40)], [20, 20, 40, 80, 320, 600, 600]);
        assert_eq!(pause_after(900.0, 3).as_secs(), 900, "never below the interval");
        assert_eq!(pause_after(0.0, 4), Duration::ZERO);
    }
}
