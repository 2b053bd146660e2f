//! `rrr rmirror`: its arguments and their conversion into `ops::rmirror::Options`.

use crate::cli::exclude_pattern;
use clap::Args;
use rrr::interval::Interval;
use rrr::ops::rmirror::Options;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Let the next whole-tree pass of this run delete more than 10 % of
    /// the mirror's files (command line only).
    #[arg(long)]
    pub accept_deletes: bool,
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
    /// End an rsync that moved no data and used no CPU for this many
    /// seconds (retried like any timeout; 0: never). rrr watches rsync
    /// itself: rsync's --timeout costs every connection to a default
    /// rsyncd 40 ms.
    #[arg(long, value_name = "SECONDS", default_value_t = rrr::ops::rmirror::DEFAULT_TIMEOUT)]
    pub timeout: u64,
    /// Refuse a remote recentfile larger than this many bytes, unread.
    #[arg(long, value_name = "BYTES", default_value_t = rrr::mirror::remote::DEFAULT_MAX_RECENTFILE_SIZE)]
    pub max_recentfile_size: u64,
    /// Leave out paths matching PATTERN (rsync's --exclude rules): not
    /// transferred, deleted or republished; their events are skipped.
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// With --loop (or from cron): a whole-tree pass when the last one is
    /// older than DURATION (e.g. 7d, 1W), instead of a separate --full run.
    #[arg(long, value_name = "DURATION")]
    pub full_every: Option<Interval>,
    /// Run CMD through /bin/sh -c after every pass that changed something or
    /// failed, with the pass in RRR_* variables (README.mirror).
    #[arg(long, value_name = "CMD")]
    pub on_pass: Option<String>,
    /// Seconds an --on-pass hook may run before it is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = rrr::hook::DEFAULT_TIMEOUT.as_secs_f64())]
    pub on_pass_timeout: f64,
    /// Rewrite this node-exporter textfile after every pass and heartbeat
    /// (one file per process: every tree of a --config goes into it).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// One JSON object per pass ({"kind":"pass",...}) on stdout.
    #[arg(long)]
    pub json: bool,
}

impl From<RmirrorArgs> for Options {
    fn from(a: RmirrorArgs) -> Options {
        Options {
            config: a.config,
            remote: a.remote.unwrap_or_default(),
            localroot: a.localroot.unwrap_or_default(),
            looping: a.looping,
            interval: a.interval,
            skip_deletes: a.skip_deletes,
            max_delete: a.max_delete,
            accept_deletes: a.accept_deletes,
            max_files_per_connection: usize::try_from(a.max_files_per_connection).unwrap_or(usize::MAX),
            state: a.state,
            rsync_options: a.rsync_option,
            password_file: a.password_file,
            dry_run: a.dry_run,
            full: a.full,
            adopt: a.adopt,
            max_recentfile_size: a.max_recentfile_size,
            timeout: a.timeout,
            full_every: a.full_every.map(|iv| iv.seconds() as f64),
            excludes: a.exclude,
            on_pass: a.on_pass,
            on_pass_timeout: Duration::from_secs_f64(a.on_pass_timeout.max(0.0)),
            prometheus: a.prometheus,
            json: a.json,
        }
    }
}
