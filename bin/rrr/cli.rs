//! The command line's global part: the flags every command takes, turned
//! once into the log's settings and the commands' [`Ctx`]. Each command's
//! own arguments live beside it in [`crate::commands`], the groups several
//! commands share in `commands::prelude` (which imports nothing from
//! here: the arrows run from this file down to the commands only).

use crate::commands::Command;
use clap::{Parser, ValueEnum};
use rrr::epoch::Epoch;
use rrr::ops::Ctx;
use rrr::origin::Writer;
use rrr::sys::clock::Clock;
use std::io::Write;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "rrr",
    version,
    about = "Mirror huge trees from a cascade of recentfiles (File::Rsync::Mirror::Recent successor)",
    after_help = rrr::output::manual::after_help("rrr")
)]
pub struct Cli {
    /// Pin the clock to EPOCH (tests and demos): every clock reading and every written file's mtime.
    #[arg(long, global = true, hide = true, value_name = "EPOCH")]
    pub now: Option<Epoch>,

    /// Less output: no progress bars, only warnings and errors (-qq: errors only).
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub quiet: u8,

    /// More output: -v debug (every rsync command, idle passes), -vv trace. RUST_LOG, if set, wins.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Log lines on stderr as text or JSON Lines (one object per line).
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text", value_enum)]
    pub log_format: LogFormat,

    /// Seconds to wait for a recentfile's lock (before the command; the commands that lock also take it).
    #[arg(long, hide = true, value_name = "SECONDS")]
    pub locktimeout: Option<u64>,

    #[command(subcommand)]
    pub command: Command,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

impl Cli {
    /// The log's level (`-v`/`-q`) and format (`watch --json-log` is
    /// `--log-format json`).
    pub fn log_settings(&self) -> rrr::output::log::Settings {
        let json = matches!(self.log_format, LogFormat::Json) || self.command.json_log();
        let format = if json { rrr::output::log::Format::Json } else { rrr::output::log::Format::Text };
        let verbosity = i8::try_from(i16::from(self.verbose) - i16::from(self.quiet)).unwrap_or(0);
        rrr::output::log::Settings { verbosity, format }
    }

    /// What every command gets from the global flags; results go to `out`.
    /// `beacon`: the origin writers' `--sign-key` and co., loaded at start.
    pub fn ctx<'a>(&self, out: &'a mut dyn Write, beacon: rrr::origin::beacon::BeaconSettings) -> Ctx<'a> {
        let writer = Writer {
            clock: self.now.clone().map_or_else(Clock::system, Clock::pinned),
            program: std::env::args().next().unwrap_or_else(|| "rrr".into()),
            lock_timeout: self
                .command
                .locktimeout()
                .or(self.locktimeout)
                .map_or(rrr::store::DEFAULT_LOCK_TIMEOUT, Duration::from_secs),
            beacon,
            hash: self.command.hash(),
        };
        Ctx::new(writer, rrr::output::progress::enabled(self.quiet > 0), self.verbose > 0, out)
    }
}

/// The subcommand a command line names: its first word that is neither a
/// global flag nor such a flag's value (for the status of a line clap
/// refused, which has no parsed command).
pub fn subcommand_of(mut args: impl Iterator<Item = String>) -> Option<String> {
    const WITH_VALUE: &[&str] = &["--now", "--log-format", "--locktimeout"];
    while let Some(a) = args.next() {
        if WITH_VALUE.contains(&a.as_str()) {
            args.next();
        } else if !a.starts_with('-') {
            return Some(a);
        }
    }
    None
}
