//! Which trees a mirror command looks at ([`Targets`]: one tree, a state
//! file, every tree of a config) and their run records: what `rmirror`,
//! `status` and `check` share.

use crate::mirror::health::{self, Report};
use crate::mirror::load_state;
use crate::mirror::options::MirrorConfig;
use crate::sys::clock::Clock;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

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
pub(crate) fn state_files(t: &Targets) -> Result<Vec<(String, PathBuf, Option<String>)>> {
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
