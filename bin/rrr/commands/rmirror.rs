//! `rrr rmirror`: its arguments and their conversion into `ops::rmirror::Options`.
//! The per-tree options are `rrr::mirror::options::OptionLayer`, flattened
//! here: declared once there as clap argument, config key and typed
//! setting. This file holds what is not per tree: which trees, and the
//! run's own flags.

use clap::Args;
use rrr::mirror::options::{CommandLine, TreeSpec};
use rrr::ops::rmirror::{Options, Trees};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RmirrorArgs {
    /// The remote principal: rsync://HOST[:PORT]/MODULE/PATH/RECENT.recent,
    /// HOST::MODULE/PATH/RECENT.recent, HOST:PATH/RECENT.recent or a local path.
    /// Repeat it for several upstreams of the same collection: each pass
    /// uses the freshest that answers, never one behind this mirror.
    #[arg(long, value_name = "SRC", required_unless_present = "config", requires = "localroot")]
    pub remote: Vec<String>,
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
    /// Let the next whole-tree pass of this run delete more than 10 % of
    /// the mirror's files (command line only).
    #[arg(long)]
    pub accept_deletes: bool,
    /// The state file (default <localroot>/.rrr/state.json).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
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
    /// Rewrite this node-exporter textfile after every pass and heartbeat
    /// (one file per process: every tree of a --config goes into it).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// With --loop: serve the textfile's metrics of every tree of the run
    /// over HTTP at http://ADDR:PORT/metrics (e.g. 127.0.0.1:9106), rendered
    /// on each scrape; a taken address exits 2 at start.
    #[arg(long, value_name = "ADDR:PORT", requires = "looping")]
    pub metrics_listen: Option<String>,
    /// One JSON object per pass ({"kind":"pass",...}) on stdout.
    #[arg(long)]
    pub json: bool,
    /// The per-tree options (also the keys of a --config file).
    #[command(flatten)]
    pub options: CommandLine,
}

impl From<RmirrorArgs> for Options {
    fn from(a: RmirrorArgs) -> Options {
        let trees = match (a.config, a.remote, a.localroot) {
            (Some(file), _, _) => Trees::Config(file),
            (None, mut remotes, Some(localroot)) if !remotes.is_empty() => {
                let remote = remotes.remove(0);
                Trees::One(TreeSpec { remote, more_remotes: remotes, localroot, state: a.state })
            }
            _ => unreachable!("clap requires --config or --remote with --localroot"),
        };
        Options {
            trees,
            options: a.options.0,
            looping: a.looping,
            accept_deletes: a.accept_deletes,
            dry_run: a.dry_run,
            full: a.full,
            adopt: a.adopt,
            prometheus: a.prometheus,
            metrics_listen: a.metrics_listen,
            json: a.json,
        }
    }
}
