//! What a long rsync (the bootstrap's whole-tree pass, hours on a large
//! tree) tells the operator while it runs: rsync's `--info=progress2`
//! lines (`rsync::parse_progress2`) drive the bar on a terminal
//! and a log line every half minute otherwise, and a heartbeat (the state,
//! saved with the `Running` pass in it) every ten seconds, so that
//! `status` shows the running pass and `check` sees a live mirror.

use crate::epoch::Epoch;
use crate::rsync::parse_progress2;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// The pass that runs now, as the state records it at each heartbeat
/// (`null` once it is over).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Running {
    /// What runs: `bootstrap` (the whole-tree rsync).
    pub phase: String,
    pub started: Option<Epoch>,
    /// Bytes received so far.
    pub bytes: u64,
    /// rsync's estimate of how far it is.
    pub percent: u8,
    /// As rsync prints them: `3.43MB/s`, `0:01:02` (time left).
    pub rate: String,
    pub eta: String,
    /// Files received so far.
    pub files: u64,
    /// rsync is still listing the tree: the percentage is of what it found so far.
    pub listing: bool,
}

impl Running {
    /// `45% (1.2 GiB, 3.43MB/s, 0:01:02 left, 1,204 files)`.
    pub fn words(&self) -> String {
        let of = if self.listing { " of what is listed so far" } else { "" };
        format!(
            "{}%{of} ({}, {}, {} left, {} files)",
            self.percent,
            crate::human::size(self.bytes),
            if self.rate.is_empty() { "-" } else { &self.rate },
            if self.eta.is_empty() { "-" } else { &self.eta },
            crate::human::count(self.files)
        )
    }
}

/// How often a log line (without a terminal) and a heartbeat are written;
/// in debug builds (the tests) `RRR_TEST_PROGRESS_MS` shortens both.
fn periods() -> (Duration, Duration) {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("RRR_TEST_PROGRESS_MS").ok().and_then(|v| v.parse().ok()) {
        return (Duration::from_millis(ms), Duration::from_millis(ms));
    }
    (Duration::from_secs(30), Duration::from_secs(10))
}

/// Turns a long rsync's stdout lines into the bar, log lines and heartbeats.
pub(crate) struct Reporter<'a> {
    bar: Option<ProgressBar>,
    running: Running,
    log_every: Duration,
    beat_every: Duration,
    last_log: Option<Instant>,
    last_beat: Instant,
    heartbeat: Box<dyn FnMut(&Running) + 'a>,
}

impl<'a> Reporter<'a> {
    /// Start reporting `phase`; the heartbeat is written at once (the
    /// state then shows the running pass) and then every ten seconds.
    pub fn new(bar: bool, phase: &str, started: Epoch, heartbeat: impl FnMut(&Running) + 'a) -> Reporter<'a> {
        let (log_every, beat_every) = periods();
        let mut r = Reporter {
            bar: bar.then(|| crate::progress::percent(true, &format!("rmirror {phase}"))),
            running: Running { phase: phase.to_string(), started: Some(started), ..Running::default() },
            log_every,
            beat_every,
            last_log: None,
            last_beat: Instant::now(),
            heartbeat: Box::new(heartbeat),
        };
        (r.heartbeat)(&r.running);
        r
    }

    /// One line of rsync's stdout (anything but a progress line is ignored).
    pub fn line(&mut self, line: &str) {
        let Some(p) = parse_progress2(line) else { return };
        let r = &mut self.running;
        r.bytes = p.bytes;
        r.percent = p.percent.min(100);
        r.rate = p.rate;
        r.eta = p.eta;
        r.files = p.files.unwrap_or(r.files);
        r.listing = p.listing;
        match &self.bar {
            Some(bar) => {
                bar.set_position(u64::from(r.percent));
                let words = r.words();
                bar.set_message(words.split_once(' ').map_or(String::new(), |(_, w)| w.to_string()));
            }
            None if self.last_log.is_none_or(|t| t.elapsed() >= self.log_every) => {
                self.last_log = Some(Instant::now());
                tracing::info!(kind = "progress", "{} {}", r.phase, r.words());
            }
            None => {}
        }
        if self.last_beat.elapsed() >= self.beat_every {
            self.last_beat = Instant::now();
            (self.heartbeat)(&self.running);
        }
    }

    /// The rsync is over (however it ended): clear the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_update_the_running_pass_and_beat() {
        let mut beats: Vec<Running> = Vec::new();
        {
            let mut r = Reporter::new(false, "bootstrap", Epoch::parse("1700000000").unwrap(), |run: &Running| {
                beats.push(run.clone())
            });
            r.beat_every = Duration::ZERO;
            r.line(">f+++++++++ 200000 f1");
            r.line("      1,200,000  20%    3.43MB/s    0:00:05 (xfr#6, to-chk=24/31)");
            r.finish();
        }
        assert_eq!(beats.len(), 2, "one at the start, one after the progress line");
        assert_eq!(beats[0].bytes, 0);
        let last = &beats[1];
        assert_eq!((last.bytes, last.percent, last.files, last.listing), (1_200_000, 20, 6, false));
        assert_eq!(last.words(), "20% (1.1 MiB, 3.43MB/s, 0:00:05 left, 6 files)");
    }
}
