//! `rrr verify`: its arguments and their conversion into `ops::verify::Options`.

use super::prelude::exclude_pattern;
use clap::Args;
use rrr::ops::verify::Options;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The mirror's root (holding RECENT.recent and its copies of the recentfiles).
    #[arg(long, value_name = "DIR")]
    pub localroot: PathBuf,
    /// Also read every present indexed file and compare its sha256 where the index records one.
    #[arg(long)]
    pub hash: bool,
    /// One JSON object: the counts and the lists.
    #[arg(long)]
    pub json: bool,
    /// Leave out paths matching PATTERN, with rsync's --exclude rules (the mirror's own --exclude).
    #[arg(long, value_name = "PATTERN", value_parser = exclude_pattern)]
    pub exclude: Vec<String>,
    /// Write the paths to fetch (missing and different) to FILE, each followed by a NUL byte,
    /// for `rsync --from0 --files-from=FILE`.
    #[arg(long, value_name = "FILE")]
    pub fetch_list: Option<PathBuf>,
}

impl From<VerifyArgs> for Options {
    fn from(a: VerifyArgs) -> Options {
        Options { localroot: a.localroot, hash: a.hash, json: a.json, excludes: a.exclude, fetch_list: a.fetch_list }
    }
}
