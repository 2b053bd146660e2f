//! `rrr watch`: the command's options and its setup (the collection
//! opened, the tree locked for one daemon, the signal handlers, the
//! `--on-batch` hook's thread), then the daemon itself,
//! `origin::watch::serve`, until SIGTERM/SIGINT.

use super::{Ctx, Exit};
use crate::collection::Collection;
use crate::hook::{Background, Recorded};
use crate::monitor::metrics_http::serve_metrics;
use crate::origin::watch::{Settings, Tree};
use crate::tree::IgnoreSet;
use anyhow::{ensure, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::origin::watch::MAX_BATCH_ENTRIES;

/// What `rrr watch` is asked to do (its command line, converted).
pub struct Options {
    /// The principal (RECENT.recent, the principal recentfile, or the root).
    pub principal: PathBuf,
    /// Flush when this many changes are pending.
    pub batch_size: usize,
    /// Flush when the oldest pending change waited this long.
    pub batch_delay: Duration,
    /// Run the cascade this often.
    pub aggregate_every: Duration,
    /// `--exclude` patterns (rsync's rules): paths never recorded.
    pub excludes: Vec<String>,
    /// Keep delete events in Z when aggregating.
    pub keep_deletes: bool,
    /// Rewrite this node-exporter textfile at every heartbeat.
    pub prometheus: Option<PathBuf>,
    /// Run this through `/bin/sh -c` after recorded batches, beside the
    /// daemon (`hook::Background`).
    pub on_batch: Option<String>,
    /// How long an `--on-batch` run may take before it is killed.
    pub on_batch_timeout: Duration,
    /// The most paths a batch holds before it is traded for a rescan
    /// ([`MAX_BATCH_ENTRIES`] by default).
    pub max_batch_entries: usize,
    /// `--trace DIR`, `--timestamp FILE`: the master trace and the
    /// timestamp file, rewritten with the beacon; rrr's own (never recorded).
    pub traces: crate::monitor::trace_write::OriginFiles,
    /// `--metrics-listen ADDR:PORT`: serve the metrics at `/metrics`.
    pub metrics_listen: Option<String>,
}

/// Run the daemon until SIGTERM/SIGINT.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    ensure!(opts.batch_size > 0, "--batch-size must be at least 1");
    let w = &ctx.writer;
    let coll = Collection::open(&opts.principal)?;
    crate::origin::beacon::check_start(&coll, w)?;
    let mut ignore =
        IgnoreSet::new(&coll.filenameroot, &opts.excludes).with_clock(&w.clock).with_recorded_own(&coll.root);
    for own in opts.traces.own_paths() {
        ignore = ignore.with_own_dir(own.as_os_str().as_encoded_bytes());
    }
    let root = std::path::absolute(&coll.root).with_context(|| format!("cannot resolve {}", coll.root.display()))?;
    let span = tracing::info_span!("watch", root = %root.display());
    let _in = span.enter();
    let _run_lock = crate::origin::watch_lock(&root, "another watch runs on this tree")?;
    // Written once now: a bad path is an error at start (exit 2).
    opts.traces.write(&coll, w.clock.now_f64().floor() as i64)?;
    // Listening before the daemon runs: a taken address is an error at start.
    let metrics = opts.metrics_listen.as_ref().map(|_| Arc::new(Mutex::new(String::new())));
    let _server = match (&opts.metrics_listen, &metrics) {
        (Some(addr), Some(text)) => {
            let text = Arc::clone(text);
            let server = serve_metrics(addr, move || Ok(text.lock().unwrap_or_else(|e| e.into_inner()).clone()))?;
            tracing::info!("serving metrics at http://{}/metrics", server.local_addr());
            Some(server)
        }
        _ => None,
    };
    crate::sys::signals::install();
    let on_batch = match &opts.on_batch {
        None => None,
        Some(cmd) => Some(on_batch(cmd, opts.on_batch_timeout, &root.join(coll.file_name(coll.principal())), &root)?),
    };
    let settings = Settings {
        batch_size: opts.batch_size,
        batch_delay: opts.batch_delay,
        aggregate_every: opts.aggregate_every,
        keep_deletes: opts.keep_deletes,
        prometheus: opts.prometheus.clone(),
        max_batch_entries: opts.max_batch_entries,
        traces: opts.traces.clone(),
        metrics,
    };
    crate::origin::watch::serve(&settings, w, Tree { coll, ignore, root, on_batch })?;
    Ok(Exit::Ok)
}

/// The `--on-batch` hook's thread. Its variables: `RRR_ROOT`,
/// `RRR_PRINCIPAL` (the principal recentfile), `RRR_BATCHES` (how many
/// records this run stands for: more than 1 when they came while the last
/// run went on), `RRR_BATCH_SIZE` (their changes), `RRR_NEW`,
/// `RRR_DELETE`, and `RRR_NEWEST_EPOCH` (the principal's newest event
/// when the run starts: a mirror that has it has everything recorded so
/// far; empty if it cannot be read).
fn on_batch(cmd: &str, timeout: Duration, principal: &Path, root: &Path) -> Result<Background> {
    let (principal, root) = (principal.to_path_buf(), root.to_path_buf());
    let env = move |r: Recorded| {
        let newest = crate::store::read_file(&principal)
            .ok()
            .flatten()
            .and_then(|rf| rf.events.first().map(|e| e.epoch.to_string()))
            .unwrap_or_default();
        [
            ("RRR_ROOT", root.display().to_string()),
            ("RRR_PRINCIPAL", principal.display().to_string()),
            ("RRR_BATCHES", r.batches.to_string()),
            ("RRR_BATCH_SIZE", (r.new + r.delete).to_string()),
            ("RRR_NEW", r.new.to_string()),
            ("RRR_DELETE", r.delete.to_string()),
            ("RRR_NEWEST_EPOCH", newest),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    Background::start("on-batch", cmd.to_string(), timeout, env).context("cannot start the --on-batch thread")
}
