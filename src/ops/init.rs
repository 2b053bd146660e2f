//! `rrr init`: index an existing tree. The engine, and what `--force`
//! guarantees while replacing an index, is [`crate::origin::index`].

use crate::ops::{Ctx, Exit};
use crate::origin::index::{index, Request};
use anyhow::Result;
use std::path::PathBuf;

/// What `rrr init` indexes and how the new collection is laid out.
pub struct Options {
    /// The tree to index.
    pub root: PathBuf,
    /// The principal's interval.
    pub interval: crate::interval::Interval,
    /// The larger intervals (a list that starts with the principal's own is accepted).
    pub aggregator: Vec<crate::interval::Interval>,
    /// YAML or JSON recentfiles.
    pub format: crate::recentfile::Format,
    /// The name prefix: `RECENT` gives `RECENT.recent` and `RECENT-1h.yaml`.
    pub filenameroot: String,
    /// Replace an existing collection (see the module docs).
    pub force: bool,
    /// Run the first aggregate at once.
    pub aggregate: bool,
    /// `--exclude` patterns (rsync's rules): paths left out of the index.
    pub excludes: Vec<String>,
    /// Print the report (principal, files, skipped, carried) as one JSON
    /// object instead of a log line.
    pub json: bool,
}

/// Index the tree; exit 1 when some files could not be indexed.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let request = Request {
        root: opts.root.clone(),
        interval: opts.interval.clone(),
        aggregator: opts.aggregator.clone(),
        format: opts.format,
        filenameroot: opts.filenameroot.clone(),
        force: opts.force,
        aggregate: opts.aggregate,
        excludes: opts.excludes.clone(),
    };
    let report = index(&request, &ctx.writer, ctx.progress)?;
    if opts.json {
        writeln!(ctx.out(), "{}", serde_json::to_string(&report)?)?;
    } else {
        tracing::info!(
            "indexed {} files into {}",
            crate::output::human::count(report.files as u64),
            report.principal.display()
        );
    }
    Ok(if report.skipped > 0 { Exit::Differences } else { Exit::Ok })
}
