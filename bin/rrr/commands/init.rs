//! `rrr init`: its arguments and their conversion into `ops::init::Options`.

use super::prelude::{exclude_pattern, LockArgs};
use clap::{Args, ValueEnum};
use rrr::interval::{self, Interval};
use rrr::ops::init::Options;
use rrr::recentfile::Format;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InitArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub beacon: super::prelude::BeaconArgs,
    #[command(flatten)]
    pub hashing: super::prelude::HashArgs,
    /// The tree to index.
    pub root: PathBuf,
    /// The principal's interval.
    #[arg(long, default_value = "1h")]
    pub interval: Interval,
    /// The larger intervals, comma-separated.
    #[arg(long, default_value = "6h,1d,1W,1M,1Q,1Y,Z", value_parser = intervals)]
    pub aggregator: Intervals,
    /// Serializer: yaml or json.
    #[arg(long, default_value = "yaml", value_enum)]
    pub format: Serializer,
    /// The recentfiles' name prefix: RECENT gives RECENT.recent and RECENT-1h.yaml.
    #[arg(long, default_value = "RECENT")]
    pub filenameroot: String,
    /// Replace an existing collection.
    #[arg(long, short)]
    pub force: bool,
    /// Run the first aggregate at once.
    #[arg(long)]
    pub aggregate: bool,
    /// Leave out paths matching PATTERN, with rsync's --exclude rules
    /// (`*` within a component, `**` across, a trailing `/` for directories).
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// One JSON object describing the result.
    #[arg(long)]
    pub json: bool,
}

/// `--aggregator`: a list of intervals, one value (a `Vec` field would be
/// a repeatable option to clap).
#[derive(Clone, Debug)]
pub struct Intervals(Vec<Interval>);

fn intervals(s: &str) -> Result<Intervals, interval::IntervalError> {
    interval::parse_list(s).map(Intervals)
}

/// `--format`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Serializer {
    Yaml,
    Json,
}

impl From<InitArgs> for Options {
    fn from(a: InitArgs) -> Options {
        Options {
            root: a.root,
            interval: a.interval,
            aggregator: a.aggregator.0,
            format: match a.format {
                Serializer::Yaml => Format::Yaml,
                Serializer::Json => Format::Json,
            },
            filenameroot: a.filenameroot,
            force: a.force,
            aggregate: a.aggregate,
            excludes: a.exclude,
            json: a.json,
        }
    }
}
