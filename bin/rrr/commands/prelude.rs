//! The argument groups several commands share (cargo's
//! `commands/mod.rs` prelude): `--locktimeout`, which mirror(s) `status`
//! and `check` look at, and an `--exclude` pattern's check. The command
//! files import them from here, not from `crate::cli`, so the commands
//! and the global command line form no circle.

use clap::Args;
use rrr::mirror::targets::Targets;
use std::path::PathBuf;

/// An `--exclude` pattern that compiles (see `rrr::pattern`).
pub fn exclude_pattern(s: &str) -> Result<String, String> {
    rrr::pattern::Pattern::parse(s).map(|_| s.to_string())
}

/// `--locktimeout`, on the commands that take a recentfile's lock.
#[derive(Args, Debug, Clone, Copy)]
pub struct LockArgs {
    /// Seconds to wait for a recentfile's lock held by another process (then exit 75).
    #[arg(long, value_name = "SECONDS")]
    pub locktimeout: Option<u64>,
}

/// Where the beacon options stand in `--help`.
const BEACON_HEADING: &str = "Beacon (the signed index)";

/// The beacon options of every origin writer (init, update, aggregate,
/// fsck --repair, watch, beacon): docs/decisions.md#the-signed-beacon.
#[derive(Args, Debug, Clone, Default)]
pub struct BeaconArgs {
    /// Sign the beacon RECENT-1h.yaml.beacon.json with this OpenSSH ed25519 private key (no passphrase; SSHSIG, namespace rrr).
    #[arg(help_heading = BEACON_HEADING, long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// The origin's name in the beacon (default: the beacon's, else the host name).
    #[arg(help_heading = BEACON_HEADING, long, value_name = "NAME")]
    pub origin_name: Option<String>,
    /// Seconds between beacon refreshes that watch promises (and writes) (default: the beacon's, else 60).
    #[arg(help_heading = BEACON_HEADING, long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub beacon_interval: Option<u64>,
    /// Write a once-signed collection's beacon unsigned (mirrors with --trust-key then refuse it).
    #[arg(help_heading = BEACON_HEADING, long, conflicts_with = "sign_key")]
    pub unsign: bool,
}

impl BeaconArgs {
    /// The settings, the key loaded and checked now (an error names the file: exit 2 before any work).
    pub fn settings(&self) -> anyhow::Result<rrr::origin::beacon::BeaconSettings> {
        Ok(rrr::origin::beacon::BeaconSettings {
            sign: self.sign_key.as_deref().map(rrr::trust::SignKey::load).transpose()?,
            origin_name: self.origin_name.clone(),
            interval: self.beacon_interval,
            unsign: self.unsign,
        })
    }
}

/// `--hash` on the writers that record new files (init, update, fsck,
/// watch): rrr::origin::hashing.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct HashArgs {
    /// Record each new file's size and sha256 in its event: `sha256` turns it on for the collection (kept in
    /// the principal's meta, so later writers go on without the flag), `none` turns it off.
    #[arg(long, value_name = "ALGORITHM", value_enum)]
    pub hash: Option<HashArg>,
}

/// The values of `--hash` (without doc comments on the variants: clap
/// would turn every help page that shows them into its long form).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashArg {
    // Record size and sha256.
    Sha256,
    // Record neither, and stop the collection's hashing.
    None,
}

impl HashArgs {
    /// The writer's choice.
    pub fn choice(&self) -> Option<rrr::origin::hashing::HashChoice> {
        self.hash.map(|h| match h {
            HashArg::Sha256 => rrr::origin::hashing::HashChoice::Sha256,
            HashArg::None => rrr::origin::hashing::HashChoice::None,
        })
    }
}

/// Where the origin's trace options stand in `--help`.
const TRACE_HEADING: &str = "Traces (ftpsync, mirmon)";

/// The origin's trace files (watch, beacon): the master trace and the
/// epoch-first timestamp file, rrr's own (never recorded).
#[derive(Args, Debug, Clone, Default)]
pub struct OriginTraceArgs {
    /// Write the ftpsync master trace DIR/master (relative to the root, e.g. project/trace) with each beacon refresh; rrr's own: never recorded.
    #[arg(help_heading = TRACE_HEADING, long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
    /// Write FILE (relative to the root, e.g. indices/timestamp.txt), the origin's time epoch first (mirmon, mirrorbits), with each beacon refresh; never recorded.
    #[arg(help_heading = TRACE_HEADING, long, value_name = "FILE")]
    pub timestamp: Option<PathBuf>,
}

impl OriginTraceArgs {
    /// The library's form.
    pub fn files(&self) -> rrr::monitor::trace_write::OriginFiles {
        rrr::monitor::trace_write::OriginFiles { trace: self.trace.clone(), timestamp: self.timestamp.clone() }
    }
}

/// Which mirror(s) `status` and `check` look at.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
pub struct TargetArgs {
    /// The mirror's local tree (state in DIR/.rrr/state.json).
    #[arg(long, value_name = "DIR")]
    pub localroot: Option<PathBuf>,
    /// A state file given to rmirror with --state.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Every tree of an rmirror config file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl From<TargetArgs> for Targets {
    fn from(t: TargetArgs) -> Targets {
        match (t.localroot, t.state, t.config) {
            (Some(r), _, _) => Targets::Localroot(r),
            (_, Some(s), _) => Targets::State(s),
            (_, _, Some(c)) => Targets::Config(c),
            _ => unreachable!("clap requires one of --localroot, --state, --config"),
        }
    }
}
