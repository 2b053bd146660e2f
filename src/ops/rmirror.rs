//! `rrr rmirror`: keep a local tree in sync with a remote collection, one
//! pass or `--loop`. First, writing nothing, it checks what can fail before
//! the first byte: the remote answers, its principal is valid, and the tree
//! may be mirrored into (DECISIONS.md, "What rrr may delete"; `--adopt`).
//! Then it creates the localroot and takes its run lock ([`take_run_lock`],
//! `.rrr/rmirror.flock`) so two runs on one target never overlap: a
//! second one exits 75 at once, naming the holder.
//! SIGINT/SIGTERM set a flag and stop the running rsync; the pass stops at
//! the next safe point after saving its state and the run exits 130. A
//! failed pass is reported (the exact rsync command and stderr) and, with
//! `--loop`, followed by the next one after a pause that doubles with each
//! failed pass in a row.

use crate::clock::Clock;
use crate::mirror::{Config, Interrupted, Mirror, PassReport, Refused};
use crate::ops::Exit;
use crate::remote::{Remote, RsyncSettings};
use crate::store::{LockError, RunLock};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Options {
    pub remote: String,
    pub localroot: PathBuf,
    pub looping: bool,
    /// Seconds between pass starts with `--loop`.
    pub interval: f64,
    pub skip_deletes: bool,
    pub max_delete: Option<u64>,
    pub max_files_per_connection: usize,
    pub state: Option<PathBuf>,
    pub rsync_options: Vec<String>,
    pub password_file: Option<PathBuf>,
    pub dry_run: bool,
    pub full: bool,
    /// Make a tree that is not (yet) a mirror of SRC one (DECISIONS.md).
    pub adopt: bool,
    /// Remote recentfiles larger than this are refused unread.
    pub max_recentfile_size: u64,
    pub json: bool,
    pub quiet: bool,
    pub progress: bool,
}

/// The summary line of a pass (stderr, without `--json`).
pub fn summary_line(r: &PassReport) -> String {
    let mut s = format!(
        "rrr: rmirror: {}{}: {} transferred ({} bytes), {} deleted",
        if r.dry_run { "dry run" } else { "pass" },
        if r.bootstrap { " (bootstrap)" } else { "" },
        r.transferred,
        r.bytes,
        r.deleted,
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
    s.push_str(&format!("; read {}; {:.2} s", r.read.join(" "), r.seconds));
    if r.complete {
        s.push_str("; complete");
    }
    s
}

/// rmirror's run lock, `<localroot>/.rrr/rmirror.flock` (flock: it dies
/// with its holder). A held lock is "another rmirror runs" (exit 75);
/// any other failure (a full disk, permissions) says what it is. A
/// `rmirror.lock/` directory of an older rrr is removed once this is held.
pub fn take_run_lock(state_dir: &std::path::Path) -> Result<RunLock> {
    let lock = RunLock::try_acquire(&state_dir.join("rmirror.flock")).map_err(|e| match e {
        LockError::Busy { .. } => anyhow::Error::new(e).context("another rmirror runs on this target"),
        e => anyhow::Error::new(e),
    })?;
    crate::store::remove_legacy_lock_dir(&state_dir.join("rmirror.lock"));
    Ok(lock)
}

pub fn run(opts: &Options, clock: Clock, out: &mut dyn Write) -> Result<Exit> {
    let remote = Remote::parse(&opts.remote)?;
    let state_dir = opts.localroot.join(".rrr");
    let state_file = opts.state.clone().unwrap_or_else(|| state_dir.join("state.json"));
    let cfg = Config {
        remote,
        localroot: opts.localroot.clone(),
        state_file,
        skip_deletes: opts.skip_deletes,
        max_delete: opts.max_delete,
        max_files_per_connection: opts.max_files_per_connection,
        rsync: RsyncSettings {
            password_file: opts.password_file.clone(),
            extra: opts.rsync_options.clone(),
            timeout: 300,
            contimeout: 30,
        },
        dry_run: opts.dry_run,
        attempts: 3,
        backoff: Duration::from_secs(2),
        progress: opts.progress,
        max_recentfile_size: opts.max_recentfile_size,
    };
    crate::signals::install();
    let mut m = Mirror::new(cfg, clock, &crate::signals::STOP)?;
    m.full = opts.full;
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
            crate::remote::clean_stale(&state_dir);
            // Again under the lock: another run may have finished meanwhile.
            m.settle_ownership(opts.adopt, true)?;
            Ok(Some(lock))
        });
        match settled {
            Ok(lock) => break lock,
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                eprintln!("rrr: rmirror: interrupted; nothing was changed");
                return Ok(Exit::Interrupted);
            }
            Err(e)
                if !opts.looping
                    || e.downcast_ref::<Refused>().is_some()
                    || crate::ops::exit_for_error(&e) == Exit::Locked =>
            {
                return Err(e)
            }
            Err(e) => {
                failed_passes += 1;
                report_failed_pass(&e, opts, out)?;
                if !pause(opts, failed_passes, None) {
                    eprintln!("rrr: rmirror: interrupted; nothing was changed");
                    return Ok(Exit::Interrupted);
                }
            }
        }
    };
    let mut failed_passes = 0u32;
    loop {
        let started = std::time::Instant::now();
        let last = match m.pass() {
            Ok(rep) => {
                if opts.json {
                    writeln!(out, "{}", serde_json::to_string(&rep)?)?;
                    out.flush()?;
                } else {
                    for w in &rep.would {
                        writeln!(out, "{}", crate::recentfile::escape_path(w))?;
                    }
                    out.flush()?;
                    if !opts.quiet {
                        eprintln!("{}", summary_line(&rep));
                    }
                }
                exit_of(&rep)
            }
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                eprintln!("rrr: rmirror: interrupted; state saved");
                return Ok(Exit::Interrupted);
            }
            Err(e) => {
                if !opts.looping {
                    return Err(e);
                }
                report_failed_pass(&e, opts, out)?;
                Exit::Error
            }
        };
        if !opts.looping {
            return Ok(last);
        }
        failed_passes = if last == Exit::Error { failed_passes + 1 } else { 0 };
        if !pause(opts, failed_passes, Some(started)) {
            eprintln!("rrr: rmirror: interrupted; state saved");
            return Ok(Exit::Interrupted);
        }
    }
}

/// Report a pass that failed (`--loop` goes on): on stderr, and as a
/// `{"kind": "error"}` object with `--json`.
fn report_failed_pass(e: &anyhow::Error, opts: &Options, out: &mut dyn Write) -> Result<()> {
    eprintln!("rrr: rmirror: pass failed: {e:#}");
    if opts.json {
        let j = serde_json::json!({"kind": "error", "message": format!("{e:#}")});
        writeln!(out, "{j}")?;
        out.flush()?;
    }
    Ok(())
}

/// Wait before the next `--loop` pass: until `interval` after the start of
/// a good pass, or [`pause_after`] a failed one. False when stopped.
fn pause(opts: &Options, failed_passes: u32, started: Option<std::time::Instant>) -> bool {
    let pause = pause_after(opts.interval, failed_passes);
    if failed_passes > 0 && !opts.quiet {
        eprintln!("rrr: rmirror: {failed_passes} failed passes in a row; next pass in {:.0?}", pause);
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
pub fn exit_of(rep: &PassReport) -> Exit {
    if !rep.errors.is_empty() {
        Exit::Error
    } else if !rep.refused.is_empty() || rep.deletes_pending > 0 || rep.max_delete_reached || !rep.failing.is_empty() {
        Exit::Differences
    } else {
        Exit::Ok
    }
}

/// Seconds between pass starts with `--loop`: the interval, doubled for
/// each failed pass in a row (the first failure waits the interval), at
/// most 10 minutes; a good pass resets it (DECISIONS.md).
pub fn pause_after(interval: f64, failed_passes: u32) -> Duration {
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
