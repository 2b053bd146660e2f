//! `rrr update`: record new/delete events in the principal, one batch under
//! one lock. It never aggregates (the Perl-compatible `rrr-update` does, with
//! `--epoch`).
//!
//! The whole batch is checked before the lock is taken, and a path that
//! would record nonsense is refused (exit 2, naming the path): a file that
//! does not exist (without `--delete`), a path outside the root, or given
//! relative to the current directory instead of the root, one of rrr's own
//! files (the one ignore set), an epoch that is not positive or lies more
//! than an hour ahead. As `rrr-update` (`perl`), it keeps the Perl script's
//! behaviour instead: the disk is not consulted, a path outside the root is
//! a warning, a future epoch becomes the clock, and a delete needs the path
//! somewhere in the collection ("Didn't find ...").

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::ops::{Ctx, Exit};
use crate::origin::record::record;
use crate::query::{News, NewsFilter};
use crate::recentfile::{Event, EventKind, RelPath};
use crate::tree::IgnoreSet;
use crate::update::{check_caller_epoch, normalize, relative_to_root, Change, PathError};
use anyhow::{anyhow, bail, Context, Result};
use std::ffi::OsStr;
use std::io::BufRead;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What `rrr update` records.
pub struct Options {
    /// The principal (RECENT.recent or the principal recentfile).
    pub principal: PathBuf,
    /// Files, relative to the root or absolute inside it (any bytes).
    pub paths: Vec<std::ffi::OsString>,
    /// Record deletes instead of news.
    pub delete: bool,
    /// A dirty update: the events happened at this (past) epoch.
    pub epoch: Option<Epoch>,
    /// Read `new PATH` / `delete PATH` lines (optionally `EPOCH new PATH`) from stdin.
    pub stdin: bool,
    /// The stdin records end with NUL, not newline (`--stdin0`).
    pub stdin_nul: bool,
    /// Behave as the Perl `rrr-update` (see the module docs).
    pub perl: bool,
    /// `rrr-update --add`: report the path's event in the index first.
    pub add: bool,
}

/// Forms of the root a given absolute path may start with.
pub(crate) fn root_forms(root: &Path) -> Vec<PathBuf> {
    let mut v = vec![root.to_path_buf()];
    if let Ok(a) = std::path::absolute(root) {
        v.push(a);
    }
    if let Ok(c) = std::fs::canonicalize(root) {
        v.push(c);
    }
    v
}

/// Parse one `--stdin` line: `[EPOCH] new|delete PATH` (the path any bytes).
pub(crate) fn parse_line(line: &[u8]) -> Result<(Option<Epoch>, EventKind, &[u8]), String> {
    fn split(b: &[u8]) -> Option<(&[u8], &[u8])> {
        b.iter().position(|&c| c == b' ').map(|i| (&b[..i], &b[i + 1..]))
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (first, rest) = split(line).ok_or("expected `new PATH` or `delete PATH`")?;
    let (epoch, kind, rest) = match std::str::from_utf8(first).ok().and_then(EventKind::parse) {
        Some(k) => (None, k, rest),
        None => {
            let e = Epoch::parse(&text(first)).map_err(|e| format!("neither a type nor an epoch: {e}"))?;
            let (k, rest) = split(rest).ok_or("expected `EPOCH new PATH`")?;
            let k = std::str::from_utf8(k)
                .ok()
                .and_then(EventKind::parse)
                .ok_or_else(|| format!("unknown event type {:?} (new or delete)", text(k)))?;
            (Some(e), k, rest)
        }
    };
    if rest.is_empty() {
        return Err("missing path".into());
    }
    Ok((epoch, kind, rest))
}

/// Turn options into changes, refusing what would record nonsense (see
/// the module docs). `now` is the clock, for the future-epoch check.
pub(crate) fn changes(opts: &Options, coll: &Collection, now: &Epoch) -> Result<Vec<Change>> {
    let roots = root_forms(&coll.root);
    let ignore = IgnoreSet::new(&coll.filenameroot, &[]);
    let mut out = Vec::new();
    let mut push = |raw_bytes: &[u8], kind: EventKind, epoch: Option<Epoch>, origin: &str| -> Result<()> {
        let raw = crate::recentfile::shown_path(raw_bytes);
        let raw_path = Path::new(OsStr::from_bytes(raw_bytes));
        if let Some(e) = &epoch {
            check_caller_epoch(e, now, opts.perl).map_err(|m| anyhow!("{origin}{m}"))?;
        }
        let path = match relative_to_root(raw_path, &roots) {
            Ok(path) => path,
            Err(PathError::Outside(m)) if opts.perl => {
                tracing::warn!("{origin}{m}; ignored");
                return Ok(());
            }
            Err(e) => bail!("{origin}{e}"),
        };
        if ignore.is_ignored(&path) {
            let which = if path == *raw_bytes { String::new() } else { format!(" ({path})") };
            bail!(
                "{origin}{raw}{which}: one of rrr's own files (a recentfile, its lock or temp file, .rrr/, an rsync \
                 temp file), which no index may list"
            );
        }
        if opts.perl {
            if kind == EventKind::Delete || opts.add {
                let found = indexed_event(coll, &path)?;
                match (&found, kind) {
                    (Some(e), EventKind::Delete) => {
                        crate::output::log::verbatim(&format!("Found file:\n{}", syck_dump_events(&[e])))
                    }
                    (Some(e), _) => {
                        crate::output::log::verbatim(&format!("Info: found file in index:\n{}", syck_dump_events(&[e])))
                    }
                    (None, EventKind::Delete) => bail!("Didn't find '{raw}' in this recentfile collection, giving up."),
                    (None, _) => {}
                }
            }
        } else {
            check_on_disk(raw_path, &path, kind, &coll.root).map_err(|m| anyhow!("{origin}{m}"))?;
        }
        out.push(Change { path, kind, epoch });
        Ok(())
    };
    let kind = if opts.delete { EventKind::Delete } else { EventKind::New };
    for p in &opts.paths {
        push(p.as_bytes(), kind, opts.epoch.clone(), "")?;
    }
    if opts.stdin {
        let end = if opts.stdin_nul { b'\0' } else { b'\n' };
        for (n, line) in std::io::stdin().lock().split(end).enumerate() {
            let line = line.context("reading stdin")?;
            // A newline-separated line may end in CR; a NUL-separated record is taken as it is.
            let line = if opts.stdin_nul { &line[..] } else { line.strip_suffix(b"\r").unwrap_or(&line) };
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            let (epoch, kind, path) = parse_line(line).map_err(|m| anyhow!("stdin line {}: {m}", n + 1))?;
            push(path, kind, epoch.or_else(|| opts.epoch.clone()), &format!("stdin line {}: ", n + 1))?;
        }
    }
    Ok(out)
}

/// A `new` needs the file (or symlink) on disk under the root; a path that
/// names something inside the root only from the current directory
/// (`origin2/modules/new.txt` for the root `origin2`) is refused with the
/// path to give instead.
fn check_on_disk(raw_path: &Path, rel: &RelPath, kind: EventKind, root: &Path) -> Result<(), String> {
    let raw = crate::recentfile::shown_path(raw_path.as_os_str().as_bytes());
    let on_disk = std::fs::symlink_metadata(root.join(rel.as_path()));
    if let Ok(m) = &on_disk {
        if m.is_dir() && kind == EventKind::New {
            return Err(format!("{raw}: is a directory under the root {}, not a file", root.display()));
        }
        return Ok(());
    }
    if let Some(inside) = relative_to_cwd_inside(raw_path, root) {
        return Err(format!(
            "{raw}: no such file under the root {}; paths are relative to the root, not to the current \
             directory: give {inside} or an absolute path",
            root.display()
        ));
    }
    match kind {
        EventKind::New => Err(format!(
            "{raw}: no such file under the root {} (a file that is gone is recorded with --delete)",
            root.display()
        )),
        EventKind::Delete => Ok(()),
    }
}

/// For a relative `raw` given from a current directory outside the root:
/// the path relative to the root that it names from there, if it lies
/// inside the root.
fn relative_to_cwd_inside(raw: &Path, root: &Path) -> Option<String> {
    if raw.is_absolute() {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let root = normalize(&std::path::absolute(root).ok()?);
    if normalize(&cwd).starts_with(&root) {
        return None;
    }
    let named = normalize(&cwd.join(raw));
    let rel = named.strip_prefix(&root).ok()?;
    (!rel.as_os_str().is_empty()).then(|| crate::recentfile::shown_path(rel.as_os_str().as_bytes()))
}

/// The newest event of `path` anywhere in the collection (`news
/// --contains-path`), reading the files smallest first until it is found.
fn indexed_event(coll: &Collection, path: &RelPath) -> Result<Option<Event>> {
    let filter = NewsFilter { contains_path: Some(path.clone()), max: Some(1), ..NewsFilter::default() };
    let files = crate::ops::news::collect(coll, &filter)?;
    Ok(News::of(&files).finish(&filter).first().map(|e| (*e).clone()))
}

/// Events as the Perl script's `YAML::Syck::Dump $news` shows them.
fn syck_dump_events(events: &[&Event]) -> String {
    use crate::recentfile::syck::scalar;
    let mut out = String::from("--- \n");
    for e in events {
        out.push_str(&format!(
            "- \n  epoch: {}\n  path: {}\n  type: {}\n",
            scalar(e.epoch.as_str()),
            String::from_utf8_lossy(&crate::recentfile::syck::scalar_bytes(e.path.as_bytes())),
            e.kind.as_str()
        ));
    }
    out.pop();
    out
}

/// Check the batch, then record it in the principal under one lock.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    if opts.paths.is_empty() && !opts.stdin {
        bail!("nothing to record: give PATH arguments or --stdin");
    }
    crate::sys::signals::install_for_short_command();
    let coll = Collection::open(&opts.principal)?;
    crate::origin::beacon::check_start(&coll, &ctx.writer)?;
    let changes = changes(opts, &coll, &ctx.writer.clock.now())?;
    if !changes.is_empty() {
        record(&coll, &changes, &ctx.writer)?.journal_result()?;
    }
    Ok(Exit::Ok)
}
