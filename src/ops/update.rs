//! `rrr update`: record new/delete events in the principal, one batch under
//! one lock. It never aggregates (the Perl-compatible `rrr-update` does).

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::origin::{self, Writer};
use crate::recentfile::EventKind;
use crate::update::{batch_update, relative_to_root, Change, Outcome, PathError};
use anyhow::{bail, Context, Result};
use std::io::BufRead;
use std::path::{Path, PathBuf};

pub struct Options {
    pub principal: PathBuf,
    pub paths: Vec<String>,
    pub delete: bool,
    pub epoch: Option<Epoch>,
    /// Read `new PATH` / `delete PATH` lines (optionally `EPOCH new PATH`) from stdin.
    pub stdin: bool,
    /// Paths outside the root are warnings (the Perl tools' behaviour), not errors.
    pub outside_is_warning: bool,
}

/// Forms of the root a given absolute path may start with.
pub fn root_forms(root: &Path) -> Vec<PathBuf> {
    let mut v = vec![root.to_path_buf()];
    if let Ok(a) = std::path::absolute(root) {
        v.push(a);
    }
    if let Ok(c) = std::fs::canonicalize(root) {
        v.push(c);
    }
    v
}

/// Parse one `--stdin` line: `[EPOCH] new|delete PATH`.
pub fn parse_line(line: &str) -> Result<(Option<Epoch>, EventKind, &str), String> {
    let (first, rest) = line.split_once(' ').ok_or("expected `new PATH` or `delete PATH`")?;
    let (epoch, kind, rest) = match EventKind::parse(first) {
        Some(k) => (None, k, rest),
        None => {
            let e = Epoch::parse(first).map_err(|e| format!("neither a type nor an epoch: {e}"))?;
            let (k, rest) = rest.split_once(' ').ok_or("expected `EPOCH new PATH`")?;
            let k = EventKind::parse(k).ok_or_else(|| format!("unknown event type {k:?} (new or delete)"))?;
            (Some(e), k, rest)
        }
    };
    if rest.is_empty() {
        return Err("missing path".into());
    }
    Ok((epoch, kind, rest))
}

/// Turn options into changes (paths checked against the root).
pub fn changes(opts: &Options, coll: &Collection) -> Result<Vec<Change>> {
    let roots = root_forms(&coll.root);
    let mut out = Vec::new();
    let mut push = |raw: &str, kind: EventKind, epoch: Option<Epoch>, origin: &str| -> Result<()> {
        match relative_to_root(raw, &roots) {
            Ok(path) => {
                out.push(Change { path, kind, epoch });
                Ok(())
            }
            Err(PathError::Outside(m)) if opts.outside_is_warning => {
                eprintln!("rrr: warning: {origin}{m}; ignored");
                Ok(())
            }
            Err(e) => bail!("{origin}{e}"),
        }
    };
    let kind = if opts.delete { EventKind::Delete } else { EventKind::New };
    for p in &opts.paths {
        push(p, kind, opts.epoch.clone(), "")?;
    }
    if opts.stdin {
        for (n, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.context("reading stdin")?;
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (epoch, kind, path) = parse_line(line).map_err(|m| anyhow::anyhow!("stdin line {}: {m}", n + 1))?;
            push(path, kind, epoch.or_else(|| opts.epoch.clone()), &format!("stdin line {}: ", n + 1))?;
        }
    }
    Ok(out)
}

/// Record `changes` in the principal of `coll` under its lock, all or
/// nothing: `Ok` only once the whole batch is durably in the principal.
/// For the `update` command ([`crate::signals::install_for_short_command`])
/// a SIGINT/SIGTERM before the write starts ends it with nothing written;
/// one that arrives later waits until the batch is committed. The watch
/// daemon's flush after a stop request goes through.
pub fn record(coll: &Collection, changes: &[Change], w: &Writer) -> Result<Outcome> {
    let principal = coll.principal().clone();
    let mut loaded = origin::load(coll, &principal, w)?;
    if crate::signals::wait_interrupted() {
        return Err(anyhow::Error::new(crate::ops::Interrupted).context("nothing was recorded"));
    }
    let outcome = batch_update(&mut loaded.rf, principal.seconds(), changes, &w.clock.now());
    if outcome.write {
        if let Err(e) = loaded.save(coll, w) {
            let committed = e.downcast_ref::<crate::store::WriteError>().is_some_and(|w| w.committed);
            return Err(if committed {
                e.context(format!("the events were recorded in {}", loaded.path.display()))
            } else {
                e.context(format!("nothing was recorded in {}", loaded.path.display()))
            });
        }
    }
    drop(loaded);
    origin::ensure_principal_link(coll)?;
    Ok(outcome)
}

pub fn run(opts: &Options, w: &Writer) -> Result<Outcome> {
    crate::signals::install_for_short_command();
    let coll = Collection::open(&opts.principal)?;
    let changes = changes(opts, &coll)?;
    if changes.is_empty() && (opts.stdin || !opts.paths.is_empty()) {
        return Ok(Outcome::default());
    }
    record(&coll, &changes, w)
}
