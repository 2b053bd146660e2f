//! `rrr beacon`: its arguments and their conversion into `ops::beacon::Options`.

use super::prelude::{BeaconArgs, LockArgs};
use clap::Args;
use rrr::ops::beacon::Options;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BeaconCmdArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub beacon: BeaconArgs,
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    #[command(flatten)]
    pub traces: super::prelude::OriginTraceArgs,
}

impl From<BeaconCmdArgs> for Options {
    fn from(a: BeaconCmdArgs) -> Options {
        Options { principal: a.principal, traces: a.traces.files() }
    }
}
