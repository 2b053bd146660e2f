//! Progress bars: on stderr, only when stderr is a terminal (not with
//! `--quiet`, `CI` set, or `TERM=dumb`). Everywhere else they are hidden
//! and cost nothing; plain log lines are the callers' business.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Decide once whether progress may be drawn.
pub fn enabled(quiet: bool) -> bool {
    !quiet
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none()
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// A counter spinner (`init`'s walk): "indexed N files".
pub fn spinner(enabled: bool, what: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {human_pos} [{elapsed}] {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

/// A bar with a known length (files of a transfer).
pub fn bar(enabled: bool, len: u64, what: &str) -> ProgressBar {
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
    pb
}
