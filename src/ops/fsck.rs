//! `rrr fsck`: compare the index with the tree, and check the collection
//! itself (readability, order, overlap between adjacent files, meta).
//! `--repair` records the differences as ordinary events at the current
//! time (not the file mtime: old mtimes would bloat the small files and a
//! dirty insert would force every mirror to resync), so the dirtymark does
//! not move. The engine is [`crate::origin::index_check`].

use crate::ops::{Ctx, Exit};
use crate::origin::index_check::check;
use anyhow::Result;
use std::path::PathBuf;

/// What `rrr fsck` checks, and whether it repairs.
pub struct Options {
    /// The principal (RECENT.recent or the principal recentfile) of the tree.
    pub principal: PathBuf,
    /// Record the differences as events at the current time.
    pub repair: bool,
    /// `--exclude` patterns (rsync's rules): paths the index must not cover.
    pub excludes: Vec<String>,
    /// JSON Lines: one object per finding, then the summary.
    pub json: bool,
}

/// Check (and with `--repair` record the differences), print the findings
/// and the summary; [`Exit::Differences`] when anything but files left
/// out in flight (`not_indexed`) was found.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let report = check(&opts.principal, &opts.excludes, opts.repair, &ctx.writer)?;
    let mut out = ctx.out();
    let not_indexed = report.findings.iter().filter(|f| !f.is_difference()).count();
    for f in &report.findings {
        if opts.json {
            writeln!(out, "{}", serde_json::to_string(f)?)?;
        } else {
            writeln!(out, "{}", f.line())?;
        }
    }
    if opts.json {
        let summary = serde_json::json!({
            "kind": "summary", "disk_files": report.disk_files, "index_files": report.index_files,
            "findings": report.findings.len(), "repaired": report.repaired, "rerecorded": report.rerecorded,
            "not_indexed": not_indexed,
        });
        writeln!(out, "{summary}")?;
    } else {
        tracing::info!(
            "fsck: {} files on disk, {} in the index, {} findings, {} repaired; {} acknowledged events re-recorded so far",
            report.disk_files,
            report.index_files,
            report.findings.len(),
            report.repaired,
            report.rerecorded
        );
    }
    if let Some(why) = &report.repair_refused {
        out.flush()?;
        anyhow::bail!("{why}");
    }
    Ok(if report.findings.iter().any(|f| f.is_difference()) { Exit::Differences } else { Exit::Ok })
}
