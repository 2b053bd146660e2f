//! `rrr beacon`: rewrite the origin's beacon `RECENT-1h.yaml.beacon.json` (and its
//! signature) now, with the origin's time, newest epoch and dirtymark
//! (`origin::beacon::refresh`). For origins that record with `update` from
//! cron; `rrr watch` refreshes it by itself every beacon interval. With
//! `--trace DIR` / `--timestamp FILE` the origin's master trace and
//! timestamp file are written with it.

use crate::collection::Collection;
use crate::monitor::trace_write::OriginFiles;
use crate::ops::{Ctx, Exit};
use anyhow::Result;
use std::path::PathBuf;

/// What `rrr beacon` refreshes (the key and names are the writer's `beacon` settings).
pub struct Options {
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    /// `--trace DIR`, `--timestamp FILE`: written with the beacon.
    pub traces: OriginFiles,
}

/// Refresh the beacon once.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    crate::sys::signals::install_for_short_command();
    let coll = Collection::open(&opts.principal)?;
    crate::origin::beacon::refresh(&coll, &ctx.writer)?;
    opts.traces.write(&coll, ctx.writer.clock.now_f64().floor() as i64)?;
    Ok(Exit::Ok)
}
