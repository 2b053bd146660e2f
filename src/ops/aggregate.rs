//! `rrr aggregate`: runs the cascade from the principal into the larger
//! files once (`origin::aggregate`, protocol.md 10) and, with
//! `--json`, prints what it wrote.

use crate::collection::Collection;
use crate::ops::{Ctx, Exit};
use crate::origin::aggregate::aggregate;
use anyhow::Result;
use std::path::PathBuf;

/// What `rrr aggregate` merges.
pub struct Options {
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    /// Merge every file, whatever its age.
    pub force: bool,
    /// Keep delete events in Z (the reference's keep_delete_objects_forever).
    pub keep_deletes: bool,
    /// Print `{"written": [intervals], "merges": N}` as one JSON object.
    pub json: bool,
}

/// Run the cascade once (see the module docs).
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    crate::sys::signals::install_for_short_command();
    let coll = Collection::open(&opts.principal)?;
    crate::origin::beacon::check_start(&coll, &ctx.writer)?;
    let mut report = aggregate(&coll, opts.force, opts.keep_deletes, &ctx.writer)?;
    if opts.json {
        writeln!(ctx.out(), "{}", serde_json::to_string(&report)?)?;
    }
    if let Some(r) = report.rerecorded.take() {
        r.journal_result()?;
    }
    Ok(Exit::Ok)
}
