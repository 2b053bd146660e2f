//! `rrr trigger`: ask the running `rmirror --loop` of a tree for a pass
//! now (push, as ftpsync's runmirrors does over ssh). The loop is found
//! through its trigger pipe in `.rrr/` ([`crate::mirror::trigger_pipe`]); the
//! pid of the tree's run lock holder is named when it can be read (never
//! its command line). Exit 0 when
//! a loop was woken, 3 when none runs there, 2 on errors.

use crate::mirror::trigger_pipe::{self, Sent};
use crate::ops::{Ctx, Exit};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Which loop(s) to wake.
#[derive(Clone, Debug)]
pub enum Target {
    /// The loop mirroring into this tree.
    Localroot(PathBuf),
    /// The loops of a config's trees: all of them, or the one at `tree`.
    Config {
        /// The rmirror TOML config file.
        file: PathBuf,
        /// Only the tree whose localroot is this directory.
        tree: Option<PathBuf>,
    },
}

/// What `rrr trigger` was asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// Which loop(s) to wake.
    pub target: Target,
    /// One JSON object per tree instead of text.
    pub json: bool,
}

/// Wake the loop(s); one line per tree. Exit 0 when at least one loop was
/// woken, 3 when none runs.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let roots = localroots(&opts.target)?;
    let mut out = ctx.out();
    let mut woken = 0;
    for root in &roots {
        let state_dir = root.join(".rrr");
        let sent = trigger_pipe::send(&state_dir)
            .with_context(|| format!("cannot trigger {}", trigger_pipe::trigger_path(&state_dir).display()))?;
        let pid = (sent == Sent::Woken).then(|| holder_pid(&state_dir)).flatten();
        if opts.json {
            let v = serde_json::json!({"kind": "trigger", "localroot": root.display().to_string(),
                                       "woken": sent == Sent::Woken, "pid": pid});
            writeln!(out, "{v}")?;
        } else if sent == Sent::Woken {
            match pid {
                Some(pid) => writeln!(out, "woke the loop on {} (process {pid})", root.display())?,
                None => writeln!(out, "woke the loop on {}", root.display())?,
            }
        } else {
            tracing::warn!("no rmirror --loop runs on {}", root.display());
        }
        woken += usize::from(sent == Sent::Woken);
    }
    out.flush()?;
    Ok(if woken > 0 { Exit::Ok } else { Exit::Unknown })
}

/// The trees `target` names.
fn localroots(target: &Target) -> Result<Vec<PathBuf>> {
    match target {
        Target::Localroot(r) => Ok(vec![r.clone()]),
        Target::Config { file, tree } => {
            let cfg = crate::mirror::targets::read_config(file)?;
            let all: Vec<PathBuf> = cfg.trees.iter().map(|t| t.tree.localroot.clone()).collect();
            let Some(want) = tree else { return Ok(all) };
            let picked: Vec<PathBuf> = all.into_iter().filter(|r| same_dir(r, want)).collect();
            if picked.is_empty() {
                bail!("{} has no tree with localroot {}", file.display(), want.display());
            }
            Ok(picked)
        }
    }
}

/// Whether two spellings name one directory (`/srv/x` and `/srv/x/`, `..`, a link).
fn same_dir(a: &Path, b: &Path) -> bool {
    crate::mirror::options::canonical(a) == crate::mirror::options::canonical(b)
}

/// The pid of the holder the tree's run lock records: only the pid, not
/// the loop's command line (whoever may trigger, a remote pusher through
/// a forced ssh command included, need not see its options and paths).
fn holder_pid(state_dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(state_dir.join("rmirror.flock")).ok()?;
    text.lines().next()?.trim().parse().ok()
}
