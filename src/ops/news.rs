//! `rrr news`: each path's newest event, newest first, reading only as many
//! recentfiles as the filter needs (an `--after` within the principal's
//! window reads the principal alone).

use crate::collection::Collection;
use crate::query::{News, NewsFilter};
use crate::recentfile::Recentfile;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

pub struct Options {
    pub principal: PathBuf,
    pub filter: NewsFilter,
    pub json: bool,
}

/// Read the files of `coll` smallest first until the filter is settled.
pub fn collect(coll: &Collection, filter: &NewsFilter) -> Result<Vec<Recentfile>> {
    let mut files: Vec<Recentfile> = Vec::new();
    for iv in &coll.intervals {
        let Some(rf) = coll.read(iv)? else { continue };
        for s in &rf.skipped {
            eprintln!(
                "rrr: warning: {}: {}skipped event {} {}: {}",
                coll.path_of(iv).display(),
                s.line.map(|l| format!("line {l}: ")).unwrap_or_default(),
                s.epoch,
                crate::recentfile::escape_path(&s.path),
                s.reason
            );
        }
        files.push(rf);
        let mut news = News::new();
        let mut done = false;
        for f in &files {
            done = news.add(f, filter);
        }
        if done {
            break;
        }
    }
    Ok(files)
}

pub fn run(opts: &Options, out: &mut dyn Write) -> Result<()> {
    let coll = Collection::open(&opts.principal)?;
    let files = collect(&coll, &opts.filter)?;
    let mut news = News::new();
    for f in &files {
        news.add(f, &opts.filter);
    }
    for e in news.finish(&opts.filter) {
        crate::query::write_news_line(out, e, opts.json)?;
    }
    Ok(())
}
