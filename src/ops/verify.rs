//! `rrr verify`: is my mirror complete? Prints the check of
//! [`crate::verify`] (the tree against the union of its recentfiles) as
//! lines or JSON, and writes the fetch list. Exit 0 complete, 1
//! differences, 2 errors (docs/decisions.md#verify).

use crate::ops::{Ctx, Exit};
use crate::recentfile::RelPath;
use crate::verify::{verify, Report};
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What `rrr verify` was asked.
pub struct Options {
    /// The mirror's root (holding `RECENT.recent` and the recentfiles).
    pub localroot: PathBuf,
    /// Read every present indexed file and compare its sha256 where the
    /// index records one.
    pub hash: bool,
    /// One JSON object (counts and lists) instead of lines for people.
    pub json: bool,
    /// `--exclude` patterns (rsync's rules): paths not checked.
    pub excludes: Vec<String>,
    /// Write the paths to fetch (missing and different), each followed by
    /// a NUL byte, for `rsync --from0 --files-from=FILE`.
    pub fetch_list: Option<PathBuf>,
}

/// Verify, print, and exit 0 when complete, 1 with differences.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let report = verify(&opts.localroot, &opts.excludes, opts.hash, ctx.progress)?;
    if let Some(file) = &opts.fetch_list {
        write_fetch_list(file, &report)?;
    }
    let mut out = ctx.out();
    if opts.json {
        #[derive(Serialize)]
        struct Json<'a> {
            kind: &'static str,
            complete: bool,
            #[serde(flatten)]
            report: &'a Report,
        }
        serde_json::to_writer(&mut **out, &Json { kind: "verify", complete: report.complete(), report: &report })?;
        writeln!(out)?;
    } else {
        print_lines(&report, &mut **out)?;
    }
    out.flush()?;
    Ok(if report.complete() { Exit::Ok } else { Exit::Differences })
}

fn print_lines(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let esc = crate::recentfile::escape_path;
    for p in &r.missing {
        writeln!(out, "missing\t{}", esc(p))?;
    }
    for d in &r.different {
        let mut why = Vec::new();
        if d.expected_size.is_some_and(|s| s != d.size) {
            why.push(format!("size {} (index {})", d.size, d.expected_size.unwrap_or_default()));
        }
        if let (Some(want), Some(got)) = (&d.expected_sha256, &d.sha256) {
            if want != got {
                why.push(format!("sha256 {got} (index {want})"));
            }
        }
        writeln!(out, "different\t{}\t{}", esc(&d.path), why.join(", "))?;
    }
    for p in &r.unknown {
        writeln!(out, "unknown\t{}", esc(p))?;
    }
    for (p, why) in &r.unreadable {
        writeln!(out, "unreadable\t{p}\t{why}")?;
    }
    writeln!(
        out,
        "verify: {}: {} indexed files, {} present, {} missing, {} different, {} unknown{}, {} excluded; {} sizes and {} sha256 checked, {} files hashed",
        if r.complete() { "complete" } else { "DIFFERENCES" },
        r.indexed,
        r.present,
        r.missing.len(),
        r.different.len(),
        r.unknown.len(),
        r.horizon
            .as_ref()
            .map(|h| format!(", {} older than the index's horizon {h} (not checked)", r.beyond_horizon.len()))
            .unwrap_or_default(),
        r.excluded,
        r.checked_size,
        r.checked_sha256,
        r.hashed,
    )
}

/// Each path of `missing` and `different`, sorted, followed by a NUL byte
/// (the bytes as they are: a name may hold a newline).
fn write_fetch_list(file: &Path, r: &Report) -> Result<()> {
    let mut paths: Vec<&RelPath> = r.missing.iter().chain(r.different.iter().map(|d| &d.path)).collect();
    paths.sort();
    let mut buf = Vec::new();
    for p in paths {
        buf.extend_from_slice(p.as_bytes());
        buf.push(0);
    }
    std::fs::write(file, buf).with_context(|| format!("writing the fetch list {}", file.display()))
}
