//! `rrr rmirror --config FILE`: every tree of a config on its own thread,
//! each running [`super::looping`] exactly as a one-tree run does, their
//! result lines relayed whole to the one stdout. Trees that overlap one
//! another or their own local remote are refused before any runs.

use crate::exit::{exit_for_error, is_closed, Exit};
use crate::mirror::looping::{self, Options};
use crate::mirror::options::{self, Footprint};
use crate::mirror::remote::Reach;
use crate::mirror::targets::{read_config, Targets};
use crate::mirror::textfile::Prometheus;
use crate::mirror::Config;
use crate::sys::clock::Clock;
use anyhow::Result;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// What a tree occupies on disk (canonical paths): its localroot, a state
/// directory outside it, and the tree of each upstream that is a local path.
fn footprint(cfg: &Config) -> Footprint {
    let default_state = cfg.localroot.join(".rrr/state.json");
    Footprint {
        localroot: options::canonical(&cfg.localroot),
        state_dir: (cfg.state_file != default_state).then(|| cfg.state_file.parent().map(options::canonical)).flatten(),
        origins: cfg
            .upstreams
            .iter()
            .filter(|u| u.transport == Reach::Local)
            .map(|u| options::canonical(Path::new(&u.root)))
            .collect(),
    }
}

/// Refuse, before anything runs, trees that overlap one another or their
/// own local remote ([`options::check_footprints`]).
pub(crate) fn refuse_overlaps(trees: &[Config]) -> Result<()> {
    let prints: Vec<Footprint> = trees.iter().map(footprint).collect();
    options::check_footprints(&prints).map_err(|e| anyhow::anyhow!("refused: {e}; nothing was changed"))
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
/// another run holds is left to it by a one-shot run (named in the log);
/// when that is every tree the exit is 75, else the worst of the other
/// trees' exits (130 after a signal). A loop waits for such a tree and
/// takes it when its holder ends; a loop all of whose trees are held
/// exits 75 at once. SIGHUP makes a loop read the file again
/// ([`Fleet::reload`]). One `--prometheus` textfile holds every tree.
pub(crate) fn run_config(
    file: &Path,
    opts: &Options,
    clock: &Clock,
    progress: bool,
    out: &mut dyn Write,
) -> Result<Exit> {
    let trees = planned_trees(file, opts, progress)?;
    let textfile =
        opts.prometheus.clone().map(|f| Prometheus { file: f, targets: Targets::Config(file.to_path_buf()) });
    if opts.looping && !opts.dry_run && trees.iter().all(|t| held_by_another(&t.cfg).is_some()) {
        // A second loop on the same config: every tree has its loop already.
        let held: Vec<String> = trees
            .iter()
            .filter_map(|t| Some(format!("{} by {}", looping::shown_root(&t.cfg), held_by_another(&t.cfg)?)))
            .collect();
        tracing::warn!(
            "every tree of {} is held by another run: {}; nothing to do here",
            file.display(),
            held.join(", ")
        );
        return Ok(Exit::Locked);
    }
    let fleet = Fleet { file, opts, textfile: textfile.as_ref(), clock, progress };
    let finished = fleet.run(trees, out);
    warn_held(&finished);
    let exits: Vec<Exit> = finished.iter().map(|(_, e)| *e).collect();
    Ok(combined_exit(&exits))
}

/// A tree as the config gives it: its options resolved, and what they
/// were resolved from (to tell a changed tree on a reload).
#[derive(Clone)]
struct Planned {
    /// The canonical localroot: a tree's identity across reloads.
    key: std::path::PathBuf,
    /// The tree and its merged options, as the file and command line gave them.
    given: (options::TreeSpec, options::OptionLayer),
    cfg: Config,
}

/// Every tree's options merged and validated, a step before anything
/// runs so that one bad `[[tree]]` stops the whole config, naming it;
/// trees that overlap are refused.
fn planned_trees(file: &Path, opts: &Options, progress: bool) -> Result<Vec<Planned>> {
    let cfg = read_config(file)?;
    // Progress bars of several trees would draw over one another.
    let flags = opts.flags(progress && cfg.trees.len() == 1);
    let trees: Vec<Planned> = cfg
        .merged(&opts.options)
        .map(|(t, o)| {
            let resolved = options::resolve(t, &o, flags)
                .map_err(|e| anyhow::anyhow!("config {}: tree {}: {e}", file.display(), t.localroot.display()))?;
            Ok(Planned { key: options::canonical(&resolved.localroot), given: (t.clone(), o), cfg: resolved })
        })
        .collect::<Result<_>>()?;
    refuse_overlaps(&trees.iter().map(|t| t.cfg.clone()).collect::<Vec<_>>())?;
    Ok(trees)
}

/// A config run's settings, which every tree thread reads.
struct Fleet<'a> {
    file: &'a Path,
    opts: &'a Options,
    textfile: Option<&'a Prometheus>,
    clock: &'a Clock,
    progress: bool,
}

/// A tree's thread as [`Fleet::run`] sees it.
struct TreeThread<'s> {
    planned: Planned,
    tree: crate::sys::signals::Tree,
    handle: std::thread::ScopedJoinHandle<'s, Exit>,
    /// Stopped by a reload: its exit does not count; it is started again
    /// with these options (`Some`), or it was removed (`None`).
    retired: Option<Option<Planned>>,
}

impl Fleet<'_> {
    /// Each tree on its own thread while this one relays their whole
    /// lines to `out` (and marks it closed when it fails) and, in a loop,
    /// reloads the config on SIGHUP. The trees that ran to their end
    /// with their exits, in the order they ended.
    fn run(&self, trees: Vec<Planned>, out: &mut dyn Write) -> Vec<(Config, Exit)> {
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        std::thread::scope(|scope| {
            let spawn = |planned: Planned| {
                let tree = crate::sys::signals::Tree::new();
                let (t, cfg) = (tree.clone(), planned.cfg.clone());
                let mut sender = LineSender { lines: tx.clone(), buf: Vec::new() };
                let handle =
                    scope.spawn(move || t.run(|| run_tree(&cfg, self.opts, self.textfile, self.clock, &mut sender)));
                TreeThread { planned, tree, handle, retired: None }
            };
            let mut running: Vec<TreeThread> = trees.into_iter().map(spawn).collect();
            let mut finished: Vec<(Config, Exit)> = Vec::new();
            let mut hangups = crate::sys::signals::hangups();
            let relay = |line: Vec<u8>, out: &mut dyn Write| {
                if !OUT_CLOSED.load(Ordering::SeqCst) && out.write_all(&line).and_then(|()| out.flush()).is_err() {
                    OUT_CLOSED.store(true, Ordering::SeqCst);
                }
            };
            let ignore_hangup = || {
                tracing::warn!("SIGHUP ignored: a one-shot run does not reload {}", self.file.display());
            };
            while !running.is_empty() {
                if let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
                    relay(line, out);
                }
                let (ended, still): (Vec<_>, Vec<_>) = running.into_iter().partition(|t| t.handle.is_finished());
                running = still;
                for t in ended {
                    let exit = t.handle.join().unwrap_or(Exit::Error);
                    match t.retired {
                        None => finished.push((t.planned.cfg, exit)),
                        Some(Some(next)) => running.push(spawn(next)),
                        Some(None) => {}
                    }
                }
                let now = crate::sys::signals::hangups();
                if now != hangups {
                    hangups = now;
                    if self.opts.looping && !self.opts.dry_run {
                        let started = self.reload(&mut running, &mut finished);
                        running.extend(started.into_iter().map(spawn));
                    } else {
                        ignore_hangup();
                    }
                }
            }
            if crate::sys::signals::hangups() != hangups {
                // One that came as the last tree ended is not forgotten either.
                ignore_hangup();
            }
            drop(tx);
            for line in rx.try_iter() {
                relay(line, out);
            }
            finished
        })
    }

    /// SIGHUP: read the config again. A tree no longer in it is stopped
    /// (at its next safe point, its state saved); a tree whose options
    /// changed is stopped and started again with the new ones; a new tree
    /// (and one whose run had ended, e.g. refused, now perhaps fixed) is
    /// started; each is logged, then one line sums the reload up. A tree
    /// started by a reload runs without `--accept-deletes` (that consent
    /// was for the run's first start of each tree). A file that does not
    /// read or resolve changes nothing (an error line). The trees to
    /// start now.
    fn reload(&self, running: &mut [TreeThread], finished: &mut Vec<(Config, Exit)>) -> Vec<Planned> {
        let file = self.file.display();
        let new: Vec<Planned> = match planned_trees(self.file, self.opts, self.progress) {
            // `--accept-deletes` was the consent for the trees' first runs:
            // a tree started again by a reload does not get it a second time.
            Ok(t) => t.into_iter().map(|p| Planned { cfg: Config { accept_deletes: false, ..p.cfg }, ..p }).collect(),
            Err(e) => {
                tracing::error!("SIGHUP: cannot reload {file}: {e:#}; the trees run on as they were");
                return Vec::new();
            }
        };
        let (mut removed, mut changed) = (0, 0);
        for t in running.iter_mut() {
            let next = new.iter().find(|p| p.key == t.planned.key);
            let shown = looping::shown_root(&t.planned.cfg);
            match (next, &t.retired) {
                (None, None) => {
                    tracing::info!("SIGHUP: {shown} is no longer in {file}: stopping it (state saved)");
                    removed += 1;
                }
                (Some(p), None) if p.given != t.planned.given => {
                    tracing::info!("SIGHUP: {shown} has new options in {file}: restarting it with them");
                    changed += 1;
                }
                (Some(_), None) => continue,
                // Stopping already: it starts again with what the file says now.
                (next, Some(_)) => {
                    t.retired = Some(next.cloned());
                    continue;
                }
            }
            t.retired = Some(next.cloned());
            t.tree.stop();
        }
        let fresh: Vec<Planned> =
            new.iter().filter(|p| !running.iter().any(|t| t.planned.key == p.key)).cloned().collect();
        for p in &fresh {
            let shown = looping::shown_root(&p.cfg);
            finished.retain(|(c, _)| options::canonical(&c.localroot) != p.key);
            tracing::info!("SIGHUP: {shown} is new in {file} (or its run had ended): starting it");
        }
        let unchanged = new.len() - fresh.len() - changed;
        tracing::info!(
            "SIGHUP: reloaded {file}: {} new, {changed} changed, {removed} removed, {unchanged} unchanged",
            fresh.len()
        );
        fresh
    }
}

/// One tree's thread: its run in its span, its error logged there and
/// turned into its exit. A tree another run holds is left to it in a
/// one-shot run (a warning); a loop waits for that run to end and takes
/// the tree then (a manual one-shot at service start must not keep the
/// service's loop off the tree for good).
fn run_tree(
    tree: &Config,
    opts: &Options,
    textfile: Option<&Prometheus>,
    clock: &Clock,
    sender: &mut LineSender,
) -> Exit {
    let span = looping::span(tree);
    let _in = span.enter();
    loop {
        let e = match looping::run_in_span(tree, opts, textfile, clock, sender) {
            Ok(exit) => return exit,
            Err(e) if is_closed(&e) => return Exit::Differences,
            Err(e) => e,
        };
        let exit = exit_for_error(&e);
        if exit != Exit::Locked {
            tracing::error!("pass failed: {e:#}");
            return exit;
        }
        if !opts.looping || opts.dry_run {
            tracing::warn!("left to the run that holds it: {e:#}");
            return exit;
        }
        tracing::warn!("{e:#}; waiting for that run to end to take the tree");
        if !wait_until_free(tree) {
            tracing::info!("interrupted while waiting for the tree's lock; nothing was changed");
            return Exit::Interrupted;
        }
        tracing::info!("the run that held the tree has ended: taking it");
    }
}

/// How often a loop looks whether a tree another run holds is free.
const HELD_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// Wait until no other run holds `tree`'s run lock; false when stopped.
fn wait_until_free(tree: &Config) -> bool {
    while held_by_another(tree).is_some() {
        let until = std::time::Instant::now() + HELD_POLL;
        while std::time::Instant::now() < until {
            if crate::sys::signals::stop_requested() {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    !crate::sys::signals::stop_requested()
}

/// The run that holds `tree`'s run lock, if another one does (the lock
/// is taken for a moment to tell: it is an flock, gone with its holder).
fn held_by_another(tree: &Config) -> Option<String> {
    let file = tree.state_dir().join("rmirror.flock");
    if !file.is_file() {
        return None;
    }
    match crate::store::RunLock::try_acquire(&file) {
        Ok(_) => None,
        Err(crate::store::LockError::Busy { holder, .. }) => Some(holder),
        Err(_) => None,
    }
}

/// One line naming the trees another run holds, which this run left alone.
fn warn_held(finished: &[(Config, Exit)]) {
    let held: Vec<String> =
        finished.iter().filter(|(_, e)| *e == Exit::Locked).map(|(t, _)| looping::shown_root(t)).collect();
    if !held.is_empty() {
        tracing::warn!(
            "{} of {} held by another run, not mirrored here: {}",
            crate::output::human::plural(held.len() as u64, "tree", "trees"),
            finished.len(),
            held.join(", ")
        );
    }
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
