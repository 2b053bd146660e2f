//! The command line: clap definitions only. Each subcommand's arguments are
//! converted once into the options struct of `rrr::ops::<command>`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "rrr",
    version,
    about = "Mirror huge trees from a cascade of recentfiles (File::Rsync::Mirror::Recent successor)",
    after_help = rrr::manual::after_help("rrr")
)]
pub struct Cli {
    /// Pin the clock to EPOCH (tests and demos): every clock reading and every written file's mtime.
    #[arg(long, global = true, hide = true, value_name = "EPOCH")]
    pub now: Option<String>,

    /// Less output: no progress bars, only warnings and errors (-qq: errors only).
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub quiet: u8,

    /// More output: -v debug (every rsync command, idle passes), -vv trace. RUST_LOG, if set, wins.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Log lines on stderr as text or JSON Lines (one object per line).
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,

    /// Seconds to wait for a recentfile's lock (before the command; the commands that lock also take it).
    #[arg(long, hide = true, value_name = "SECONDS")]
    pub locktimeout: Option<u64>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Index an existing tree: write the principal and RECENT.recent.
    #[command(after_help = rrr::manual::after_help("init"))]
    Init(InitArgs),
    /// Record new/delete events in the principal (never aggregates).
    #[command(after_help = rrr::manual::after_help("update"))]
    Update(UpdateArgs),
    /// Cascade events from the principal into the larger recentfiles.
    #[command(after_help = rrr::manual::after_help("aggregate"))]
    Aggregate(AggregateArgs),
    /// List each path's newest event, newest first.
    #[command(after_help = rrr::manual::after_help("news"))]
    News(NewsArgs),
    /// Show the table of all recentfiles of a collection.
    #[command(after_help = rrr::manual::after_help("overview"))]
    Overview(OverviewArgs),
    /// Compare the index with the tree; --repair records the differences.
    #[command(after_help = rrr::manual::after_help("fsck"))]
    Fsck(FsckArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = rrr::manual::after_help("completions"))]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (rrr.1, rrr-<command>.1, and the Perl entry points' rrr-client.1, rrr-server.1) into DIR.
    #[command(after_help = rrr::manual::after_help("manpages"))]
    Manpages {
        /// The directory to write the pages into (created if missing), e.g. /usr/local/share/man/man1.
        dir: std::path::PathBuf,
    },
    /// Mirror a remote collection into a local tree (one pass, or --loop).
    #[command(after_help = rrr::manual::after_help("rmirror"))]
    Rmirror(RmirrorArgs),
    /// Show a mirror's run record (lag, heartbeat, counters).
    #[command(after_help = rrr::manual::after_help("status"))]
    Status(StatusArgs),
    /// Nagios-style check of a mirror's lag: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    #[command(after_help = rrr::manual::after_help("check"))]
    Check(CheckArgs),
    /// The origin daemon: watch the tree with inotify and record every change.
    #[command(after_help = rrr::manual::after_help("watch"))]
    Watch(WatchArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    #[command(flatten)]
    pub lock: LockArgs,
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

#[derive(Args, Debug)]
pub struct UpdateArgs {
    #[command(flatten)]
    pub lock: LockArgs,
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
    /// Behave as the Perl rrr-update: the disk is not consulted, a path
    /// outside the root is a warning, a future epoch becomes the clock, a
    /// delete needs the path in the collection.
    #[arg(long, hide = true)]
    pub perl: bool,
    /// With --perl: report the path's indexed event first (rrr-update --add).
    #[arg(long, hide = true, requires = "perl")]
    pub add: bool,
}

#[derive(Args, Debug)]
pub struct AggregateArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    /// Merge every file, whatever its age.
    #[arg(long, short)]
    pub force: bool,
    /// Keep delete events in Z (the reference's keep_delete_objects_forever).
    #[arg(long)]
    pub keep_deletes: bool,
    /// One JSON object: {"written": [intervals], "merges": N}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct NewsArgs {
    /// The principal (RECENT.recent, a recentfile, or the tree's root).
    #[arg(long, value_name = "PRINCIPAL", required_unless_present = "remote", conflicts_with = "remote")]
    pub local: Option<PathBuf>,
    /// A remote principal (rmirror's SRC forms): fetch its recentfiles, then list.
    #[arg(long, value_name = "SRC")]
    pub remote: Option<String>,
    /// With --remote: fetch into a hidden temp dir under DIR/.rrr instead of the system temp dir.
    #[arg(long, value_name = "DIR", requires = "remote")]
    pub localroot: Option<PathBuf>,
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
    /// Only the event with exactly this epoch.
    #[arg(long, value_name = "EPOCH")]
    pub contains_epoch: Option<String>,
    /// Only events of this type (new or delete).
    #[arg(long, value_name = "TYPE", value_parser = ["new", "delete"])]
    pub contains_type: Option<String>,
    /// JSON Lines: {"epoch","type","path"}.
    #[arg(long)]
    pub json: bool,
    /// The Perl rrr-news output (localtime and path).
    #[arg(long, hide = true)]
    pub perl_format: bool,
}

#[derive(Args, Debug)]
pub struct OverviewArgs {
    // `-v` (the global --verbose) adds the Dirtymark, Produced and Merged columns.
    /// The principal (default ./RECENT.recent).
    #[arg(default_value = "RECENT.recent")]
    pub principal: PathBuf,
    /// One JSON object per recentfile.
    #[arg(long)]
    pub json: bool,
    /// The Perl rrr-overview output (two empty lines for an empty collection).
    #[arg(long, hide = true)]
    pub perl_format: bool,
}

#[derive(Args, Debug)]
pub struct FsckArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    /// The principal (RECENT.recent or the principal recentfile) of the tree to check.
    pub principal: PathBuf,
    /// Record the differences as events at the current time.
    #[arg(long)]
    pub repair: bool,
    /// Leave out paths matching PATTERN, with rsync's --exclude rules
    /// (`*` within a component, `**` across, a trailing `/` for directories).
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// JSON Lines, one finding per line, then a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RmirrorArgs {
    /// The remote principal: rsync://HOST[:PORT]/MODULE/PATH/RECENT.recent,
    /// HOST::MODULE/PATH/RECENT.recent, HOST:PATH/RECENT.recent or a local path.
    #[arg(long, value_name = "SRC", required_unless_present = "config", requires = "localroot")]
    pub remote: Option<String>,
    /// The local tree.
    #[arg(long, value_name = "DIR", required_unless_present = "config")]
    pub localroot: Option<PathBuf>,
    /// Several trees from a TOML file ([[tree]] remote, localroot, options).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["remote", "localroot", "state"])]
    pub config: Option<PathBuf>,
    /// Run passes forever.
    #[arg(long = "loop")]
    pub looping: bool,
    /// Seconds between pass starts with --loop.
    #[arg(long, value_name = "SECONDS", default_value_t = 20.0)]
    pub interval: f64,
    /// Do not apply delete events.
    #[arg(long)]
    pub skip_deletes: bool,
    /// Apply at most N deletes in this run; the rest stays pending.
    #[arg(long, value_name = "N")]
    pub max_delete: Option<u64>,
    /// Paths per rsync call.
    #[arg(long, value_name = "N", default_value_t = 20000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_files_per_connection: u64,
    /// The state file (default <localroot>/.rrr/state.json).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Pass OPT to every rsync call (repeatable), e.g. --rsync-option=--bwlimit=1000.
    #[arg(long, value_name = "OPT", allow_hyphen_values = true)]
    pub rsync_option: Vec<String>,
    /// rsync --password-file (daemon sources).
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// List what would be transferred and deleted; change nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Reconcile once with a whole-tree rsync.
    #[arg(long)]
    pub full: bool,
    /// Make DIR a mirror of SRC although it is not one yet (not empty, no
    /// state, or another collection's state), deleting what SRC lacks.
    #[arg(long, conflicts_with = "config")]
    pub adopt: bool,
    /// Refuse a remote recentfile larger than this many bytes, unread.
    #[arg(long, value_name = "BYTES", default_value_t = rrr::remote::DEFAULT_MAX_RECENTFILE_SIZE)]
    pub max_recentfile_size: u64,
    /// Leave out paths matching PATTERN (rsync's --exclude rules): not
    /// transferred, deleted or republished; their events are skipped.
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// With --loop (or from cron): a whole-tree pass when the last one is
    /// older than DURATION (e.g. 7d, 1W), instead of a separate --full run.
    #[arg(long, value_name = "DURATION")]
    pub full_every: Option<String>,
    /// Run CMD through /bin/sh -c after every pass that changed something or
    /// failed, with the pass in RRR_* variables (README.mirror).
    #[arg(long, value_name = "CMD")]
    pub on_pass: Option<String>,
    /// Seconds an --on-pass hook may run before it is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub on_pass_timeout: f64,
    /// Rewrite this node-exporter textfile after every pass and heartbeat
    /// (one file per process: every tree of a --config goes into it).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// One JSON object per pass ({"kind":"pass",...}) on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Which mirror(s) `status` and `check` look at.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
pub struct TargetArgs {
    /// The mirror's local tree (state in DIR/.rrr/state.json).
    #[arg(long, value_name = "DIR")]
    pub localroot: Option<PathBuf>,
    /// A state file given to rmirror with --state.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Every tree of an rmirror config file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// One JSON object per mirror.
    #[arg(long)]
    pub json: bool,
    /// Also write a node-exporter textfile (atomically).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Lag in seconds from which the check warns.
    #[arg(long, value_name = "SECONDS")]
    pub warn: f64,
    /// Lag in seconds from which the check is critical.
    #[arg(long, value_name = "SECONDS")]
    pub crit: f64,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub lock: LockArgs,
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
}

/// An `--exclude` pattern that compiles (see `rrr::pattern`).
fn exclude_pattern(s: &str) -> Result<String, String> {
    rrr::pattern::Pattern::parse(s).map(|_| s.to_string())
}

/// `--locktimeout`, on the commands that take a recentfile's lock.
#[derive(Args, Debug, Clone, Copy)]
pub struct LockArgs {
    /// Seconds to wait for a recentfile's lock held by another process (then exit 75).
    #[arg(long, value_name = "SECONDS")]
    pub locktimeout: Option<u64>,
}

impl Command {
    /// The `--locktimeout` given after the command, if it takes one.
    pub fn locktimeout(&self) -> Option<u64> {
        match self {
            Command::Init(a) => a.lock.locktimeout,
            Command::Update(a) => a.lock.locktimeout,
            Command::Aggregate(a) => a.lock.locktimeout,
            Command::Fsck(a) => a.lock.locktimeout,
            Command::Watch(a) => a.lock.locktimeout,
            _ => None,
        }
    }
}
