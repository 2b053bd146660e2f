//! `rrr fsck`: its arguments and their conversion into `ops::fsck::Options`.

use super::prelude::{exclude_pattern, LockArgs};
use clap::Args;
use rrr::ops::fsck::Options;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct FsckArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub beacon: super::prelude::BeaconArgs,
    #[command(flatten)]
    pub hashing: super::prelude::HashArgs,
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

impl From<FsckArgs> for Options {
    fn from(a: FsckArgs) -> Options {
        Options { principal: a.principal, repair: a.repair, excludes: a.exclude, json: a.json }
    }
}
