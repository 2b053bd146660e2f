//! `rrr check`: its arguments and their conversion into `ops::check::Options`.

use super::prelude::TargetArgs;
use clap::Args;
use rrr::ops::check::Options;

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

impl From<CheckArgs> for Options {
    fn from(a: CheckArgs) -> Options {
        Options { targets: a.target.into(), warn: a.warn, crit: a.crit }
    }
}
