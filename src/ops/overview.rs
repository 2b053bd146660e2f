//! `rrr overview`: the reference's table of all recentfiles, each interval
//! once; `--json` gives one object per recentfile.

use crate::collection::Collection;
use crate::query::{overview_table, FileSummary};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

pub struct Options {
    pub principal: PathBuf,
    pub verbose: bool,
    pub json: bool,
}

pub fn summaries(coll: &Collection) -> Result<Vec<FileSummary>> {
    let mut rows = Vec::new();
    for iv in &coll.intervals {
        if let Some(rf) = coll.read(iv)? {
            rows.push(FileSummary::of(iv, &rf));
        }
    }
    Ok(rows)
}

pub fn run(opts: &Options, out: &mut dyn Write) -> Result<()> {
    let coll = Collection::open(&opts.principal)?;
    let rows = summaries(&coll)?;
    if opts.json {
        for r in &rows {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
    } else {
        out.write_all(overview_table(&rows, opts.verbose).as_bytes())?;
    }
    Ok(())
}
