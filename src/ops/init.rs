//! `rrr init`: index an existing tree. Like the reference's rrr-init (spec
//! 13), it writes only the principal, holding every file with its mtime as
//! a dirty epoch (`<mtime>.0`), plus `RECENT.recent`; the cascade into the
//! larger files is the first aggregate's job (`--aggregate` runs it now).
//!
//! `--force` replaces an index without a moment in which there is none:
//! the new principal is built under an ignored name (`.rrr/init-<pid>.*`)
//! while the old index stays in place; then, holding every lock (smallest
//! first) and with signals deferred, it is renamed over the old principal
//! and the larger files it replaces are removed. Events that `update`
//! recorded in the old principal during the walk are carried over. A
//! running `watch` (its `.rrr/watch.flock`) makes init refuse with exit 75.

use crate::ops::{Ctx, Exit};
use crate::origin::index::index;
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
    let report = index(opts, &ctx.writer, ctx.progress)?;
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
