//! A mirror's ftpsync traces and timestamp file (`--trace DIR`,
//! `--trace-host NAME`, `--timestamp FILE`; issue 35): the edge between a
//! pass and `monitor::trace_write`.
//!
//! Before each pass the upstream's trace directory is fetched into a
//! temporary directory (one small rsync call with the tree's rsync
//! settings: its files only, each at most 64 KiB). Fetched *before* the
//! principal, the upstream's traces never describe more than the pass
//! brings. Only after a complete pass (every event of the principal done,
//! no error, no delete held: never after a partial or failed one) are
//! they installed into `<localroot>/DIR` (every file that reads as a
//! trace; the upstream's `_hierarchy` as `_hierarchy.mirror`), and then
//! this mirror writes its own trace, named after `--trace-host` or the
//! host name, and `_hierarchy` = the upstream's chain + this mirror, each
//! atomically. An upstream without a trace directory (an origin without
//! `--trace`) is logged once per run; the mirror's own trace is written
//! all the same.
//!
//! The timestamp file carries the origin time this mirror holds (the
//! origin's beacon, else the `master` trace it holds), not the time of
//! its own pass: mirmon and mirrorbits read it as "how fresh is this
//! mirror against the origin", and a mirror whose upstream stalled must
//! age there. Without either, it is not written (logged once).
//!
//! DIR and FILE are in the tree's excludes (`mirror::options::resolve`):
//! whole-tree passes neither transfer nor delete them, events for them are
//! skipped, and `--verify-every` does not count them as unknown; they
//! are also recorded in `.rrr/own-paths`, so that `rrr verify` run by hand
//! leaves them out too.
//! Trouble writing them is a warning: monitoring never fails a pass.

use super::{Config, State};
use crate::monitor::trace::{self, Trace, Trigger};
use crate::monitor::trace_write;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The most entries an upstream's trace directory may have to be
/// installed (ftpsync's hold one per mirror of a network: dozens).
const MAX_TRACES: usize = 1000;

/// The upstream's trace directory as fetched before a pass.
pub(crate) struct Fetched {
    /// The upstream (SRC) it came from.
    from: String,
    /// Its files, or why they could not be fetched.
    dir: Result<tempfile::TempDir, String>,
}

/// The traces of one tree's run: what was fetched for the running pass,
/// and the last complaint, so that a lasting one is logged once.
#[derive(Default)]
pub(crate) struct Traces {
    fetched: Option<Fetched>,
    last_warning: Option<String>,
}

impl Traces {
    /// Before a pass: fetch the upstream's trace directory (when `--trace`
    /// is set and this is not a dry run).
    pub fn before_pass(&mut self, cfg: &Config) {
        self.fetched = None;
        if let (Some(dir), false) = (&cfg.trace, cfg.dry_run) {
            self.fetched = Some(Fetched { from: cfg.remote.src.clone(), dir: fetch(cfg, dir) });
        }
    }

    /// After a complete pass: install the upstream's traces and write ours
    /// and the timestamp file. `started` and `now` are the pass's start
    /// and end on the data clock (`--now` pins them).
    pub fn after_complete_pass(&mut self, cfg: &Config, state: &State, started: i64, now: i64, trigger: Trigger) {
        let fetched = self.fetched.take();
        let own = cfg.trace.iter().chain(&cfg.timestamp).map(PathBuf::as_path);
        if let Err(e) = trace_write::record_own(&cfg.localroot, own) {
            self.warn(format!("cannot record the trace files as rrr's own: {e:#}"));
        }
        if let Some(dir) = &cfg.trace {
            // A pass that switched upstreams reads the traces of the one it used.
            let fetched = match fetched {
                Some(f) if f.from == cfg.remote.src => f,
                _ => Fetched { from: cfg.remote.src.clone(), dir: fetch(cfg, dir) },
            };
            match write_traces(cfg, dir, state, &fetched, started, now, trigger) {
                Ok(path) => tracing::debug!("wrote the trace {}", path.display()),
                Err(e) => self.warn(format!("cannot write the trace: {e:#}")),
            }
            if let Err(why) = &fetched.dir {
                self.warn(format!(
                    "no traces from the upstream {} (this mirror's own trace is written): {why}",
                    fetched.from
                ));
            }
        }
        if let Some(file) = &cfg.timestamp {
            match origin_time(cfg, state) {
                Some(t) => match trace_write::write_timestamp(&cfg.localroot, file, t) {
                    Ok(path) => tracing::debug!("wrote the timestamp file {}", path.display()),
                    Err(e) => self.warn(format!("cannot write the timestamp file: {e:#}")),
                },
                None => self.warn(format!(
                    "timestamp file {} not written: no origin time held (the upstream publishes neither \
                     a beacon nor a master trace{})",
                    file.display(),
                    if cfg.trace.is_none() { "; --trace DIR fetches the master trace" } else { "" }
                )),
            }
        }
    }

    /// A warning, once while it stays the same.
    fn warn(&mut self, line: String) {
        if self.last_warning.as_ref() != Some(&line) {
            tracing::warn!("{line}");
            self.last_warning = Some(line);
        }
    }
}

/// Fetch the upstream's `dir` into a new temporary directory.
fn fetch(cfg: &Config, dir: &Path) -> Result<tempfile::TempDir, String> {
    let tmp = tempfile::Builder::new().prefix("rrr-traces.").tempdir().map_err(|e| format!("a temp dir: {e}"))?;
    let mut r = cfg.rsync.command(cfg.remote.transport);
    r.args(["--recursive", "--times", "--no-motd", "--exclude=/*/", "--max-size=64K"])
        .arg(cfg.remote.source(&format!("{}/", dir.display())))
        .arg(tmp.path());
    match r.run() {
        Ok(_) => Ok(tmp),
        Err(e) => Err(e.to_string().lines().last().unwrap_or("rsync failed").to_string()),
    }
}

/// Install the upstream's traces (when fetched), then write ours and
/// `_hierarchy`: the path of ours.
fn write_traces(
    cfg: &Config,
    dir: &Path,
    state: &State,
    fetched: &Fetched,
    started: i64,
    now: i64,
    trigger: Trigger,
) -> Result<std::path::PathBuf> {
    let name = cfg.trace_host.clone().unwrap_or_else(trace_write::host_name);
    if let Ok(tmp) = &fetched.dir {
        let entries = std::fs::read_dir(tmp.path()).map(Iterator::count).unwrap_or(0);
        if entries > MAX_TRACES {
            bail!("the upstream's trace directory has {entries} entries (at most {MAX_TRACES}): not installed");
        }
        trace_write::install_upstream_traces(tmp.path(), &cfg.localroot, dir, &name)
            .context("installing the upstream's traces")?;
    }
    let t = Trace {
        date: now,
        date_started: Some(started.min(now)),
        archive_serial: newest_held(state).map(|e| e.as_str().to_string()),
        host: trace_write::host_name(),
        maintainer: None,
        upstream: trace::upstream_host(&cfg.remote.src),
        trigger: Some(trigger),
        extra: Vec::new(),
    };
    trace_write::write_mirror_trace(&cfg.localroot, dir, &name, &t)
}

/// The newest epoch this mirror holds (installed or applied under its
/// dirtymark): the trace's `Archive serial`.
fn newest_held(state: &State) -> Option<&crate::epoch::Epoch> {
    let key = super::upstreams::dirtymark_key(state.dirtymark.as_ref());
    state.newest_by_dirtymark.get(&key).or(state.newest_applied.as_ref())
}

/// The origin time this mirror holds: its beacon's, else the date of the
/// `master` trace in its trace directory.
fn origin_time(cfg: &Config, state: &State) -> Option<i64> {
    if let Some(b) = &state.origin_beacon {
        return Some(b.time.to_f64().floor() as i64);
    }
    let master = cfg.localroot.join(cfg.trace.as_ref()?).join(trace_write::MASTER);
    let bytes = trace_write::read_bounded(&master).ok()?;
    trace::parse(&bytes).ok().map(|t| t.date)
}
