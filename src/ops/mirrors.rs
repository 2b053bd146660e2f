//! What the mirror commands share: which trees a command looks at
//! ([`Targets`]: one tree, a state file, every tree of a config), their
//! run records, the node-exporter textfile, and `rrr rmirror --config FILE`
//! (several trees in one run).

use crate::clock::Clock;
use crate::config::MirrorConfig;
use crate::mirror::load_state;
use crate::mirror::status::{self, Report};
use crate::ops::rmirror;
use crate::ops::Exit;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
            .map(|t| {
                let f = t.state.clone().unwrap_or_else(|| t.localroot.join(".rrr/state.json"));
                (absolute(&t.localroot), f, Some(t.remote.clone()))
            })
            .collect(),
    })
}

/// Reports for every target (`None` where no state exists yet).
pub(crate) fn reports(t: &Targets, clock: &Clock) -> Result<Vec<(String, Option<Report>)>> {
    let now = clock.now_f64();
    state_files(t)?
        .into_iter()
        .map(|(root, f, _)| Ok((root.clone(), load_state(&f)?.map(|s| status::report(&root, &s, now)))))
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

    /// Rewrite the file; a failure is the caller's (`rrr status`).
    pub(crate) fn try_write(&self, clock: &Clock) -> Result<()> {
        // A tree that has no state yet (its first pass failed before the
        // first byte) is there too, never complete: it must not vanish
        // from monitoring.
        let now = clock.now_f64();
        let found: Vec<Report> = state_files(&self.targets)?
            .into_iter()
            .map(|(root, f, remote)| -> Result<Report> {
                Ok(match load_state(&f)? {
                    Some(s) => status::report(&root, &s, now),
                    None => status::report(
                        &root,
                        &crate::mirror::State { remote: remote.unwrap_or_default(), ..Default::default() },
                        now,
                    ),
                })
            })
            .collect::<Result<_>>()?;
        crate::store::write_atomic(&self.file, status::prometheus(&found).as_bytes(), None)
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

/// `rrr rmirror --config FILE`: one pass per tree per round; with
/// `looping`, a round every `interval` seconds until SIGINT/SIGTERM.
/// Each tree has its own lock and state; a failing tree does not stop the
/// others, and backs off (doubling its pause up to 10 minutes) while it
/// keeps failing. The exit status is the worst of each tree's last pass. The file's
/// `interval` wins over `--interval`; its options over the command line's.
/// One `--prometheus` textfile holds every tree.
pub(crate) fn run_config(
    config: &Path,
    base: &rmirror::Options,
    clock: &Clock,
    progress: bool,
    out: &mut dyn Write,
) -> Result<Exit> {
    let cfg = read_config(config)?;
    let interval = cfg.interval.unwrap_or(base.interval);
    let textfile =
        base.prometheus.clone().map(|file| Prometheus { file, targets: Targets::Config(config.to_path_buf()) });
    // Per tree: failed passes in a row, and when it may run again.
    let mut backoff: Vec<(u32, Option<Instant>)> = vec![(0, None); cfg.trees.len()];
    let mut last: Vec<Exit> = vec![Exit::Ok; cfg.trees.len()];
    loop {
        let started = Instant::now();
        for (ix, tree) in cfg.trees.iter().enumerate() {
            if backoff[ix].1.is_some_and(|t| Instant::now() < t) {
                continue;
            }
            let o = cfg.effective(tree);
            let opts = rmirror::Options {
                config: None,
                remote: tree.remote.clone(),
                localroot: tree.localroot.clone(),
                looping: false,
                state: tree.state.clone(),
                skip_deletes: o.skip_deletes.unwrap_or(base.skip_deletes),
                max_delete: o.max_delete.or(base.max_delete),
                max_files_per_connection: o
                    .max_files_per_connection
                    .map_or(base.max_files_per_connection, |n| usize::try_from(n.max(1)).unwrap_or(usize::MAX)),
                rsync_options: o.rsync_options.unwrap_or_else(|| base.rsync_options.clone()),
                password_file: o.password_file.or_else(|| base.password_file.clone()),
                max_recentfile_size: o.max_recentfile_size.unwrap_or(base.max_recentfile_size),
                excludes: o.exclude.unwrap_or_else(|| base.excludes.clone()),
                on_pass: o.on_pass.or_else(|| base.on_pass.clone()),
                timeout: o.timeout.unwrap_or(base.timeout),
                ..base.clone()
            };
            let span = rmirror::span(&opts);
            let _in = span.enter();
            let exit = match rmirror::run_in_span(&opts, textfile.as_ref(), clock, progress, out) {
                Ok(e) => e,
                // Nobody reads the pass objects any more: let a supervisor restart us.
                Err(e) if base.looping && crate::ops::is_closed(&e) => return Ok(Exit::Differences),
                Err(e) => {
                    tracing::error!("pass failed: {e:#}");
                    crate::ops::exit_for_error(&e)
                }
            };
            if exit == Exit::Interrupted || crate::signals::stop_requested() {
                if exit != Exit::Interrupted {
                    tracing::info!("interrupted; state saved");
                }
                return Ok(Exit::Interrupted);
            }
            last[ix] = exit;
            // A failing tree backs off as `--loop` does; the others go on.
            let failed = if exit == Exit::Error { backoff[ix].0 + 1 } else { 0 };
            let next = (failed > 0).then(|| Instant::now() + rmirror::pause_after(interval, failed));
            if let Some(t) = next {
                tracing::warn!("{}", rmirror::backoff_line(failed, t.saturating_duration_since(Instant::now())));
            }
            backoff[ix] = (failed, next);
        }
        let worst = last.iter().copied().fold(Exit::Ok, |w, e| {
            if e != Exit::Ok && (w == Exit::Ok || e == Exit::Error) {
                e
            } else {
                w
            }
        });
        if !base.looping {
            return Ok(worst);
        }
        if crate::log::closed() {
            return Ok(Exit::Differences);
        }
        let end = started + Duration::from_secs_f64(interval.max(0.0));
        while Instant::now() < end {
            if crate::signals::stop_requested() {
                tracing::info!("interrupted between rounds; state saved");
                return Ok(Exit::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
