//! Staged transfers and the per-file check (issue 34, `--trust-key`,
//! docs/decisions.md#tampered): a file whose bytes do not match its
//! signed event is never installed.
//!
//! With trust keys, the paths whose accepted (signed) event carries `size`
//! or `sha256` are transferred into `.rrr/staging/` instead of the tree
//! (rsync `--copy-dest=<tree>`: the tree's copy is still the delta basis,
//! so unchanged bytes are not sent again), each staged file is checked
//! (its size, then its sha256, streamed) and renamed into the tree (same
//! filesystem: atomic), parents made as rsync would, a directory at its
//! place replaced only where the pass allowed it (`Mirror::place`). A file
//! that does not match is moved to `.rrr/quarantine/` (at most
//! [`QUARANTINE_KEEP`] files, the oldest removed first, one per path),
//! recorded in the state's `tampered` list and as a failing path (so it is
//! left out of our copies of the recentfiles and fetched again every
//! pass, [`Expected`] kept with it so that the retry is checked too), and
//! the pass is not complete. A later transfer that matches installs it and
//! clears the record; a newer event supersedes it and is judged by its own
//! hash.
//!
//! The staging directory is emptied at the start of every run and after
//! every staged call, so a kill -9 between the transfer and the check
//! never leaves a staged file that a later pass would install unchecked.
//!
//! Without trust keys, or for events without `size`/`sha256`, transfers
//! go straight into the tree as before.

use super::report::{Fetched, PassReport};
use super::transport::{FailedPath, Itemized, Outcome, PathsJob};
use super::Mirror;
use crate::epoch::Epoch;
use crate::recentfile::{shown_path, Event, EventKind, RelPath};
use anyhow::{Context, Result};
use recentfile::beacon::Sha256Hex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// At most this many files are kept in `.rrr/quarantine/`: the oldest go
/// first (a tier that serves a thousand altered files must not fill the
/// mirror's disk with them twice).
pub(crate) const QUARANTINE_KEEP: usize = 100;

/// What a signed event says a path's bytes are: its `size` and `sha256`,
/// either of which may be absent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Expected {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl Expected {
    /// What `e` says, when it is a `new` event with `size` or `sha256`.
    pub fn of(e: &Event) -> Option<Expected> {
        if e.kind != EventKind::New || (e.size.is_none() && e.sha256.is_none()) {
            return None;
        }
        Some(Expected { size: e.size, sha256: e.sha256.as_ref().map(|h| h.as_str().to_string()) })
    }

    fn shown(&self) -> String {
        let size = self.size.map_or("any size".to_string(), |s| format!("{s} bytes"));
        let sha = self.sha256.as_deref().map_or(String::new(), |h| format!(", sha256 {h}"));
        format!("{size}{sha}")
    }
}

/// A path whose received bytes did not match its signed event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Tampered {
    pub path: RelPath,
    /// The event it was judged by.
    pub epoch: Option<Epoch>,
    pub expected: Expected,
    /// What arrived: a regular file's size and sha256, else what it was.
    pub received: String,
    /// Its name in `.rrr/quarantine/`, while kept there.
    pub kept: Option<String>,
    pub first: Epoch,
    pub last: Epoch,
    pub attempts: u64,
}

/// The verdict on one staged file.
enum Verdict {
    Good,
    /// What arrived instead.
    Bad(String),
}

/// Check the file at `file` against `x`: a regular file (not followed
/// through a symlink), its size first, then its sha256 streamed.
fn judge(x: &Expected, file: &Path) -> Result<Verdict> {
    let m = fs::symlink_metadata(file).with_context(|| format!("cannot stat {}", file.display()))?;
    if !m.file_type().is_file() {
        let what = if m.is_dir() {
            "a directory"
        } else if m.file_type().is_symlink() {
            "a symlink"
        } else {
            "not a regular file"
        };
        return Ok(Verdict::Bad(what.to_string()));
    }
    if x.size.is_some_and(|s| s != m.len()) {
        return Ok(Verdict::Bad(format!("{} bytes", m.len())));
    }
    let Some(want) = &x.sha256 else { return Ok(Verdict::Good) };
    let got = crate::origin::beacon::digest_file(file).with_context(|| format!("cannot read {}", file.display()))?;
    if got.sha256.as_str() == want && x.size.is_none_or(|s| s == got.size) {
        Ok(Verdict::Good)
    } else {
        Ok(Verdict::Bad(format!("{} bytes, sha256 {}", got.size, got.sha256)))
    }
}

/// `.rrr/staging/`: where staged transfers land.
pub(crate) fn staging_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("staging")
}

/// `.rrr/quarantine/`: where bytes that did not match are kept.
pub(crate) fn quarantine_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("quarantine")
}

/// Remove whatever a killed run left staged (the caller holds the
/// mirror's lock): nothing staged is ever installed without its check.
pub(crate) fn clean_staging(state_dir: &Path) -> Result<()> {
    let d = staging_dir(state_dir);
    match fs::remove_dir_all(&d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot empty the staging directory {}", d.display())),
    }
}

/// A name in the quarantine for `path` received at `now`: the time, then
/// the first 16 hex digits of the path's sha256 (one per path), then its
/// last component's first bytes (for a human).
fn kept_name(path: &RelPath, now: &Epoch) -> String {
    let base = path.as_bytes().rsplit(|&b| b == b'/').next().unwrap_or(b"");
    let base: String =
        String::from_utf8_lossy(base).chars().filter(|c| c.is_alphanumeric() || "._-".contains(*c)).take(40).collect();
    format!("{}-{}-{base}", now.as_str(), &Sha256Hex::of(path.as_bytes()).as_str()[..16])
}

/// The path's tag in a kept name (see [`kept_name`]).
fn kept_tag(path: &RelPath) -> String {
    format!("-{}-", &Sha256Hex::of(path.as_bytes()).as_str()[..16])
}

impl Mirror<'_> {
    /// Whether `path`'s transfer is staged: with trust keys, when its
    /// signed event says what its bytes are.
    pub(super) fn stages(&self) -> bool {
        self.trust.is_some()
    }

    /// One transfer of `paths` (sorted, unique) whose expectations are in
    /// `expect`: those with one staged and checked ([`Mirror::run_staged`]),
    /// the others straight into the tree, as before. What the checks
    /// refused is in the outcome's `failed` (message `tampered: …`), and
    /// in the state's `tampered` list.
    pub(super) fn run_files_from(
        &mut self,
        what: &str,
        paths: &[&RelPath],
        expect: &HashMap<&RelPath, Expected>,
        rep: &mut PassReport,
    ) -> Result<Outcome> {
        if !self.stages() || expect.is_empty() {
            return self.run_direct(what, paths, None, rep);
        }
        let (staged, direct): (Vec<&RelPath>, Vec<&RelPath>) = paths.iter().partition(|p| expect.contains_key(*p));
        let mut out = Outcome::default();
        if !direct.is_empty() {
            out = self.run_direct(what, &direct, None, rep)?;
        }
        let more = self.run_staged(what, &staged, expect, rep)?;
        out.vanished.extend(more.vanished);
        out.failed.extend(more.failed);
        out.too_long.extend(more.too_long);
        out.deletion_skipped |= more.deletion_skipped;
        Ok(out)
    }

    /// One transfer of `paths` through the transport, into the tree or,
    /// with `staging`, into that directory; retried as
    /// [`Mirror::with_retries`] says.
    fn run_direct(
        &mut self,
        what: &str,
        paths: &[&RelPath],
        staging: Option<&Path>,
        rep: &mut PassReport,
    ) -> Result<Outcome> {
        let state_dir = self.cfg.state_dir();
        let job = PathsJob {
            paths,
            localroot: &self.cfg.localroot,
            state_dir: &state_dir,
            replace_dirs: staging.is_none() && paths.iter().any(|p| self.replacing.contains_key(*p)),
            staging,
        };
        let call = self.transport.send_paths(&job)?;
        let mut seen = Itemized::default();
        let res = self.with_retries(what, || {
            seen = Itemized::default();
            call.run(&mut seen)
        });
        if staging.is_none() {
            self.count_replaced(paths, rep);
        }
        // What arrived before a failure arrived too.
        rep.transferred += seen.files;
        rep.bytes += seen.bytes;
        self.state.counters.files += seen.files;
        self.state.counters.bytes += seen.bytes;
        let out = res?;
        rep.vanished += out.vanished.len() as u64;
        Ok(out)
    }

    /// The staged transfer of `paths` (module docs): into an empty
    /// `.rrr/staging/`, then each staged file checked against `expect`
    /// and renamed into the tree, or quarantined. A path the transport
    /// neither delivered nor reported is failing (never done unseen).
    /// The staging directory is empty again on return, whatever happened.
    fn run_staged(
        &mut self,
        what: &str,
        paths: &[&RelPath],
        expect: &HashMap<&RelPath, Expected>,
        rep: &mut PassReport,
    ) -> Result<Outcome> {
        let state_dir = self.cfg.state_dir();
        let staging = staging_dir(&state_dir);
        clean_staging(&state_dir)?;
        fs::create_dir_all(&staging).with_context(|| format!("cannot create {}", staging.display()))?;
        let res = self.run_direct(what, paths, Some(&staging), rep);
        let res = res.and_then(|mut out| {
            self.install_staged(&staging, paths, expect, &mut out)?;
            Ok(out)
        });
        self.count_replaced(paths, rep);
        let cleaned = clean_staging(&state_dir);
        let out = res?;
        cleaned?;
        Ok(out)
    }

    /// Check and install each staged path (module docs); the refused ones
    /// join `out.failed`.
    fn install_staged(
        &mut self,
        staging: &Path,
        paths: &[&RelPath],
        expect: &HashMap<&RelPath, Expected>,
        out: &mut Outcome,
    ) -> Result<()> {
        let asked: HashSet<&RelPath> = paths.iter().copied().collect();
        let reported: HashSet<RelPath> = out
            .vanished
            .iter()
            .chain(out.failed.iter().map(|f| &f.path))
            .chain(out.too_long.iter().map(|f| &f.path))
            .filter_map(|r| self.event_path_of(r, Some(&asked)))
            .collect();
        let now = self.clock.now();
        for p in paths {
            let rel = std::ffi::OsStr::from_bytes(p.as_bytes());
            let staged = staging.join(rel);
            if fs::symlink_metadata(&staged).is_err() {
                if !reported.contains(*p) {
                    out.failed.push(FailedPath {
                        path: p.as_bytes().to_vec(),
                        message: "the staged transfer did not deliver it".into(),
                    });
                }
                continue;
            }
            let x = &expect[*p];
            match judge(x, &staged)? {
                Verdict::Good => match self.place_staged(&staged, p) {
                    Ok(()) => {
                        if self.untamper(p) {
                            tracing::info!("{}: its bytes match the signed index now; installed", shown_path(p));
                        }
                    }
                    Err(e) => out.failed.push(FailedPath { path: p.as_bytes().to_vec(), message: format!("{e:#}") }),
                },
                Verdict::Bad(received) => {
                    let msg = format!("tampered: received {received}, the signed index says {}", x.shown());
                    tracing::error!("{}: {msg}; not installed, kept in the quarantine", shown_path(p));
                    let kept = self.keep_quarantined(&staged, p, &now);
                    self.tamper(p, x, received, kept, &now);
                    out.failed.push(FailedPath { path: p.as_bytes().to_vec(), message: msg });
                }
            }
        }
        Ok(())
    }

    /// Rename the checked file `staged` to `path` in the tree: its
    /// parents made as directories where missing (never through a symlink
    /// or a file: refused), a directory at its place replaced only where
    /// the pass allowed it (`Mirror::place`, rsync's `--force`).
    fn place_staged(&mut self, staged: &Path, path: &RelPath) -> Result<()> {
        let root = self.cfg.localroot.clone();
        let comps: Vec<&[u8]> = path.as_bytes().split(|&b| b == b'/').collect();
        let mut at = root.clone();
        for c in &comps[..comps.len() - 1] {
            at.push(std::ffi::OsStr::from_bytes(c));
            match fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => anyhow::bail!("cannot install {}: {} is not a directory", shown_path(path), at.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    fs::create_dir(&at).with_context(|| format!("cannot create {}", at.display()))?
                }
                Err(e) => return Err(e).with_context(|| format!("cannot stat {}", at.display())),
            }
        }
        let dst = root.join(std::ffi::OsStr::from_bytes(path.as_bytes()));
        if fs::symlink_metadata(&dst).is_ok_and(|m| m.is_dir()) {
            if !self.replacing.contains_key(path) {
                anyhow::bail!("cannot install {}: a directory stands at its place", shown_path(path));
            }
            fs::remove_dir_all(&dst).with_context(|| format!("cannot replace the directory {}", dst.display()))?;
        }
        fs::rename(staged, &dst).with_context(|| format!("cannot install {}", dst.display()))
    }

    /// Move the refused bytes at `staged` into the quarantine (module
    /// docs: at most [`QUARANTINE_KEEP`], one per path); their name
    /// there, or none when they could not be kept (said in the log).
    fn keep_quarantined(&self, staged: &Path, path: &RelPath, now: &Epoch) -> Option<String> {
        let dir = quarantine_dir(&self.cfg.state_dir());
        if let Err(e) = fs::create_dir_all(&dir) {
            tracing::warn!(
                "cannot create {}: {e}; the bytes received for {} are not kept",
                dir.display(),
                shown_path(path)
            );
            return None;
        }
        let tag = kept_tag(path);
        let mut kept: Vec<String> = fs::read_dir(&dir)
            .map(|rd| rd.flatten().filter_map(|d| d.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        kept.sort();
        // One per path: the older copy goes.
        for k in kept.iter().filter(|k| k.contains(&tag)) {
            remove_any(&dir.join(k));
        }
        kept.retain(|k| !k.contains(&tag));
        for k in kept.iter().take((kept.len() + 1).saturating_sub(QUARANTINE_KEEP)) {
            remove_any(&dir.join(k));
        }
        let name = kept_name(path, now);
        match fs::rename(staged, dir.join(&name)) {
            Ok(()) => Some(name),
            Err(e) => {
                tracing::warn!("cannot keep the bytes received for {} in {}: {e}", shown_path(path), dir.display());
                None
            }
        }
    }

    /// Record `path` as tampered (again).
    fn tamper(&mut self, path: &RelPath, x: &Expected, received: String, kept: Option<String>, now: &Epoch) {
        let list = &mut self.state.tampered;
        match list.binary_search_by(|t| t.path.as_bytes().cmp(path.as_bytes())) {
            Ok(i) => {
                let t = &mut list[i];
                t.attempts += 1;
                t.last = now.clone();
                t.expected = x.clone();
                t.received = received;
                t.kept = kept.or(t.kept.take());
            }
            Err(i) => list.insert(
                i,
                Tampered {
                    path: path.clone(),
                    epoch: None,
                    expected: x.clone(),
                    received,
                    kept,
                    first: now.clone(),
                    last: now.clone(),
                    attempts: 1,
                },
            ),
        }
        self.state.error("tampered");
    }

    /// `path` arrived with the right bytes: no longer tampered. Returns
    /// whether it was.
    fn untamper(&mut self, path: &RelPath) -> bool {
        match self.state.tampered.binary_search_by(|t| t.path.as_bytes().cmp(path.as_bytes())) {
            Ok(i) => {
                self.state.tampered.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// After a transfer's paths are settled, and at the end of a pass: a
    /// tampered path no longer failing (a newer event superseded it, or it
    /// was dropped) is no longer tampered; the others take the epoch of
    /// the event they failed at.
    pub(super) fn settle_tampered(&mut self) {
        let failing: HashMap<&[u8], Option<&Epoch>> =
            self.state.failing.iter().map(|f| (f.path.as_bytes(), f.epoch.as_ref())).collect();
        self.state.tampered.retain_mut(|t| match failing.get(t.path.as_bytes()) {
            Some(e) => {
                if e.is_some() {
                    t.epoch = e.cloned();
                }
                true
            }
            None => false,
        });
    }
}

impl Mirror<'_> {
    /// After a whole-tree pass with trust keys (docs/decisions.md#tampered):
    /// each file rsync `received` (names below the target) whose newest
    /// event in `files` says what its bytes are is checked where it
    /// landed. One that does not match, or cannot be read, is moved out
    /// of the tree into the quarantine (removed when it cannot be kept)
    /// and recorded: tampered, and failing at its event's epoch with its
    /// expectation, so that it is left out of our copies and fetched again
    /// (staged) by the next passes. A tampered path that matches now is no
    /// longer tampered. Should a bad file stay in the tree after all, the
    /// whole-tree pass stays owed (`resync`) and this is the pass's error.
    ///
    /// The paths this pass left failing (the origin could not send them)
    /// get their newest event's expectation, so that their retries are
    /// staged and checked too.
    pub(super) fn check_received_tree(&mut self, files: &[Fetched], received: Vec<Vec<u8>>) -> Result<()> {
        let received: HashSet<Vec<u8>> = received.into_iter().collect();
        let failing: HashSet<Vec<u8>> = self.state.failing.iter().map(|f| f.path.as_bytes().to_vec()).collect();
        let mut newest: HashMap<&RelPath, &Event> = HashMap::new();
        for e in files.iter().flat_map(|f| f.rf.events.iter()) {
            let wanted = received.contains(e.path.as_bytes()) || failing.contains(e.path.as_bytes());
            if wanted && newest.get(&e.path).is_none_or(|n| n.epoch < e.epoch) {
                newest.insert(&e.path, e);
            }
        }
        let expect: Vec<(&RelPath, Expected)> = newest
            .iter()
            .filter(|(p, _)| failing.contains(p.as_bytes()))
            .filter_map(|(p, e)| Some((*p, Expected::of(e)?)))
            .collect();
        self.state.remember_expected(expect.iter().map(|(p, x)| (*p, x)));
        newest.retain(|p, _| received.contains(p.as_bytes()));
        let mut newest: Vec<(&RelPath, &Event)> = newest.into_iter().collect();
        newest.sort_unstable_by_key(|(p, _)| *p);
        let now = self.clock.now();
        let root = self.cfg.localroot.clone();
        let mut bad = 0u64;
        for (p, e) in newest {
            let Some(x) = Expected::of(e) else { continue };
            let file = root.join(std::ffi::OsStr::from_bytes(p.as_bytes()));
            let received = match judge(&x, &file) {
                Ok(Verdict::Good) => {
                    if self.untamper(p) {
                        tracing::info!("{}: its bytes match the signed index now", shown_path(p));
                    }
                    continue;
                }
                Ok(Verdict::Bad(r)) => r,
                Err(err) => format!("a file that cannot be checked ({err:#})"),
            };
            let msg = format!("tampered: received {received}, the signed index says {}", x.shown());
            tracing::error!("{}: {msg}; moved out of the tree into the quarantine", shown_path(p));
            let kept = self.keep_quarantined(&file, p, &now);
            if kept.is_none() && fs::symlink_metadata(&file).is_ok() {
                if let Err(err) = fs::remove_file(&file) {
                    self.state.resync = true;
                    return Err(err).with_context(|| {
                        format!("{}: does not match the signed index, and cannot be removed", file.display())
                    });
                }
            }
            self.tamper(p, &x, received, kept, &now);
            self.state.fail(p, Some(&e.epoch), &msg, &now);
            self.state.remember_expected(std::iter::once((p, &x)));
            bad += 1;
        }
        if bad > 0 {
            self.state.error("failing");
        }
        self.settle_tampered();
        Ok(())
    }
}

/// Remove a file or a directory tree, quietly (a quarantine entry).
fn remove_any(p: &Path) {
    if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        let _ = fs::remove_dir_all(p);
    } else {
        let _ = fs::remove_file(p);
    }
}
