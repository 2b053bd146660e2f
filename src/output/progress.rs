//! Progress bars: on stderr, only when stderr is a terminal (not with
//! `--quiet`, `CI` set, or `TERM=dumb`). Everywhere else they are hidden
//! and cost nothing; plain log lines are the callers' business.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, WeakProgressBar};
use std::io::IsTerminal;
use std::sync::Mutex;

/// The bar on screen, if any: log lines are written around it.
static SHOWN: Mutex<Option<WeakProgressBar>> = Mutex::new(None);

/// Run `f` (a write to stderr) with the bar on screen, if any, cleared
/// and redrawn after it.
pub(crate) fn suspend<R>(f: impl FnOnce() -> R) -> R {
    let bar = SHOWN.lock().ok().and_then(|s| s.as_ref().and_then(WeakProgressBar::upgrade));
    match bar {
        Some(pb) => pb.suspend(f),
        None => f(),
    }
}

/// Note `pb` as the bar on screen.
fn shown(pb: &ProgressBar) {
    if let Ok(mut s) = SHOWN.lock() {
        *s = Some(pb.downgrade());
    }
}

/// Decide once whether progress may be drawn.
pub fn enabled(quiet: bool) -> bool {
    !quiet
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none()
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// A counter spinner (`init`'s walk): "indexed N files".
pub(crate) fn spinner(enabled: bool, what: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {human_pos} [{elapsed}] {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_prefix(what.to_string());
    shown(&pb);
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

/// A bar with a known length (files of a transfer).
pub(crate) fn bar(enabled: bool, len: u64, what: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {human_pos}/{human_len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(what.to_string());
    shown(&pb);
    pb
}

/// A percentage bar whose words come from the caller (a whole-tree
/// rsync: rsync's `--info=progress2` says how far it is).
pub(crate) fn percent(enabled: bool, what: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(100), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos:>3}% {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(what.to_string());
    shown(&pb);
    pb.enable_steady_tick(std::time::Duration::from_millis(250));
    pb
}
