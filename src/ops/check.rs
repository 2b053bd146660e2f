//! `rrr check`: a Nagios-style check of mirrors' lag. One line per
//! target, the worst first (Nagios shows the first line); the worst level
//! is the exit status (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).

use crate::mirror::status::{self, Level};
use crate::ops::mirrors::{reports, Targets};
use crate::ops::{Ctx, Exit};
use anyhow::Result;

/// What `rrr check` was asked to check.
pub struct Options {
    /// The trees whose lag is checked.
    pub targets: Targets,
    /// Lag in seconds from which the check warns.
    pub warn: f64,
    /// Lag in seconds from which the check is critical.
    pub crit: f64,
}

/// Print one Nagios line per target, the worst first; the worst level is
/// the exit status.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let mut lines: Vec<(Level, String)> = reports(&opts.targets, ctx.clock())?
        .iter()
        .map(|(root, r)| status::check(root, r.as_ref(), opts.warn, opts.crit))
        .collect();
    lines.sort_by_key(|(level, _)| std::cmp::Reverse(*level as i32));
    let mut out = ctx.out();
    for (_, line) in &lines {
        writeln!(out, "{line}")?;
    }
    Ok(lines.first().map_or(Level::Ok, |(level, _)| *level).into())
}

/// A Nagios level as the exit status: the same number.
impl From<Level> for Exit {
    fn from(level: Level) -> Exit {
        match level {
            Level::Ok => Exit::Ok,
            Level::Warning => Exit::Differences,
            Level::Critical => Exit::Error,
            Level::Unknown => Exit::Unknown,
        }
    }
}
