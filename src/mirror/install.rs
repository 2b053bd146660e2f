//! Installing our copies of the recentfiles into the target (module docs,
//! step 4): renamed into place as fetched, or rewritten by rrr's emitter
//! without the events a downstream must not see; the principal link after
//! the principal; a smaller file waiting while our copy of the next larger
//! one would leave a gap ([`OurCopy`]).

use super::remote::{FetchDir, Layout};
use super::report::Fetched;
use super::safety::check_event_path;
use super::state::under_any;
use super::Mirror;
use crate::epoch::Epoch;
use crate::recentfile::{Event, Format, Producer, Recentfile};
use crate::store;
use crate::tree::IgnoreSet;
use anyhow::{Context, Result};
use std::collections::HashSet;
use std::fs;

/// How our copy of a larger recentfile joins the smaller one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OurCopy {
    Joins,
    Gap,
    Missing,
}

impl<'a> Mirror<'a> {
    /// Install `f` into the target: renamed as fetched, or, when it lists
    /// events a downstream must not see (refused, from the future, failing,
    /// or skipped by the reader), rewritten without them by rrr's emitter.
    pub(super) fn install(&mut self, dir: &FetchDir, f: &Fetched, ignore: &IgnoreSet) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        let limit = self.future_limit();
        let keep = self.publishable(&f.rf.events, ignore, &limit);
        self.install_kept(dir, f, &keep)
    }

    /// Install `f` with only the events `keep` says.
    pub(super) fn install_kept(&mut self, dir: &FetchDir, f: &Fetched, keep: &[bool]) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        let dst = self.cfg.localroot.join(&f.name);
        if self.state.principal.as_deref() == Some(f.name.as_str()) {
            // The origin's order: the beacon before the principal it vouches for.
            self.install_beacon(dir, &f.name)?;
        }
        let newest = keep.iter().zip(&f.rf.events).find(|(k, _)| **k).map(|(_, e)| e.epoch.clone());
        if keep.iter().all(|k| *k) && f.rf.skipped.is_empty() {
            match fs::rename(dir.file(&f.name), &dst) {
                Ok(()) => {}
                // The preflight's fetch dir is outside the target.
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EXDEV as i32) => {
                    let bytes = fs::read(dir.file(&f.name))?;
                    store::write_atomic(&dst, &bytes, None)?;
                }
                Err(e) => return Err(e).with_context(|| format!("cannot install {}", dst.display())),
            }
        } else {
            let mut rf = Recentfile { meta: f.rf.meta.clone(), events: Vec::new(), skipped: Vec::new() };
            rf.events = f.rf.events.iter().zip(keep).filter(|(_, k)| **k).map(|(e, _)| e.clone()).collect();
            let format = store::format_of(&dst).map_err(anyhow::Error::msg)?;
            let producer = Producer { program: program_name(), time: self.clock.now() };
            let written = match format {
                Format::Yaml => store::write_atomic_with(&dst, self.clock.file_mtime(), |out| {
                    crate::recentfile::yaml::emit_to(&rf, &producer, out)
                }),
                Format::Json => store::write_atomic(
                    &dst,
                    &crate::recentfile::serialize(&rf, format, &producer),
                    self.clock.file_mtime(),
                ),
            };
            written.with_context(|| format!("cannot install {}", dst.display()))?;
        }
        if let Some(e) = &newest {
            self.state.note_newest(e);
        }
        match newest {
            Some(e) => self.state.installed.insert(f.name.clone(), e),
            None => self.state.installed.remove(&f.name),
        };
        Ok(())
    }

    /// Which of `events` may be published: not hostile, not from the
    /// future, not a failing path.
    fn publishable(&self, events: &[Event], ignore: &IgnoreSet, limit: &Epoch) -> Vec<bool> {
        let failing = self.state.failing_set();
        let mut safe = HashSet::new();
        events
            .iter()
            .map(|e| {
                e.epoch <= *limit
                    && !under_any(&failing, &e.path)
                    && !self.is_excluded(&e.path)
                    && check_event_path(&self.cfg.localroot, &e.path, ignore, &mut safe).is_none()
            })
            .collect()
    }

    pub(super) fn install_link(&mut self, principal: &str) -> Result<()> {
        if self.cfg.dry_run || !self.cfg.remote.is_link() {
            return Ok(());
        }
        let link = self.cfg.remote.name.clone();
        let at = self.cfg.localroot.join(&link);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.is_file()) {
            // A copy of the principal where the link belongs (a tree taken
            // over from a plain rsync of an origin whose writer made one):
            // ours to replace by the link.
            fs::remove_file(&at).with_context(|| format!("cannot replace {}", at.display()))?;
        }
        store::ensure_symlink(&self.cfg.localroot, &link, principal)
            .with_context(|| format!("cannot install {}", self.cfg.localroot.join(&link).display()))
    }

    pub(super) fn ignore_set(layout: &Layout) -> IgnoreSet {
        IgnoreSet::new(&layout.filenameroot, &[])
    }

    /// How our copy of the recentfile `next` joins `rf`, the next smaller
    /// file: a [`OurCopy::Gap`] when it ends before `rf` begins, so that a
    /// downstream mirror reading our copies would miss the events between
    /// them. That happens after the origin's aggregate truncated its
    /// principal past the events our copy of the next file has (about once
    /// per principal interval).
    pub(super) fn our_copy(&self, rf: &Recentfile, next: &str) -> OurCopy {
        match (rf.oldest(), self.state.installed.get(next)) {
            (Some(o), Some(have)) if o.epoch > *have => OurCopy::Gap,
            (_, Some(_)) => OurCopy::Joins,
            // Not ours (a tree rrr took over), or none at all.
            (_, None) if self.cfg.localroot.join(next).exists() => OurCopy::Joins,
            (_, None) => OurCopy::Missing,
        }
    }

    /// Install the files that waited for the copy just installed, the
    /// larger first (read again from `dir`: only their names were kept).
    pub(super) fn install_waiting(
        &mut self,
        dir: &FetchDir,
        waiting: &mut Vec<String>,
        ignore: &IgnoreSet,
        principal: &str,
    ) -> Result<()> {
        while let Some(name) = waiting.pop() {
            let rf = dir
                .read(&name, self.cfg.max_recentfile_size)?
                .with_context(|| format!("{} is gone from {}", name, dir.path().display()))?;
            self.install(dir, &Fetched { name: name.clone(), rf }, ignore)?;
            if name == principal {
                self.install_link(&name)?;
            }
        }
        Ok(())
    }
}

/// `$0` for the `Producers` of the recentfiles a mirror rewrites.
fn program_name() -> String {
    std::env::args().next().unwrap_or_else(|| "rrr".into())
}
