//! One module per subcommand (cargo's `src/bin/cargo/commands/`): its
//! clap arguments and their conversion, done once, into the options of
//! `rrr::ops::<command>`, whose `run` does the work and prints the
//! results. This file is the list of commands and the dispatch.

mod aggregate;
mod beacon;
mod check;
mod completions;
mod fsck;
mod init;
mod manpages;
mod news;
mod overview;
mod prelude;
mod probe;
mod rmirror;
mod status;
mod trigger;
mod update;
mod verify;
mod watch;

use anyhow::Result;
use clap::Subcommand;
use rrr::ops::{self, Ctx, Exit};

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Index an existing tree: write the principal and RECENT.recent.
    #[command(after_help = rrr::output::manual::after_help("init"))]
    Init(init::InitArgs),
    /// Record new/delete events in the principal (never aggregates).
    #[command(after_help = rrr::output::manual::after_help("update"))]
    Update(update::UpdateArgs),
    /// Cascade events from the principal into the larger recentfiles.
    #[command(after_help = rrr::output::manual::after_help("aggregate"))]
    Aggregate(aggregate::AggregateArgs),
    /// List each path's newest event, newest first.
    #[command(after_help = rrr::output::manual::after_help("news"))]
    News(news::NewsArgs),
    /// Show the table of all recentfiles of a collection.
    #[command(after_help = rrr::output::manual::after_help("overview"))]
    Overview(overview::OverviewArgs),
    /// Compare the index with the tree; --repair records the differences.
    #[command(after_help = rrr::output::manual::after_help("fsck"))]
    Fsck(fsck::FsckArgs),
    /// Is my mirror complete? The tree against its recentfiles: missing, different and unknown files.
    #[command(after_help = rrr::output::manual::after_help("verify"))]
    Verify(verify::VerifyArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = rrr::output::manual::after_help("completions"))]
    Completions(completions::CompletionsArgs),
    /// Write man pages (rrr.1, rrr-<command>.1, and the Perl entry points' rrr-client.1, rrr-server.1) into DIR.
    #[command(after_help = rrr::output::manual::after_help("manpages"))]
    Manpages(manpages::ManpagesArgs),
    /// Mirror a remote collection into a local tree (one pass, or --loop).
    #[command(after_help = rrr::output::manual::after_help("rmirror"))]
    Rmirror(Box<rmirror::RmirrorArgs>),
    /// Show a mirror's run record (lag, heartbeat, counters).
    #[command(after_help = rrr::output::manual::after_help("status"))]
    Status(status::StatusArgs),
    /// Nagios-style check of a mirror's lag: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    #[command(after_help = rrr::output::manual::after_help("check"))]
    Check(check::CheckArgs),
    /// Wake the running rmirror --loop of a tree: it passes now (push). Exit 3 when none runs.
    #[command(after_help = rrr::output::manual::after_help("trigger"))]
    Trigger(trigger::TriggerArgs),
    /// How fresh are these mirrors, measured from the origin (their traces): exit 0 fresh, 1 stale, 3 unreachable.
    #[command(after_help = rrr::output::manual::after_help("probe"))]
    Probe(probe::ProbeArgs),
    /// The origin daemon: watch the tree with inotify and record every change.
    #[command(after_help = rrr::output::manual::after_help("watch"))]
    Watch(watch::WatchArgs),
    /// Rewrite the origin's beacon RECENT-1h.yaml.beacon.json now (signed with --sign-key): for origins that record from cron.
    #[command(after_help = rrr::output::manual::after_help("beacon"))]
    Beacon(beacon::BeaconCmdArgs),
}

impl Command {
    /// Run the command: its arguments become `ops::<command>::Options`.
    /// `whole` builds the whole command line (`crate::cli::Cli`'s), which
    /// `completions` and `manpages` describe: given by the caller, so no
    /// command file imports `crate::cli`.
    pub fn exec(self, ctx: &Ctx, whole: fn() -> clap::Command) -> Result<Exit> {
        match self {
            Command::Init(a) => ops::init::run(&a.into(), ctx),
            Command::Update(a) => ops::update::run(&a.into(), ctx),
            Command::Aggregate(a) => ops::aggregate::run(&a.into(), ctx),
            Command::News(a) => ops::news::run(&a.into(), ctx),
            Command::Overview(a) => ops::overview::run(&a.into(), ctx),
            Command::Fsck(a) => ops::fsck::run(&a.into(), ctx),
            Command::Verify(a) => ops::verify::run(&a.into(), ctx),
            Command::Completions(a) => completions::exec(&a, ctx, whole()),
            Command::Manpages(a) => manpages::exec(&a, whole()),
            Command::Rmirror(a) => ops::rmirror::run(&(*a).into(), ctx),
            Command::Status(a) => ops::status::run(&a.into(), ctx),
            Command::Check(a) => ops::check::run(&a.into(), ctx),
            Command::Trigger(a) => ops::trigger::run(&a.into(), ctx),
            Command::Probe(a) => ops::probe::run(&a.into(), ctx),
            Command::Watch(a) => ops::watch::run(&a.into(), ctx),
            Command::Beacon(a) => ops::beacon::run(&a.into(), ctx),
        }
    }

    /// The `--locktimeout` given after the command, if it takes one.
    pub fn locktimeout(&self) -> Option<u64> {
        match self {
            Command::Init(a) => a.lock.locktimeout,
            Command::Update(a) => a.lock.locktimeout,
            Command::Aggregate(a) => a.lock.locktimeout,
            Command::Fsck(a) => a.lock.locktimeout,
            Command::Watch(a) => a.lock.locktimeout,
            Command::Beacon(a) => a.lock.locktimeout,
            _ => None,
        }
    }

    /// The beacon options of an origin writer.
    pub fn beacon(&self) -> Option<&prelude::BeaconArgs> {
        match self {
            Command::Init(a) => Some(&a.beacon),
            Command::Update(a) => Some(&a.beacon),
            Command::Aggregate(a) => Some(&a.beacon),
            Command::Fsck(a) => Some(&a.beacon),
            Command::Watch(a) => Some(&a.beacon),
            Command::Beacon(a) => Some(&a.beacon),
            _ => None,
        }
    }

    /// `--hash` of a writer that records new files.
    pub fn hash(&self) -> Option<rrr::origin::hashing::HashChoice> {
        match self {
            Command::Init(a) => a.hashing.choice(),
            Command::Update(a) => a.hashing.choice(),
            Command::Fsck(a) => a.hashing.choice(),
            Command::Watch(a) => a.hashing.choice(),
            _ => None,
        }
    }

    /// `watch --json-log`: the log in JSON Lines.
    pub fn json_log(&self) -> bool {
        matches!(self, Command::Watch(a) if a.json_log)
    }
}
