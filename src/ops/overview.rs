//! `rrr overview`: the reference's table of all recentfiles, each interval
//! once (`-v` adds the Dirtymark, Produced and Merged columns); `--json`
//! gives one object per recentfile.

use crate::collection::Collection;
use crate::ops::{Ctx, Exit};
use crate::query::{overview_table, FileSummary};
use crate::store;
use anyhow::Result;
use std::path::PathBuf;

/// Which collection `rrr overview` shows, and how.
pub struct Options {
    /// The principal (default ./RECENT.recent).
    pub principal: PathBuf,
    /// One JSON object per recentfile.
    pub json: bool,
    /// The Perl tool's output: an empty collection is two empty lines.
    pub perl_format: bool,
}

/// One row per existing file. Reads only meta, count, newest and oldest
/// ([`store::read_outline`]): a Z file's million events are checked as
/// they stream by, never kept.
pub(crate) fn summaries(coll: &Collection) -> Result<Vec<FileSummary>> {
    let mut rows = Vec::new();
    for iv in &coll.intervals {
        if let Some(o) = store::read_outline(&coll.path_of(iv))? {
            rows.push(FileSummary::from_outline(iv, &o));
        }
    }
    Ok(rows)
}

/// Print the table (or the JSON objects) of the collection's files.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let coll = Collection::open(&opts.principal)?;
    let rows = summaries(&coll)?;
    let mut out = ctx.out();
    if opts.json {
        for r in &rows {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
    } else {
        let table = overview_table(&rows, ctx.verbose);
        if table.trim().is_empty() && !opts.perl_format {
            writeln!(out, "{}: no events yet (no recentfile of this collection lists any)", opts.principal.display())?;
        } else {
            out.write_all(table.as_bytes())?;
        }
    }
    Ok(Exit::Ok)
}
