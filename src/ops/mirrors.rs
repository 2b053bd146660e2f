//! What the mirror commands share: which trees a command looks at
//! ([`Targets`]: one tree, a state file, every tree of a config), their
//! run records, the node-exporter textfile, and `rrr rmirror --config FILE`
//! (several trees in one run, each on its own thread).

use crate::config::{self, Footprint, MirrorConfig};
use crate::mirror::health::{self, Report};
use crate::mirror::load_state;
use crate::mirror::remote::Transport;
use crate::mirror::Config;
use crate::ops::rmirror;
use crate::ops::Exit;
use crate::sys::clock::Clock;
use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

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

/// What a tree occupies on disk (canonical paths): its localroot, a state
/// directory outside it, and the remote's tree when SRC is a local path.
fn footprint(cfg: &Config) -> Footprint {
    let default_state = cfg.localroot.join(".rrr/state.json");
    Footprint {
        localroot: config::canonical(&cfg.localroot),
        state_dir: (cfg.state_file != default_state).then(|| cfg.state_file.parent().map(config::canonical)).flatten(),
        origin: (cfg.remote.transport == Transport::Local).then(|| config::canonical(Path::new(&cfg.remote.root))),
    }
}

/// Refuse, before anything runs, trees that overlap one another or their
/// own local remote ([`config::check_footprints`]).
pub(crate) fn refuse_overlaps(trees: &[Config]) -> Result<()> {
    let prints: Vec<Footprint> = trees.iter().map(footprint).collect();
    config::check_footprints(&prints).map_err(|e| anyhow::anyhow!("refused: {e}; nothing was changed"))
}

/// Set when the stream the trees' results go to has closed: every tree's
/// next write fails as a closed stdout does.
static OUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// A tree thread's stdout: whole lines, handed to the thread that owns
/// the real stream, so lines of two trees never mix.
struct LineSender {
    lines: mpsc::Sender<Vec<u8>>,
    buf: Vec<u8>,
}

impl Write for LineSender {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if OUT_CLOSED.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.buf.extend_from_slice(bytes);
        if let Some(end) = self.buf.iter().rposition(|b| *b == b'\n') {
            let rest = self.buf.split_off(end + 1);
            let line = std::mem::replace(&mut self.buf, rest);
            self.lines.send(line).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if OUT_CLOSED.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        Ok(())
    }
}

/// `rrr rmirror --config FILE`: every tree on its own thread, each exactly
/// as `rrr rmirror --remote … --localroot …` runs one: its own schedule,
/// backoff and state, its run lock held for the whole run, so a hung
/// upstream delays only its own tree. Options: the command line over the
/// tree's table over the file's top level over the built-in defaults.
/// Trees that overlap are refused before any runs. A tree whose lock
/// another run holds is left to it (named in the log); when that is every
/// tree the exit is 75, else the worst of the other trees' exits (130
/// after a signal). One `--prometheus` textfile holds every tree.
pub(crate) fn run_config(
    file: &Path,
    opts: &rmirror::Options,
    clock: &Clock,
    progress: bool,
    out: &mut dyn Write,
) -> Result<Exit> {
    let cfg = read_config(file)?;
    // Progress bars of several trees would draw over one another.
    let flags = opts.flags(progress && cfg.trees.len() == 1);
    let trees: Vec<Config> = cfg
        .merged(&opts.options)
        .map(|(t, o)| {
            config::resolve(t, &o, flags)
                .map_err(|e| anyhow::anyhow!("config {}: tree {}: {e}", file.display(), t.localroot.display()))
        })
        .collect::<Result<_>>()?;
    refuse_overlaps(&trees)?;
    let textfile =
        opts.prometheus.clone().map(|f| Prometheus { file: f, targets: Targets::Config(file.to_path_buf()) });
    crate::sys::signals::install();
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let exits: Vec<Exit> = std::thread::scope(|scope| {
        let threads: Vec<_> = trees
            .iter()
            .map(|tree| {
                let mut sender = LineSender { lines: tx.clone(), buf: Vec::new() };
                let textfile = textfile.as_ref();
                scope.spawn(move || {
                    let span = rmirror::span(tree);
                    let _in = span.enter();
                    match rmirror::run_in_span(tree, opts, textfile, clock, &mut sender) {
                        Ok(exit) => exit,
                        Err(e) if crate::ops::is_closed(&e) => Exit::Differences,
                        Err(e) => {
                            let exit = crate::ops::exit_for_error(&e);
                            if exit == Exit::Locked {
                                tracing::warn!("left to the run that holds it: {e:#}");
                            } else {
                                tracing::error!("pass failed: {e:#}");
                            }
                            exit
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        for line in rx {
            if !OUT_CLOSED.load(Ordering::SeqCst) && out.write_all(&line).and_then(|()| out.flush()).is_err() {
                OUT_CLOSED.store(true, Ordering::SeqCst);
            }
        }
        threads.into_iter().map(|t| t.join().unwrap_or(Exit::Error)).collect()
    });
    let held: Vec<String> =
        trees.iter().zip(&exits).filter(|(_, e)| **e == Exit::Locked).map(|(t, _)| rmirror::shown_root(t)).collect();
    if !held.is_empty() {
        tracing::warn!(
            "{} of {} held by another run, not mirrored here: {}",
            crate::output::human::plural(held.len() as u64, "tree", "trees"),
            trees.len(),
            held.join(", ")
        );
    }
    Ok(combined_exit(&exits))
}

/// The exit of a config run from its trees' exits: 130 when any was
/// interrupted, 75 when another run holds every tree, else the worst of
/// the trees that ran (2 over 1 over 0).
pub(crate) fn combined_exit(exits: &[Exit]) -> Exit {
    if exits.contains(&Exit::Interrupted) {
        return Exit::Interrupted;
    }
    let ran: Vec<Exit> = exits.iter().copied().filter(|e| *e != Exit::Locked).collect();
    if ran.is_empty() {
        return Exit::Locked;
    }
    ran.into_iter().fold(Exit::Ok, |worst, e| match (worst, e) {
        (Exit::Error, _) | (_, Exit::Error) => Exit::Error,
        (Exit::Ok, e) => e,
        (w, _) => w,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_run_exits_with_its_worst_tree() {
        use Exit::*;
        assert_eq!(combined_exit(&[Ok, Differences, Ok]), Differences);
        assert_eq!(combined_exit(&[Differences, Error, Ok]), Error);
        assert_eq!(combined_exit(&[Locked, Ok]), Ok, "a held tree is left to its holder");
        assert_eq!(combined_exit(&[Locked, Locked]), Locked, "nothing to do here: 75");
        assert_eq!(combined_exit(&[Error, Interrupted, Locked]), Interrupted);
    }
}
