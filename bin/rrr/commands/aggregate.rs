//! `rrr aggregate`: its arguments and their conversion into `ops::aggregate::Options`.

use super::prelude::LockArgs;
use clap::Args;
use rrr::ops::aggregate::Options;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AggregateArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub beacon: super::prelude::BeaconArgs,
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

impl From<AggregateArgs> for Options {
    fn from(a: AggregateArgs) -> Options {
        Options { principal: a.principal, force: a.force, keep_deletes: a.keep_deletes, json: a.json }
    }
}
