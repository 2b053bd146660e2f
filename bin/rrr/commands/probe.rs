//! `rrr probe`: its arguments and their conversion into `ops::probe::Options`.

use clap::Args;
use rrr::ops::probe::{Format, Options};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Mirrors to probe: rsync://HOST[:PORT]/MODULE[/PATH] (the tree's root).
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
    /// Measure lag behind this origin's master trace instead of the freshest mirror's.
    #[arg(long, value_name = "URL")]
    pub origin: Option<String>,
    /// The trace directory below each URL.
    #[arg(long, value_name = "DIR", default_value = "project/trace")]
    pub trace_dir: String,
    /// Seconds each mirror may take to connect, or stay silent, before it counts as unreachable.
    #[arg(long, value_name = "SECS", default_value_t = 20)]
    pub timeout: u64,
    /// A mirror whose lag is over this many seconds is stale (default 4 h, mirror-status's best bucket).
    #[arg(long, value_name = "SECS", default_value_t = 14400)]
    pub max_lag: u64,
    /// One JSON object per mirror.
    #[arg(long, conflicts_with = "prometheus")]
    pub json: bool,
    /// Prometheus text (e.g. for node-exporter's textfile collector).
    #[arg(long)]
    pub prometheus: bool,
}

impl From<ProbeArgs> for Options {
    fn from(a: ProbeArgs) -> Options {
        let format = if a.json {
            Format::Json
        } else if a.prometheus {
            Format::Prometheus
        } else {
            Format::Table
        };
        Options {
            urls: a.urls,
            origin: a.origin,
            trace_dir: a.trace_dir,
            timeout: Duration::from_secs(a.timeout.max(1)),
            max_lag: a.max_lag as f64,
            format,
        }
    }
}
