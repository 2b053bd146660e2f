//! `rrr rmirror`: its arguments and their conversion into `ops::rmirror::Options`.
//! The per-tree options are `Option`s without clap defaults: an option
//! not given leaves the choice to the config file, then to the built-in
//! default (`rrr::config`), so the help states the defaults in words.

use crate::cli::exclude_pattern;
use clap::Args;
use rrr::config::{OptionLayer, TreeSpec};
use rrr::interval::Interval;
use rrr::ops::rmirror::{Options, Trees};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RmirrorArgs {
    /// The remote principal: rsync://HOST[:PORT]/MODULE/PATH/RECENT.recent,
    /// HOST::MODULE/PATH/RECENT.recent, HOST:PATH/RECENT.recent or a local path.
    #[arg(long, value_name = "SRC", required_unless_present = "config", requires = "localroot")]
    pub remote: Option<String>,
    /// The local tree.
    #[arg(long, value_name = "DIR", required_unless_present = "config")]
    pub localroot: Option<PathBuf>,
    /// Several trees from a TOML file ([[tree]] remote, localroot, options),
    /// each on its own thread; options given here win over the file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["remote", "localroot", "state"])]
    pub config: Option<PathBuf>,
    /// Run passes forever.
    #[arg(long = "loop")]
    pub looping: bool,
    /// Seconds between pass starts with --loop (default 20, at least 1).
    #[arg(long, value_name = "SECONDS", value_parser = loop_interval)]
    pub interval: Option<f64>,
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
    /// Paths per rsync call (default 20000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_files_per_connection: Option<u64>,
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
    /// Whole-tree passes (--full, --full-every, a bootstrap) compare files
    /// of the same size and mtime by content (rsync --checksum: reads
    /// every such file on both sides).
    #[arg(long)]
    pub checksum: bool,
    /// Make DIR a mirror of SRC although it is not one yet (not empty, no
    /// state, or another collection's state), deleting what SRC lacks.
    #[arg(long, conflicts_with = "config")]
    pub adopt: bool,
    /// End an rsync that moved no data and used no CPU for this many
    /// seconds (retried like any timeout; 0: never). rrr watches rsync
    /// itself: rsync's --timeout costs every connection to a default
    /// rsyncd 40 ms. Default 300.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Refuse a remote recentfile larger than this many bytes, unread
    /// (default 512 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_recentfile_size: Option<u64>,
    /// Leave out paths matching PATTERN (rsync's --exclude rules): not
    /// transferred, deleted or republished; their events are skipped.
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// With --loop (or from cron): a whole-tree pass when the last one is
    /// older than DURATION (e.g. 7d, 1W), instead of a separate --full run.
    #[arg(long, value_name = "DURATION", value_parser = full_every)]
    pub full_every: Option<String>,
    /// Run CMD through /bin/sh -c after every pass that changed something or
    /// failed, with the pass in RRR_* variables (README.mirror).
    #[arg(long, value_name = "CMD")]
    pub on_pass: Option<String>,
    /// Seconds an --on-pass hook may run before it is killed (default 600).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub on_pass_timeout: Option<f64>,
    /// Rewrite this node-exporter textfile after every pass and heartbeat
    /// (one file per process: every tree of a --config goes into it).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// One JSON object per pass ({"kind":"pass",...}) on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `--interval`: a number of seconds, at least 1 (a shorter loop hammers
/// the upstream).
fn loop_interval(s: &str) -> Result<f64, String> {
    let secs = seconds(s)?;
    if secs < rrr::config::MIN_INTERVAL {
        return Err(format!("must be at least {} s: a shorter loop hammers the upstream", rrr::config::MIN_INTERVAL));
    }
    Ok(secs)
}

/// A non-negative, finite number of seconds.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(secs) if secs >= 0.0 && secs.is_finite() => Ok(secs),
        _ => Err(format!("{s:?} is not a number of seconds")),
    }
}

/// `--full-every`: an interval spec (`7d`, `1W`), kept as typed.
fn full_every(s: &str) -> Result<String, rrr::interval::IntervalError> {
    Interval::parse(s).map(|_| s.to_string())
}

/// A list option given on the command line (empty: not given).
fn given<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

impl From<RmirrorArgs> for Options {
    fn from(a: RmirrorArgs) -> Options {
        let trees = match (a.config, a.remote, a.localroot) {
            (Some(file), _, _) => Trees::Config(file),
            (None, Some(remote), Some(localroot)) => Trees::One(TreeSpec { remote, localroot, state: a.state }),
            _ => unreachable!("clap requires --config or --remote with --localroot"),
        };
        Options {
            trees,
            options: OptionLayer {
                interval: a.interval,
                skip_deletes: a.skip_deletes.then_some(true),
                max_delete: a.max_delete,
                max_files_per_connection: a.max_files_per_connection,
                rsync_options: given(a.rsync_option),
                password_file: a.password_file,
                max_recentfile_size: a.max_recentfile_size,
                exclude: given(a.exclude),
                on_pass: a.on_pass,
                on_pass_timeout: a.on_pass_timeout,
                timeout: a.timeout,
                full_every: a.full_every,
                checksum: a.checksum.then_some(true),
            },
            looping: a.looping,
            accept_deletes: a.accept_deletes,
            dry_run: a.dry_run,
            full: a.full,
            adopt: a.adopt,
            prometheus: a.prometheus,
            json: a.json,
        }
    }
}
