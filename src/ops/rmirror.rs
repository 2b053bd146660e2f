//! `rrr rmirror`: keep a local tree in sync with a remote collection, one
//! pass or `--loop`. Takes `<localroot>/.rrr/rmirror.flock` (a flock run
//! lock) so two runs on one target never overlap: a second one exits 75
//! at once, naming the holder. SIGINT/SIGTERM set a flag; the pass stops at the next
//! safe point after saving its state and the run exits 130. A failed pass
//! is reported (the exact rsync command and stderr) and, with `--loop`,
//! followed by the next one.

use crate::clock::Clock;
use crate::mirror::{Config, Interrupted, Mirror, PassReport};
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
    };
    crate::signals::install();
    let _lock = if opts.dry_run {
        None
    } else {
        std::fs::create_dir_all(&state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
        Some(take_run_lock(&state_dir)?)
    };
    if !opts.dry_run {
        crate::remote::clean_stale(&state_dir);
    }
    let mut m = Mirror::new(cfg, clock, &crate::signals::STOP)?;
    m.full = opts.full;
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
                if !rep.errors.is_empty() {
                    Exit::Error
                } else if !rep.refused.is_empty() || rep.deletes_pending > 0 || rep.max_delete_reached {
                    Exit::Differences
                } else {
                    Exit::Ok
                }
            }
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                eprintln!("rrr: rmirror: interrupted; state saved");
                return Ok(Exit::Interrupted);
            }
            Err(e) => {
                if !opts.looping {
                    return Err(e);
                }
                eprintln!("rrr: rmirror: pass failed: {e:#}");
                if opts.json {
                    let j = serde_json::json!({"kind": "error", "message": format!("{e:#}")});
                    writeln!(out, "{j}")?;
                    out.flush()?;
                }
                Exit::Error
            }
        };
        if !opts.looping {
            return Ok(last);
        }
        let wait = Duration::from_secs_f64(opts.interval.max(0.0)).saturating_sub(started.elapsed());
        let end = std::time::Instant::now() + wait;
        while std::time::Instant::now() < end {
            if crate::signals::stop_requested() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50).min(end - std::time::Instant::now()));
        }
        if crate::signals::stop_requested() {
            eprintln!("rrr: rmirror: interrupted; state saved");
            return Ok(Exit::Interrupted);
        }
    }
}
