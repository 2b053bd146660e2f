//! `rrr overview`: its arguments and their conversion into `ops::overview::Options`.

use clap::Args;
use rrr::ops::overview::Options;
use std::path::PathBuf;

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

impl From<OverviewArgs> for Options {
    fn from(a: OverviewArgs) -> Options {
        Options { principal: a.principal, json: a.json, perl_format: a.perl_format }
    }
}
