//! What the mirror commands share: which trees a command looks at
//! ([`Targets`]: one tree, a state file, every tree of a config), their
//! run records and the node-exporter textfile.

use crate::config::MirrorConfig;
use crate::mirror::health::{self, Report};
use crate::mirror::load_state;
use crate::sys::clock::Clock;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where to find mirror state: one target, or every tree of a config.
#[derive(Clone, Debug)]
pub enum Targets {
    /// One tree: its state is `<DIR>/.rrr/state.json`.
    Localroot(PathBuf),
    /// One state file, wherever it lives (`--state`).
    State(PathBuf),
    /// Every tree of an rmirror TOML config file.
    Config(PathBuf),
    /// A tree, its state file and SRC (`rmirror --localroot D [--state F]`).
    Tree {
        /// The local tree.
        localroot: PathBuf,
        /// Its state file.
        state: PathBuf,
        /// Its SRC, named in the textfile while no state exists yet.
        remote: String,
    },
}

/// Read and parse rmirror's TOML config file, naming it in errors.
pub(crate) fn read_config(file: &Path) -> Result<MirrorConfig> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read config {}", file.display()))?;
    MirrorConfig::parse(&text, file).map_err(anyhow::Error::msg)
}

/// A path as reports and labels name it: absolute, as typed otherwise.
fn absolute(p: &Path) -> String {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()).display().to_string()
}

/// (localroot as shown, state file, SRC where known) per target.
fn state_files(t: &Targets) -> Result<Vec<(String, PathBuf, Option<String>)>> {
    Ok(match t {
        Targets::Localroot(r) => vec![(absolute(r), r.join(".rrr/state.json"), None)],
        Targets::State(f) => vec![(absolute(f), f.clone(), None)],
        Targets::Tree { localroot, state, remote } => vec![(absolute(localroot), state.clone(), Some(remote.clone()))],
        Targets::Config(c) => read_config(c)?
            .trees
            .iter()
            .map(|t| (absolute(&t.tree.localroot), t.tree.state_file(), Some(t.tree.remote.clone())))
            .collect(),
    })
}

/// Reports for every target (`None` where no state exists yet).
pub(crate) fn reports(t: &Targets, clock: &Clock) -> Result<Vec<(String, Option<Report>)>> {
    let now = clock.now_f64();
    state_files(t)?
        .into_iter()
        .map(|(root, f, _)| Ok((root.clone(), load_state(&f)?.map(|s| health::report(&root, &s, now)))))
        .collect()
}

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
        // A tree that has no state yet (its first pass failed before the
        // first byte) is there too, never complete: it must not vanish
        // from monitoring.
        let now = clock.now_f64();
        let found: Vec<Report> = state_files(&self.targets)?
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
        crate::store::write_atomic(&self.file, health::prometheus(&found).as_bytes(), None)
            .with_context(|| format!("cannot write {}", self.file.display()))
    }
}

/// The textfile directory of Debian's prometheus-node-exporter, which the
/// packaged units and the cron examples name.
const DEFAULT_TEXTFILE_DIR: &str = "/var/lib/prometheus/node-exporter";

/// A textfile that cannot be written because it belongs in the default
/// directory and that is missing: the host runs no node-exporter, nobody
/// would read the file, and a warning every pass (a cron mail every
/// minute) helps nobody. A missing directory the operator chose, or any
/// other failure, is still worth a warning.
pub(crate) fn no_textfile_collector(file: &Path) -> bool {
    let dir = Path::new(DEFAULT_TEXTFILE_DIR);
    file.parent() == Some(dir) && matches!(dir.symlink_metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}
