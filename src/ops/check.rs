//! `rrr check`: a Nagios-style check of mirrors' lag. One line per
//! target, the worst first (Nagios shows the first line); the worst level
//! is the exit status (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN: a tree never
//! tried, or a usage error, as Nagios plugins report those).

use crate::mirror::health::{self, Level};
use crate::mirror::targets::{reports, Targets};
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
    if let Some(why) = usage_error(opts.warn, opts.crit) {
        // A plugin's usage error is UNKNOWN (3), said on stdout as Nagios reads it.
        writeln!(ctx.out(), "RRR UNKNOWN - usage: {why}")?;
        return Ok(Exit::Unknown);
    }
    let mut lines: Vec<(Level, String)> = reports(&opts.targets, ctx.clock())?
        .iter()
        .map(|(root, r)| health::check(root, r.as_ref(), opts.warn, opts.crit))
        .collect();
    // Stable: trees of one level keep their order.
    lines.sort_by_key(|(level, _)| std::cmp::Reverse(level.severity()));
    let mut out = ctx.out();
    for (_, line) in &lines {
        writeln!(out, "{line}")?;
    }
    Ok(lines.first().map_or(Level::Ok, |(level, _)| *level).into())
}

/// Why `--warn`/`--crit` cannot be used, if they cannot: each a
/// non-negative number of seconds, `--warn` not above `--crit`.
fn usage_error(warn: f64, crit: f64) -> Option<String> {
    if !(warn.is_finite() && warn >= 0.0) {
        Some(format!("--warn {warn} is not a number of seconds"))
    } else if !(crit.is_finite() && crit >= 0.0) {
        Some(format!("--crit {crit} is not a number of seconds"))
    } else if warn > crit {
        Some(format!("--warn {warn} is above --crit {crit}"))
    } else {
        None
    }
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
