//! The node-exporter textfile: every tree a process runs, its health as
//! Prometheus metrics, rewritten atomically after each pass (and by
//! `rrr status --prometheus`).

use crate::mirror::health::{self, Report};
use crate::mirror::load_state;
use crate::mirror::targets::{state_files, Targets};
use crate::output::prometheus::no_textfile_collector;
use crate::sys::clock::Clock;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Mutex;

/// A node-exporter textfile and the trees it reports: one file per
/// process, every tree of a `--config` in it.
#[derive(Clone, Debug)]
pub(crate) struct Prometheus {
    pub file: PathBuf,
    pub targets: Targets,
}

impl Prometheus {
    /// Rewrite the file atomically from the trees' states; a failure is a
    /// warning in the log (monitoring must not stop the mirror).
    pub fn write(&self, clock: &Clock) {
        if let Err(e) = self.try_write(clock) {
            if no_textfile_collector(&self.file) {
                tracing::debug!("no textfile collector here: {e:#}");
            } else {
                tracing::warn!("cannot write the Prometheus textfile: {e:#}");
            }
        }
    }

    /// [`Prometheus::write`] for a heartbeat inside a pass: a failure is
    /// only a debug line, since the rewrite after every pass warns about it
    /// (one warning per pass, not one per heartbeat as well).
    pub fn write_for_heartbeat(&self, clock: &Clock) {
        if let Err(e) = self.try_write(clock) {
            tracing::debug!("cannot write the Prometheus textfile at a heartbeat: {e:#}");
        }
    }

    /// Rewrite the file; a failure is the caller's (`rrr status`).
    pub(crate) fn try_write(&self, clock: &Clock) -> Result<()> {
        // The trees of a config run on threads of one process, and the
        // atomic write's temp file is per process.
        static ONE_WRITER: Mutex<()> = Mutex::new(());
        let _one = ONE_WRITER.lock().unwrap_or_else(|e| e.into_inner());
        let text = render(&self.targets, clock)?;
        crate::store::write_atomic(&self.file, text.as_bytes(), None)
            .with_context(|| format!("cannot write {}", self.file.display()))
    }
}

/// The textfile's text for `targets` now: what `--metrics-listen` serves
/// on each scrape, too.
pub(crate) fn render(targets: &Targets, clock: &Clock) -> Result<String> {
    // A tree that has no state yet (its first pass failed before the
    // first byte) is there too, never complete: it must not vanish
    // from monitoring.
    let now = clock.now_f64();
    let found: Vec<Report> = state_files(targets)?
        .into_iter()
        .map(|(root, f, remote)| -> Result<Report> {
            Ok(match load_state(&f)? {
                Some(s) => health::report(&root, &s, now),
                None => health::report(
                    &root,
                    &crate::mirror::State { remote: remote.unwrap_or_default(), ..Default::default() },
                    now,
                ),
            })
        })
        .collect::<Result<_>>()?;
    Ok(health::prometheus(&found))
}
