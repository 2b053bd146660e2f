//! What a mirror refuses to act on. Before the first pass: whether the
//! localroot may be mirrored into at all ([`Mirror::settle_ownership`], the
//! pure rules of [`super::ownership`]; [`Refused`] names `--adopt`). In a
//! pass: event paths that could lead out of the tree or name rrr's own files
//! ([`check_event_path`]), events the reader skipped, and events from the
//! future (more than an hour ahead of the clock). A refused event is
//! reported ([`Refusal`]), counted and marked done by its caller.

use super::ownership::{self, CollectionId, Decision, Facts};
use super::remote::{self, FetchDir, Remote};
use super::report::{Fetched, PassReport, Refusal};
use super::state::{load_state, Counters, State};
use super::transport::Itemized;
use super::Mirror;
use crate::done::DoneSet;
use crate::epoch::Epoch;
use crate::recentfile::{check_relative_path, shown_path, Event, RelPath};
use crate::store;
use crate::tree::IgnoreSet;
use anyhow::{bail, Context, Result};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How far ahead of the clock an event may be and still be taken.
const FUTURE_SECS: f64 = 3600.0;

/// Why an event path must not be acted on, or `None`. Pure checks first
/// ([`check_relative_path`], rrr's own files), then each parent component
/// under `root` is lstat'ed: a symlink (which could lead out of the tree)
/// or a non-directory refuses the path. `safe_dirs` caches parents found
/// to be real directories.
pub(crate) fn check_event_path(
    root: &Path,
    path: impl AsRef<[u8]>,
    ignore: &IgnoreSet,
    safe_dirs: &mut HashSet<Vec<u8>>,
) -> Option<String> {
    let path = path.as_ref();
    if let Err(why) = check_relative_path(path) {
        return Some(why.to_string());
    }
    if ignore.is_ignored(path) {
        return Some("names one of rrr's own files (recentfile, state or temp file)".into());
    }
    let mut end = 0;
    while let Some(i) = path[end..].iter().position(|&b| b == b'/') {
        end += i;
        let parent = &path[..end];
        end += 1;
        if safe_dirs.contains(parent) {
            continue;
        }
        match fs::symlink_metadata(root.join(OsStr::from_bytes(parent))) {
            Ok(m) if m.file_type().is_symlink() => {
                return Some(format!("parent {} is a symlink", shown_path(parent)));
            }
            Ok(m) if !m.is_dir() => return Some(format!("parent {} is not a directory", shown_path(parent))),
            Ok(_) => {
                safe_dirs.insert(parent.to_vec());
            }
            // Not there yet: rsync creates it (as a directory).
            Err(_) => break,
        }
    }
    None
}

/// The first parent of `path` under `root` that exists but is not a real
/// directory (a file, or a symlink, which is never followed), with whether
/// it is a symlink; the parents above it are real directories. This is
/// what stands in the way when the origin replaced a file by a directory.
pub(crate) fn blocking_parent(root: &Path, path: impl AsRef<[u8]>) -> Option<(RelPath, bool)> {
    let path = path.as_ref();
    let mut end = 0;
    while let Some(i) = path[end..].iter().position(|&b| b == b'/') {
        end += i;
        let parent = &path[..end];
        end += 1;
        match fs::symlink_metadata(root.join(OsStr::from_bytes(parent))) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => return Some((RelPath::from(parent), m.file_type().is_symlink())),
            Err(_) => return None,
        }
    }
    None
}

/// [`blocking_parent`] of a path that passes the pure checks (a hostile
/// path is refused whatever stands in the tree).
pub(crate) fn blocked_by(root: &Path, path: impl AsRef<[u8]>, ignore: &IgnoreSet) -> Option<(RelPath, bool)> {
    let path = path.as_ref();
    if check_relative_path(path).is_err() || ignore.is_ignored(path) {
        return None;
    }
    blocking_parent(root, path)
}

/// The tree may not be mirrored into without `--adopt` (the message says
/// why and how to proceed); nothing was written.
#[derive(Debug)]
pub(crate) struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl<'a> Mirror<'a> {
    /// Decide whether the localroot may be mirrored into (module
    /// [`crate::mirror::ownership`]); a refusal is an error that names `--adopt`.
    /// When the decision needs the remote principal it is fetched into a
    /// temp dir outside the target and kept for the first pass. With
    /// `apply` (the lock is held, or a dry run) the decision is acted on:
    /// the state is taken over, switched or made fresh, and, unless a dry
    /// run, the marker `.rrr/id` and the state are written. Without it
    /// nothing is written.
    pub fn settle_ownership(&mut self, adopt: bool, apply: bool) -> Result<()> {
        // The tree first, the state second: a run that starts a mirror
        // saves its state before the first byte, so a tree seen with files
        // is never paired with a state read before that run saved it.
        let tree = ownership::tree_kind(&self.cfg.localroot)?;
        let on_disk = load_state(&self.cfg.state_file)?;
        let as_found = on_disk.clone();
        // Failed attempts own nothing: judged as no state, their record kept.
        let (on_disk, tried) = match on_disk {
            Some(s) if s.is_attempts_only() => (None, Some(s)),
            s => (s, None),
        };
        let (decision, facts) = self.decide_ownership(on_disk.as_ref(), adopt, tree)?;
        if decision == Decision::Adopt && !self.adopt_counted && !self.cfg.dry_run {
            self.count_adopt_deletes()?;
        }
        if !apply {
            return Ok(());
        }
        // The beacon the preflight's fetch accepted (mirror::trusted) is
        // newer than any on disk: the floor of the next one.
        let accepted = self.state.trusted.take();
        self.state = self.state_for(&decision, &facts, on_disk, tried);
        if accepted.is_some() {
            self.state.trusted = accepted;
        }
        self.complete_state(&decision);
        if self.cfg.dry_run {
            return Ok(());
        }
        self.writable = true;
        self.write_ownership(as_found.as_ref())
    }

    /// The ownership verdict and the facts it rests on, fetching the
    /// remote principal (into a temp dir, kept for the first pass) when a
    /// tree that is not ours yet needs it. Nothing is written; a refusal
    /// is an error ([`Refused`]).
    fn decide_ownership(
        &mut self,
        on_disk: Option<&State>,
        adopt: bool,
        tree: ownership::TreeKind,
    ) -> Result<(Decision, Facts)> {
        loop {
            let facts = self.facts(on_disk, adopt, tree);
            let verdict = ownership::decide(&facts);
            // A tree that is not ours yet: the remote must answer with a
            // valid principal before anything is created in it.
            let needs_principal = !matches!(verdict, Decision::Owned | Decision::Refuse(_));
            match verdict {
                Decision::Refuse(r) => return Err(Refused(self.refusal_message(&r, on_disk, &facts)).into()),
                _ if needs_principal && self.prefetched.is_none() => {
                    let dir = FetchDir::new(&std::env::temp_dir())?;
                    let (p, l) = self.fetch_principal(&dir)?;
                    self.prefetched = Some((dir, p, l));
                }
                Decision::NeedPrincipal => bail!("internal error: ownership undecided with the principal fetched"),
                d => return Ok((d, facts)),
            }
        }
    }

    /// The state `decision` leads to: the one on disk (owned, or switched
    /// to this remote), or a fresh one that keeps the record of failed
    /// attempts (`tried`). In memory only.
    fn state_for(&mut self, decision: &Decision, facts: &Facts, on_disk: Option<State>, tried: Option<State>) -> State {
        let now = self.clock.now();
        // With several upstreams the tree's first names it (the one a pass
        // reads is `upstream`, mirror::upstreams).
        let src = self.cfg.upstreams.first().unwrap_or(&self.cfg.remote).src.clone();
        let shown = self.cfg.localroot.display().to_string();
        let remote_coll = facts.remote.as_ref().map_or_else(String::new, |c| format!(" ({c})"));
        let fresh = || match tried {
            Some(t) => t.renewed(&src, &now),
            None => State::fresh(&src, &now),
        };
        match decision {
            Decision::Owned => on_disk.expect("owned implies a state"),
            Decision::Switch => {
                let mut st = on_disk.expect("a switch implies a state");
                tracing::info!(
                    "{shown}: switching from {} to {src}, a mirror of the same collection{remote_coll}",
                    st.remote
                );
                st.remote = src.clone();
                st
            }
            Decision::Fresh => fresh(),
            Decision::AutoAdopt => {
                tracing::info!(
                    "adopting {shown}: it holds the principal of {src}'s collection{remote_coll} \
                     (a mirror made by rrr-client or rsync); the first pass reconciles it with one rsync"
                );
                fresh()
            }
            Decision::Adopt => {
                tracing::info!("adopting {shown} as a mirror of {src} (--adopt)");
                // Its deletes were asked for (and counted against --max-delete).
                self.cfg.accept_deletes = true;
                fresh()
            }
            Decision::NeedPrincipal | Decision::Refuse(_) => unreachable!("handled above"),
        }
    }

    /// Give the taken state an id, its failing, missing and quarantined
    /// paths sorted and unique (a state edited by hand may not be), and the collection of the
    /// prefetched principal. In memory only.
    fn complete_state(&mut self, decision: &Decision) {
        if self.state.id.is_none() {
            self.state.id = Some(ownership::new_id());
        }
        // Kept sorted (State::fail, miss, quarantine: each lookup is a
        // binary search); a state edited by hand may not be.
        for list in [&mut self.state.failing, &mut self.state.missing, &mut self.state.quarantined] {
            list.sort_by(|a, b| a.path.cmp(&b.path));
            list.dedup_by(|a, b| a.path == b.path);
        }
        if let Some((_, p, l)) = &self.prefetched {
            self.state.filenameroot = Some(l.filenameroot.clone());
            if *decision != Decision::Owned && *decision != Decision::Switch {
                self.state.dirtymark = p.rf.meta.dirtymark.clone();
            }
        }
    }

    /// Write the marker `.rrr/id` when it does not name our state, then
    /// the state, unless it is our own and unchanged (`as_found`). The
    /// marker goes first, so that this run never saves a state whose id
    /// the tree does not carry.
    fn write_ownership(&mut self, as_found: Option<&State>) -> Result<()> {
        let root = self.cfg.localroot.clone();
        let id = self.state.id.clone().unwrap_or_default();
        if ownership::read_marker(&root).as_deref() != Some(id.as_str()) {
            ownership::write_marker(&root, &id)
                .with_context(|| format!("cannot write {}", ownership::marker_path(&root).display()))?;
        } else if as_found == Some(&self.state) {
            // Our own state, unchanged: the pass saves it soon enough (each
            // save is two fsyncs, a good part of an incremental pass).
            return Ok(());
        }
        self.save()
    }

    /// The facts [`ownership::decide`] needs.
    fn facts(&self, on_disk: Option<&State>, adopt: bool, tree: ownership::TreeKind) -> Facts {
        let root = &self.cfg.localroot;
        let remote = self.prefetched.as_ref().map(|(_, p, l)| CollectionId {
            filenameroot: l.filenameroot.clone(),
            dirtymark: p.rf.meta.dirtymark.clone(),
        });
        // The tree's own principal: the remote's name, or the state's.
        let local_name =
            self.prefetched.as_ref().map(|(_, p, _)| p.name.clone()).or_else(|| on_disk?.principal.clone());
        // Only a tree without a state, or with one older than ids, is
        // judged by it: not read (parsed) on every pass.
        let judged_by_tree = on_disk.is_none_or(|s| s.id.is_none());
        let local = local_name.filter(|_| judged_by_tree).and_then(|n| self.local_collection(&n));
        let norm = self.cfg.remote.normalized();
        Facts {
            has_state: on_disk.is_some(),
            state_id: on_disk.and_then(|s| s.id.clone()),
            state_collection: on_disk.and_then(State::collection),
            // With several upstreams, the state names the one it was made with.
            same_remote: on_disk.is_some_and(|s| {
                Remote::parse(&s.remote).is_ok_and(|r| {
                    let r = r.normalized();
                    r == norm || self.cfg.upstreams.iter().any(|u| u.normalized() == r)
                })
            }),
            external_state: ownership::is_external(&self.cfg.state_file, root),
            marker: ownership::read_marker(root),
            tree: Some(tree),
            remote,
            local,
            adopt,
        }
    }

    /// The collection of the recentfile `name` in the localroot, if it is
    /// one (a name that does not match its meta is not).
    fn local_collection(&self, name: &str) -> Option<CollectionId> {
        remote::check_name(name).ok()?;
        let p = self.cfg.localroot.join(name);
        let m = fs::metadata(&p).ok()?;
        if !m.is_file() || m.len() > self.cfg.max_recentfile_size {
            return None;
        }
        let rf = store::read_file(&p).ok()??;
        let (root, _, _) = crate::collection::split_name(name)?;
        if rf.meta.filenameroot.as_deref().is_some_and(|r| r != root) {
            return None;
        }
        Some(CollectionId { filenameroot: root.to_string(), dirtymark: rf.meta.dirtymark })
    }

    fn refusal_message(&self, r: &ownership::Refusal, st: Option<&State>, f: &Facts) -> String {
        let root = self.cfg.localroot.display();
        let src = &self.cfg.remote.src;
        let coll = |c: &Option<CollectionId>| c.as_ref().map_or("unknown collection".to_string(), |c| c.to_string());
        let adopt = format!(
            "Nothing was changed. To make {root} a mirror of {src}, deleting whatever {src} does not have, \
             run again with --adopt (--dry-run --adopt lists the deletes; --max-delete N caps them)."
        );
        match r {
            ownership::Refusal::NotAMirror => format!(
                "refusing to mirror into {root}: it is not empty, has no rrr state and no principal of {src}'s \
                 collection ({}) — a typo in --localroot? {adopt}",
                coll(&f.remote)
            ),
            ownership::Refusal::OtherCollection => format!(
                "refusing to mirror {src} into {root}: its state {} belongs to {} ({}), another collection than \
                 {src} ({}). {adopt}",
                self.cfg.state_file.display(),
                st.map_or("", |s| s.remote.as_str()),
                coll(&f.state_collection),
                coll(&f.remote)
            ),
            ownership::Refusal::NoMarker => format!(
                "refusing to use the state {} for {root}: the state belongs to a tree marked {}, but {} {} — \
                 is the filesystem mounted? Nothing was changed. If {root} really is that mirror, run again \
                 with --adopt.",
                self.cfg.state_file.display(),
                f.state_id.as_deref().unwrap_or("(no id)"),
                ownership::marker_path(&self.cfg.localroot).display(),
                f.marker.as_ref().map_or("is missing".to_string(), |m| format!("says {m}"))
            ),
        }
    }

    /// `--adopt` with `--max-delete`: count the deletes first (one dry
    /// run of the whole-tree rsync) and refuse when there are too many.
    fn count_adopt_deletes(&mut self) -> Result<()> {
        self.adopt_counted = true;
        let Some(max) = self.cfg.max_delete.filter(|_| !self.cfg.skip_deletes) else { return Ok(()) };
        let layout = match &self.prefetched {
            Some((_, _, l)) => l.clone(),
            None => {
                let dir = FetchDir::new(&std::env::temp_dir())?;
                let (p, l) = self.fetch_principal(&dir)?;
                self.prefetched = Some((dir, p, l.clone()));
                l
            }
        };
        let call = self.whole_tree_call(&layout, true, false)?;
        let mut seen = Itemized::default();
        self.with_retries("counting the deletes of --adopt", || {
            seen = Itemized::default();
            call.run(&mut seen)
        })?;
        if seen.deleted > max {
            return Err(Refused(format!(
                "--adopt: making {} a mirror of {} would delete {} files or directories, more than \
                 --max-delete {max}; nothing was changed. List them with --dry-run --adopt.",
                self.cfg.localroot.display(),
                self.cfg.remote.src,
                seen.deleted
            ))
            .into());
        }
        tracing::info!(
            "--adopt: {}, within --max-delete {max}",
            crate::output::human::plural(seen.deleted, "delete", "deletes")
        );
        Ok(())
    }

    /// The clock plus one hour: the done-set never reaches past it.
    pub(super) fn future_limit(&self) -> Epoch {
        Epoch::from_clock(self.clock.now_f64() + FUTURE_SECS)
    }

    /// Refuse the events the reader skipped (an over-long path, an unknown
    /// type) that are not done yet, and mark them done.
    pub(super) fn refuse_skipped(&mut self, f: &Fetched, done: &DoneSet, rep: &mut PassReport) {
        for s in &f.rf.skipped {
            let Ok(epoch) = Epoch::parse(&s.epoch) else { continue };
            if done.covered(&epoch) || self.cfg.dry_run {
                continue;
            }
            let e = Refusal {
                file: f.name.clone(),
                epoch: epoch.clone(),
                kind: None,
                path: reported_path(&s.path),
                reason: s.reason.clone(),
            };
            tracing::warn!("refused event {} {}: {}", e.epoch, shown_path(&s.path), e.reason);
            rep.refused.push(e);
            self.state.counters.refused += 1;
            self.state.done.entry(f.name.clone()).or_default().insert(epoch.clone(), epoch);
        }
    }
}

/// Report and count a hostile event; the caller marks it done.
pub(super) fn refuse(rep: &mut PassReport, counters: &mut Counters, file: &str, e: &Event, reason: String) {
    tracing::warn!("refused {} event {} {}: {reason}", e.kind, e.epoch, shown_path(&e.path));
    rep.refused.push(Refusal {
        file: file.to_string(),
        epoch: e.epoch.clone(),
        kind: Some(e.kind),
        path: reported_path(&e.path),
        reason,
    });
    counters.refused += 1;
}

/// A path as the `--json` report carries it: exact, unless it is over-long.
pub(super) fn reported_path(path: &RelPath) -> RelPath {
    if path.len() <= crate::recentfile::read::MAX_PATH_BYTES {
        path.clone()
    } else {
        RelPath::from(shown_path(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_paths_are_checked_against_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("f"), "x").unwrap();
        std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap();
        let ig = IgnoreSet::new("RECENT", &[]);
        let mut safe = HashSet::new();
        let mut check = |p: &str| check_event_path(root, p, &ig, &mut safe);
        assert_eq!(check("a/b/c"), None);
        assert_eq!(check("new/dir/x"), None);
        assert_eq!(check("link"), None, "a symlink itself may be replaced or deleted");
        for name in ["a\nb", "tab\there", "cr\r", "\x01\x7f\u{85}"] {
            assert_eq!(check(name), None, "control characters are part of names: {name:?}");
        }
        let long = "x".repeat(4097);
        for bad in [
            "../x",
            "/abs",
            "a/../b",
            "a\0b",
            "link/x",
            "f/x",
            "RECENT-1h.yaml",
            ".rrr/state.json",
            "a//b",
            long.as_str(),
        ] {
            assert!(check(bad).is_some(), "{bad:?}");
        }
    }
}
