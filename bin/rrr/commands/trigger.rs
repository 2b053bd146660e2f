//! `rrr trigger`: its arguments and their conversion into `ops::trigger::Options`.

use clap::Args;
use rrr::ops::trigger::{Options, Target};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["localroot", "config"]))]
pub struct TriggerArgs {
    /// The tree whose running rmirror --loop should pass now.
    #[arg(long, value_name = "DIR")]
    pub localroot: Option<PathBuf>,
    /// Every tree of an rmirror config file (or the one named by --tree).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With --config: only the tree with this localroot.
    #[arg(long, value_name = "LOCALROOT", requires = "config")]
    pub tree: Option<PathBuf>,
    /// One JSON object per tree.
    #[arg(long)]
    pub json: bool,
}

impl From<TriggerArgs> for Options {
    fn from(a: TriggerArgs) -> Options {
        let target = match (a.localroot, a.config) {
            (Some(r), _) => Target::Localroot(r),
            (None, Some(file)) => Target::Config { file, tree: a.tree },
            (None, None) => unreachable!("clap requires --localroot or --config"),
        };
        Options { target, json: a.json }
    }
}
