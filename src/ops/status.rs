//! `rrr status`: each mirror's run record (lag, heartbeat, counters), as
//! a person reads it or one JSON object per mirror, and optionally a
//! node-exporter textfile (written atomically, as its textfile collector
//! requires). Exit 1 when a target has no state yet (never tried).

use crate::mirror::health;
use crate::mirror::targets::{reports, Targets};
use crate::mirror::textfile::Prometheus;
use crate::ops::{Ctx, Exit};
use anyhow::Result;
use std::path::PathBuf;

/// What `rrr status` was asked to show.
pub struct Options {
    /// The trees whose state is read.
    pub targets: Targets,
    /// One JSON object per tree instead of the text for people.
    pub json: bool,
    /// Also write this node-exporter textfile.
    pub prometheus: Option<PathBuf>,
}

/// Print each target's run record; [`Exit::Differences`] when one has no
/// state yet.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let clock = ctx.clock();
    let all = reports(&opts.targets, clock)?;
    let mut out = ctx.out();
    let mut missing = false;
    for (root, r) in &all {
        match r {
            Some(r) if opts.json => writeln!(out, "{}", serde_json::to_string(r)?)?,
            Some(r) => write!(out, "{}", health::plain(r, clock.now_f64()))?,
            None => {
                missing = true;
                if opts.json {
                    // The keys an alert reads are there, saying "never tried".
                    let never = serde_json::json!({"localroot": root, "state": null, "attempts": 0,
                        "last_attempt": null, "last_outcome": null, "last_success": null,
                        "last_error": null, "last_error_time": null, "consecutive_failures": 0});
                    writeln!(out, "{never}")?;
                } else {
                    writeln!(
                        out,
                        "localroot        {root}\nstate            none: never tried (rmirror has not run here)"
                    )?;
                }
            }
        }
    }
    if let Some(file) = &opts.prometheus {
        Prometheus { file: file.clone(), targets: opts.targets.clone() }.try_write(clock)?;
    }
    Ok(if missing { Exit::Differences } else { Exit::Ok })
}
