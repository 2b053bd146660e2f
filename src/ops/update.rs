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
use crate::origin::{self, Writer};
use crate::query::{News, NewsFilter};
use crate::recentfile::{Event, EventKind, Recentfile, RelPath};
use crate::sys::tree::IgnoreSet;
use crate::update::{batch_update, check_caller_epoch, normalize, relative_to_root, Change, Outcome, PathError};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::HashMap;
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

/// Record `changes` in the principal of `coll` under its lock, all or
/// nothing: `Ok` only once the whole batch is durably in the principal.
/// For the `update` command ([`crate::sys::signals::install_for_short_command`])
/// a SIGINT/SIGTERM before the write starts ends it with nothing written;
/// one that arrives later waits until the batch is committed. The watch
/// daemon's flush after a stop request goes through.
///
/// A Perl writer may take the lock over while it is held
/// (docs/decisions.md#locks). When [`origin::Loaded::save`] reports that,
/// the write may be
/// lost: wait for the lock again (the intruder holds it until it is
/// done), look for every event of the batch in the collection, and record
/// again what is missing, until a write keeps its lock throughout.
pub(crate) fn record(coll: &Collection, changes: &[Change], w: &Writer) -> Result<Outcome> {
    let principal = coll.principal().clone();
    // The event each change last went in as; `None`: not yet recorded.
    let mut recorded: Vec<Option<Event>> = vec![None; changes.len()];
    let mut outcome = None;
    for attempt in 1..=MAX_TAKEOVERS + 1 {
        let mut loaded = origin::load(coll, &principal, w)?;
        let todo: Vec<usize> = if attempt == 1 {
            if crate::sys::signals::wait_interrupted() {
                return Err(anyhow::Error::new(crate::sys::signals::Interrupted).context("nothing was recorded"));
            }
            (0..changes.len()).collect()
        } else {
            let missing = missing_events(coll, &loaded.rf, &recorded)?;
            if missing.is_empty() {
                tracing::info!("every event of this batch is in {}", loaded.path.display());
                break;
            }
            tracing::warn!(
                "recording {} of {} events again in {}: another writer overwrote them",
                missing.len(),
                changes.len(),
                loaded.path.display()
            );
            missing
        };
        let batch: Vec<Change> = todo.iter().map(|&i| changes[i].clone()).collect();
        let done = batch_update(&mut loaded.rf, principal.seconds(), &batch, &w.clock.now());
        // One map of the principal, not a scan of it per change: a watch
        // batch of 10,000 changes into a principal of 60,000 events would
        // otherwise compare 600 million paths.
        let newest = newest_by_path(&loaded.rf);
        for &i in &todo {
            recorded[i] = newest.get(&changes[i].path).map(|&e| e.clone());
        }
        let write = done.write;
        outcome.get_or_insert(done);
        if !write {
            break;
        }
        match loaded.save(coll, w) {
            Ok(()) => break,
            Err(e) if e.downcast_ref::<origin::TakenOver>().is_some() => {
                tracing::warn!("{e:#}; waiting for its lock, then checking that this batch is in the index");
                if attempt == MAX_TAKEOVERS + 1 {
                    return Err(e.context(format!(
                        "gave up after {MAX_TAKEOVERS} take-overs of the lock; some of this batch may be missing"
                    )));
                }
            }
            Err(e) => {
                let committed = e.downcast_ref::<crate::store::WriteError>().is_some_and(|w| w.committed);
                return Err(if committed {
                    e.context(format!("the events were recorded in {}", loaded.path.display()))
                } else {
                    e.context(format!("nothing was recorded in {}", loaded.path.display()))
                });
            }
        }
    }
    origin::ensure_principal_link(coll)?;
    Ok(outcome.unwrap_or_default())
}

/// Writes of one batch whose lock was taken over before `record` gives up
/// (each waits for the intruder first, so this is never reached by chance).
const MAX_TAKEOVERS: usize = 20;

/// Indices of `recorded` events that the collection no longer holds. An
/// event is held when the principal lists its path with that epoch or a
/// later one (a later event of the path supersedes it), or, once the
/// principal's `merged` has passed its epoch, when a larger file does.
fn missing_events(coll: &Collection, principal: &Recentfile, recorded: &[Option<Event>]) -> Result<Vec<usize>> {
    let held =
        |by_path: &HashMap<&RelPath, &Event>, e: &Event| by_path.get(&e.path).is_some_and(|x| x.epoch >= e.epoch);
    let in_principal = newest_by_path(principal);
    let merged = principal.meta.merged.epoch();
    let mut larger: Vec<Recentfile> = Vec::new();
    let mut out = Vec::new();
    for (i, e) in recorded.iter().enumerate() {
        let Some(e) = e else { continue };
        if held(&in_principal, e) {
            continue;
        }
        if merged.is_some_and(|m| *m >= e.epoch) {
            if larger.is_empty() {
                for iv in coll.intervals.iter().skip(1) {
                    if let Some(rf) = coll.read(iv)? {
                        larger.push(rf);
                    }
                }
            }
            if larger.iter().any(|rf| rf.events.iter().any(|x| x.path == e.path && x.epoch >= e.epoch)) {
                continue;
            }
        }
        out.push(i);
    }
    Ok(out)
}

/// Each path's newest event in `rf` (events are newest first).
fn newest_by_path(rf: &Recentfile) -> HashMap<&RelPath, &Event> {
    let mut by_path = HashMap::with_capacity(rf.events.len());
    for e in &rf.events {
        by_path.entry(&e.path).or_insert(e);
    }
    by_path
}

/// Check the batch, then record it in the principal under one lock.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    if opts.paths.is_empty() && !opts.stdin {
        bail!("nothing to record: give PATH arguments or --stdin");
    }
    crate::sys::signals::install_for_short_command();
    let coll = Collection::open(&opts.principal)?;
    let changes = changes(opts, &coll, &ctx.writer.clock.now())?;
    if !changes.is_empty() {
        record(&coll, &changes, &ctx.writer)?;
    }
    Ok(Exit::Ok)
}
