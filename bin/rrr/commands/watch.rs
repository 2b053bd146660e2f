//! `rrr watch`: its arguments and their conversion into `ops::watch::Options`.

use super::prelude::{exclude_pattern, LockArgs};
use clap::Args;
use rrr::ops::watch::Options;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub beacon: super::prelude::BeaconArgs,
    #[command(flatten)]
    pub hashing: super::prelude::HashArgs,
    /// The principal (RECENT.recent, the principal recentfile, or the root).
    pub principal: PathBuf,
    /// Record a batch when this many changes are pending.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub batch_size: usize,
    /// Record a batch when its oldest change waited this many milliseconds,
    /// or once no change came for a tenth of it.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub batch_delay: u64,
    /// Run the cascade (aggregate) every S seconds.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub aggregate_every: u64,
    /// Leave out paths matching PATTERN, with rsync's --exclude rules
    /// (`*` within a component, `**` across, a trailing `/` for directories).
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// Keep delete events in Z when aggregating.
    #[arg(long)]
    pub keep_deletes: bool,
    /// Log JSON Lines on stderr (the same as --log-format json).
    #[arg(long)]
    pub json_log: bool,
    /// Rewrite this node-exporter textfile at every heartbeat.
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// Run CMD through /bin/sh -c after recorded batches, beside the
    /// daemon: one run at a time, batches recorded meanwhile make one more
    /// run; the batch in RRR_* variables (README.mirror).
    #[arg(long, value_name = "CMD")]
    pub on_batch: Option<String>,
    /// Seconds an --on-batch run may take before it is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = rrr::hook::DEFAULT_TIMEOUT.as_secs_f64())]
    pub on_batch_timeout: f64,
    /// The most paths a batch holds before it is dropped for a rescan of
    /// the tree (a test knob: the default bounds memory at some 30 MB).
    #[arg(long, value_name = "N", default_value_t = rrr::ops::watch::MAX_BATCH_ENTRIES, hide = true)]
    pub max_batch_entries: usize,
    /// Serve the --prometheus textfile's metrics (as of the last
    /// heartbeat) and rrrgo's counters over HTTP at http://ADDR:PORT/metrics
    /// (e.g. 127.0.0.1:9105); a taken address exits 2 at start.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_listen: Option<String>,
    #[command(flatten)]
    pub traces: super::prelude::OriginTraceArgs,
}

impl From<WatchArgs> for Options {
    fn from(a: WatchArgs) -> Options {
        Options {
            principal: a.principal,
            batch_size: a.batch_size,
            batch_delay: Duration::from_millis(a.batch_delay),
            aggregate_every: Duration::from_secs(a.aggregate_every.max(1)),
            excludes: a.exclude,
            keep_deletes: a.keep_deletes,
            prometheus: a.prometheus,
            on_batch: a.on_batch,
            on_batch_timeout: Duration::from_secs_f64(a.on_batch_timeout.max(0.0)),
            max_batch_entries: a.max_batch_entries.max(1),
            traces: a.traces.files(),
            metrics_listen: a.metrics_listen,
        }
    }
}
