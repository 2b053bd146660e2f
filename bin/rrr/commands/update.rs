//! `rrr update`: its arguments and their conversion into `ops::update::Options`.

use super::prelude::LockArgs;
use clap::Args;
use rrr::epoch::Epoch;
use rrr::ops::update::Options;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct UpdateArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub beacon: super::prelude::BeaconArgs,
    #[command(flatten)]
    pub hashing: super::prelude::HashArgs,
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    /// Files, relative to the root or absolute inside it (any bytes).
    pub paths: Vec<OsString>,
    /// Record deletes instead of news.
    #[arg(long)]
    pub delete: bool,
    /// A dirty update: the event happened at EPOCH (in the past).
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<Epoch>,
    /// Read `[EPOCH] new|delete PATH` lines from stdin (one batch, one lock).
    #[arg(long)]
    pub stdin: bool,
    /// As --stdin, but each `[EPOCH] new|delete PATH` record ends with a NUL
    /// byte instead of a newline (`find -print0`), so that a name may hold
    /// a newline.
    #[arg(long, conflicts_with = "stdin")]
    pub stdin0: bool,
    /// Behave as the Perl rrr-update: the disk is not consulted, a path
    /// outside the root is a warning, a future epoch becomes the clock, a
    /// delete needs the path in the collection.
    #[arg(long, hide = true)]
    pub perl: bool,
    /// With --perl: report the path's indexed event first (rrr-update --add).
    #[arg(long, hide = true, requires = "perl")]
    pub add: bool,
}

impl From<UpdateArgs> for Options {
    fn from(a: UpdateArgs) -> Options {
        Options {
            principal: a.principal,
            paths: a.paths,
            delete: a.delete,
            epoch: a.epoch,
            stdin: a.stdin || a.stdin0,
            stdin_nul: a.stdin0,
            perl: a.perl,
            add: a.add,
        }
    }
}
