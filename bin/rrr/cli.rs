//! The command line: clap definitions only. Each subcommand's arguments are
//! converted once into the options struct of `rrr::ops::<command>`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "rrr",
    version,
    about = "Mirror huge trees from a cascade of recentfiles (File::Rsync::Mirror::Recent successor)"
)]
pub struct Cli {
    /// Pin the clock to EPOCH (tests and demos): every clock reading and every written file's mtime.
    #[arg(long, global = true, hide = true, value_name = "EPOCH")]
    pub now: Option<String>,

    /// No progress bars.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Seconds to wait for a recentfile's lock.
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 600)]
    pub locktimeout: u64,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Index an existing tree: write the principal and RECENT.recent.
    Init(InitArgs),
    /// Record new/delete events in the principal (never aggregates).
    Update(UpdateArgs),
    /// Cascade events from the principal into the larger recentfiles.
    Aggregate(AggregateArgs),
    /// List each path's newest event, newest first.
    News(NewsArgs),
    /// Show the table of all recentfiles of a collection.
    Overview(OverviewArgs),
    /// Compare the index with the tree; --repair records the differences.
    Fsck(FsckArgs),
    /// The origin daemon: watch the tree with inotify and record every change.
    Watch(WatchArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The tree to index.
    pub root: PathBuf,
    /// The principal's interval.
    #[arg(long, default_value = "1h")]
    pub interval: String,
    /// The larger intervals, comma-separated.
    #[arg(long, default_value = "6h,1d,1W,1M,1Q,1Y,Z")]
    pub aggregator: String,
    /// Serializer: yaml or json.
    #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub format: String,
    #[arg(long, default_value = "RECENT")]
    pub filenameroot: String,
    /// Replace an existing collection.
    #[arg(long, short)]
    pub force: bool,
    /// Run the first aggregate at once.
    #[arg(long)]
    pub aggregate: bool,
    /// Leave out paths matching GLOB (relative path or file name).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// One JSON object describing the result.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct UpdateArgs {
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    /// Files, relative to the root or absolute inside it.
    pub paths: Vec<String>,
    /// Record deletes instead of news.
    #[arg(long)]
    pub delete: bool,
    /// A dirty update: the event happened at EPOCH (in the past).
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<String>,
    /// Read `[EPOCH] new|delete PATH` lines from stdin (one batch, one lock).
    #[arg(long)]
    pub stdin: bool,
}

#[derive(Args, Debug)]
pub struct AggregateArgs {
    pub principal: PathBuf,
    /// Merge every file, whatever its age.
    #[arg(long, short)]
    pub force: bool,
    /// Keep delete events in Z (the reference's keep_delete_objects_forever).
    #[arg(long)]
    pub keep_deletes: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct NewsArgs {
    /// The principal (RECENT.recent, a recentfile, or the tree's root).
    #[arg(long, value_name = "PRINCIPAL")]
    pub local: PathBuf,
    /// Only events strictly newer than EPOCH.
    #[arg(long, value_name = "EPOCH")]
    pub after: Option<String>,
    /// Only events strictly older than EPOCH.
    #[arg(long, value_name = "EPOCH")]
    pub before: Option<String>,
    /// At most N lines.
    #[arg(long, value_name = "N")]
    pub max: Option<usize>,
    /// Drop paths whose newest event is a delete.
    #[arg(long)]
    pub skip_deletes: bool,
    /// Only this path.
    #[arg(long, alias = "contains_path", value_name = "PATH")]
    pub contains_path: Option<String>,
    /// JSON Lines: {"epoch","type","path"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct OverviewArgs {
    /// The principal (default ./RECENT.recent).
    #[arg(default_value = "RECENT.recent")]
    pub principal: PathBuf,
    /// Add Dirtymark, Produced and Merged columns.
    #[arg(long, short)]
    pub verbose: bool,
    /// One JSON object per recentfile.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct FsckArgs {
    pub principal: PathBuf,
    /// Record the differences as events at the current time.
    #[arg(long)]
    pub repair: bool,
    /// Leave out paths matching GLOB.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// JSON Lines, one finding per line, then a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The principal (RECENT.recent, the principal recentfile, or the root).
    pub principal: PathBuf,
    /// Record a batch when this many changes are pending.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub batch_size: usize,
    /// Record a batch when its oldest change waited this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub batch_delay: u64,
    /// Run the cascade (aggregate) every S seconds.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub aggregate_every: u64,
    /// Leave out paths matching GLOB (relative path or file name).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Keep delete events in Z when aggregating.
    #[arg(long)]
    pub keep_deletes: bool,
    /// Log JSON Lines (one object per line, with a "kind" field) on stderr.
    #[arg(long)]
    pub json_log: bool,
}
