//! `rrr status`: its arguments and their conversion into `ops::status::Options`.

use super::prelude::TargetArgs;
use clap::Args;
use rrr::ops::status::Options;
use std::path::PathBuf;

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

impl From<StatusArgs> for Options {
    fn from(a: StatusArgs) -> Options {
        Options { targets: a.target.into(), json: a.json, prometheus: a.prometheus }
    }
}
