//! What a long rsync (the bootstrap's whole-tree pass, hours on a large
//! tree) tells the operator while it runs: a bar on a terminal, a log line
//! every half minute otherwise, and a heartbeat (the state, saved with the
//! `Running` pass in it) every ten seconds, so that `status` shows the
//! running pass and `check` sees a live mirror.
//!
//! The bar is driven by rsync's `--info=progress2` lines
//! (`rsync::parse_progress2`), which rsync prints once per file: on a tree
//! of small files they cost a fifth of the whole-tree rsync (10k files of
//! 500 bytes: 1.05 s against 0.85 s, rsync writing and rrr reading 11k
//! lines). So without a terminal rsync prints nothing until its summary,
//! and the heartbeat and the log lines come from the clock
//! ([`crate::sys::rsync::Output::Quiet`]), with the bytes the network
//! delivered so far read from the kernel ([`crate::sys::netbytes`]: TCP
//! payload only, never rsync's own reads of its libraries or of a basis
//! file). An operator who wants rsync's percentage in the log anyway
//! passes `--rsync-option=--info=progress2`: its lines are used whenever
//! they come (and every line, like every silence, moves the heartbeat).
//!
//! The same reporter watches every fetch of recentfiles, from the first
//! fetch of a one-shot run on: a slow one (a large principal over a slow
//! link) beats and, after 10 s, logs like the bootstrap.

use crate::epoch::Epoch;
use crate::mirror::transport::Output;
use crate::sys::netbytes::{read_locally, received};
use crate::sys::rsync::parse_progress2;
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
    /// The figures are rsync's own (`--info=progress2`); otherwise only
    /// `bytes` (what the network delivered) and `rate` are known.
    pub from_rsync: bool,
    /// A local source (rsync holds no TCP socket): `bytes` is what rsync
    /// read so far (`/proc`'s `rchar` of its busiest process: files, pipes
    /// and its libraries alike), not what a network delivered.
    pub local: bool,
    /// Which attempt of the tree this is (1: its first; 0: not recorded,
    /// an older rrr), and when it started: `status` shows the running
    /// attempt, not only the last finished one.
    pub attempt: u64,
    pub attempt_started: Option<Epoch>,
    /// The rsync call that runs (`fetching the recentfiles of …`), its
    /// try and how many it gets (`attempt 2 of 3`), and the error of its
    /// last failed try (first line), if one failed.
    pub call: String,
    pub call_attempt: u32,
    pub call_attempts: u32,
    pub last_error: Option<String>,
}

impl Running {
    /// The running pass of attempt `note` in phase `phase`, started at `started`.
    pub fn of(phase: &str, started: Epoch, note: &AttemptNote) -> Running {
        let mut r = Running { phase: phase.to_string(), started: Some(started), ..Running::default() };
        note.fill(&mut r);
        r
    }

    /// `fetching the recentfiles of SRC, attempt 2 of 3, last error: …`:
    /// the call that runs and how its tries went (empty before the first
    /// rsync call).
    pub fn call_words(&self) -> String {
        let mut s = self.call.clone();
        if self.call_attempts > 1 && self.call_attempt > 0 {
            s.push_str(&format!(", attempt {} of {}", self.call_attempt, self.call_attempts));
        }
        if let Some(e) = &self.last_error {
            s.push_str(&format!(", last error: {e}"));
        }
        s.trim_start_matches(", ").to_string()
    }

    /// `45% (1.2 GiB, 3.43MB/s, 0:01:02 left, 1,204 files)` from rsync's
    /// progress lines, else `1.2 GiB received (3.4 MiB/s)`.
    pub fn words(&self) -> String {
        if !self.from_rsync && self.local {
            let rate = if self.rate.is_empty() { String::new() } else { format!(" ({})", self.rate) };
            return format!("{} read from the local source{rate}", crate::output::human::size(self.bytes));
        }
        if !self.from_rsync {
            let rate = if self.rate.is_empty() { String::new() } else { format!(" ({})", self.rate) };
            return format!("{} received{rate}", crate::output::human::size(self.bytes));
        }
        let of = if self.listing { " of what is listed so far" } else { "" };
        format!(
            "{}%{of} ({}, {}, {} left, {} files)",
            self.percent,
            crate::output::human::size(self.bytes),
            if self.rate.is_empty() { "-" } else { &self.rate },
            if self.eta.is_empty() { "-" } else { &self.eta },
            crate::output::human::count(self.files)
        )
    }
}

/// What the running attempt is doing, shared between the pass (which
/// notes each rsync call's tries, [`AttemptNote::call`]) and the
/// heartbeats that save it in the state's `running` record, so that
/// `status` says "attempt 2 of 3, last error: …" while the third runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct AttemptNote(std::sync::Arc<std::sync::Mutex<Noted>>);

/// [`AttemptNote`]'s content.
#[derive(Clone, Debug, Default)]
struct Noted {
    /// Counts the changes, so that a heartbeat can follow each at once.
    generation: u64,
    attempt: u64,
    started: Option<Epoch>,
    call: String,
    call_attempt: u32,
    call_attempts: u32,
    last_error: Option<String>,
}

impl AttemptNote {
    fn with<T>(&self, f: impl FnOnce(&mut Noted) -> T) -> T {
        let mut noted = self.0.lock().unwrap_or_else(|e| e.into_inner());
        noted.generation += 1;
        f(&mut noted)
    }

    /// Which change the note is at ([`Reporter::watching`]).
    fn generation(&self) -> u64 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).generation
    }

    /// Attempt number `n` of the tree starts at `started`; `last_error`
    /// is the previous attempt's, while this one has not failed a try yet.
    pub fn begin(&self, n: u64, started: Epoch, last_error: Option<&str>) {
        self.with(|a| {
            *a = Noted {
                generation: a.generation,
                attempt: n,
                started: Some(started),
                last_error: last_error.map(first_line),
                ..Noted::default()
            }
        });
    }

    /// Try `k` of `of` of the rsync call `what` starts.
    pub fn call(&self, what: &str, k: u32, of: u32) {
        self.with(|a| {
            a.call = what.to_string();
            a.call_attempt = k;
            a.call_attempts = of;
        });
    }

    /// A try failed with `error` (its first line is kept); the next try
    /// is the one that counts now, while the backoff waits for it.
    pub fn failed(&self, error: &str) {
        self.with(|a| {
            a.last_error = Some(first_line(error));
            if a.call_attempt < a.call_attempts {
                a.call_attempt += 1;
            }
        });
    }

    /// Copy the attempt's fields into `r`.
    pub fn fill(&self, r: &mut Running) {
        let a = self.0.lock().unwrap_or_else(|e| e.into_inner());
        r.attempt = a.attempt;
        r.attempt_started = a.started.clone();
        r.call = a.call.clone();
        r.call_attempt = a.call_attempt;
        r.call_attempts = a.call_attempts;
        r.last_error = a.last_error.clone();
    }
}

/// The first line of a message.
fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// How often a log line (without a terminal) and a heartbeat are written,
/// and after how long the first log line comes (a call that ends sooner
/// is not slow); in debug builds (the tests) `RRR_TEST_PROGRESS_MS`
/// shortens all three.
fn periods() -> Periods {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("RRR_TEST_PROGRESS_MS").ok().and_then(|v| v.parse().ok()) {
        let d = Duration::from_millis(ms);
        return Periods { log: d, beat: d, first_log: d };
    }
    Periods { log: Duration::from_secs(30), beat: Duration::from_secs(10), first_log: Duration::from_secs(10) }
}

/// See [`periods`].
struct Periods {
    log: Duration,
    beat: Duration,
    first_log: Duration,
}

/// How long an rsync may be silent before its watcher hears of it
/// ([`crate::sys::rsync::Output::Quiet`]): often enough for the heartbeat.
pub(crate) fn quiet_period() -> Duration {
    periods().beat.min(Duration::from_secs(1))
}

/// Turns a long rsync's output, and its silences, into the bar, log lines
/// and heartbeats.
pub(crate) struct Reporter<'a> {
    bar: Option<ProgressBar>,
    running: Running,
    log_every: Duration,
    beat_every: Duration,
    first_log: Duration,
    started: Instant,
    last_log: Option<Instant>,
    last_beat: Instant,
    heartbeat: Box<dyn FnMut(&Running) + 'a>,
    /// The attempt's note and the change last written ([`Reporter::watching`]).
    note: Option<(AttemptNote, u64)>,
}

impl<'a> Reporter<'a> {
    /// Start reporting `phase`; the heartbeat is written at once (the
    /// state then shows the running pass) and then every ten seconds.
    pub fn new(bar: bool, phase: &str, started: Epoch, heartbeat: impl FnMut(&Running) + 'a) -> Reporter<'a> {
        let Periods { log: log_every, beat: beat_every, first_log } = periods();
        let mut r = Reporter {
            bar: bar.then(|| crate::output::progress::percent(true, &format!("rmirror {phase}"))),
            running: Running { phase: phase.to_string(), started: Some(started), ..Running::default() },
            log_every,
            beat_every,
            first_log,
            started: Instant::now(),
            last_log: None,
            last_beat: Instant::now(),
            heartbeat: Box::new(heartbeat),
            note: None,
        };
        (r.heartbeat)(&r.running);
        r
    }

    /// Also beat as soon as `note` changes (a try of the rsync call
    /// failed, the next one starts), not only every ten seconds: `status`
    /// says "attempt 2 of 3, last error: …" while the second try runs.
    pub fn watching(mut self, note: &AttemptNote) -> Self {
        self.note = Some((note.clone(), note.generation()));
        self
    }

    /// How long rsync may be silent before [`Reporter::output`] wants a
    /// [`Output::Quiet`]: often enough for the heartbeat.
    pub fn quiet_period(&self) -> Duration {
        quiet_period()
    }

    /// What rsync said (anything but a progress line only counts as time
    /// passing), or that it said nothing for a while.
    pub fn output(&mut self, out: Output<'_>) {
        let pid = match out {
            Output::Line(line) => {
                self.progress_line(line);
                None
            }
            Output::Quiet { pid } => Some(pid),
        };
        let log_due = self.bar.is_none()
            && match self.last_log {
                Some(t) => t.elapsed() >= self.log_every,
                None => self.started.elapsed() >= self.first_log,
            };
        let noted = self.note.as_mut().is_some_and(|(note, seen)| {
            let now = note.generation();
            std::mem::replace(seen, now) != now
        });
        let beat_due = noted || self.last_beat.elapsed() >= self.beat_every;
        if !log_due && !beat_due {
            return;
        }
        if let Some(pid) = pid.filter(|_| !self.running.from_rsync) {
            let (bytes, local) = match received(pid) {
                Some(b) => (Some(b), false),
                // No TCP socket: a local source (or not connected yet).
                None => (read_locally(pid), true),
            };
            if let Some(bytes) = bytes {
                let secs = self.started.elapsed().as_secs_f64().max(0.001);
                self.running.bytes = bytes;
                self.running.rate = crate::output::human::rate(bytes as f64 / secs);
                self.running.local = local;
            }
        }
        if log_due {
            self.last_log = Some(Instant::now());
            let after = crate::output::human::duration(self.started.elapsed().as_secs_f64());
            tracing::info!(kind = "progress", "{} {} after {after}", self.running.phase, self.running.words());
        }
        if beat_due {
            self.last_beat = Instant::now();
            (self.heartbeat)(&self.running);
        }
    }

    /// A `--info=progress2` line updates the running pass and the bar.
    fn progress_line(&mut self, line: &str) {
        let Some(p) = parse_progress2(line) else { return };
        let r = &mut self.running;
        r.from_rsync = true;
        r.bytes = p.bytes;
        r.percent = p.percent.min(100);
        r.rate = p.rate;
        r.eta = p.eta;
        r.files = p.files.unwrap_or(r.files);
        r.listing = p.listing;
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(r.percent));
            let words = r.words();
            bar.set_message(words.split_once(' ').map_or(String::new(), |(_, w)| w.to_string()));
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
            r.output(Output::Line(">f+++++++++ 200000 f1"));
            r.output(Output::Line("      1,200,000  20%    3.43MB/s    0:00:05 (xfr#6, to-chk=24/31)"));
            r.finish();
        }
        assert_eq!(beats.len(), 3, "one at the start, one per output when each is due");
        assert_eq!((beats[0].bytes, beats[1].bytes, beats[1].from_rsync), (0, 0, false));
        let last = &beats[2];
        assert_eq!((last.bytes, last.percent, last.files, last.listing), (1_200_000, 20, 6, false));
        assert_eq!(last.words(), "20% (1.1 MiB, 3.43MB/s, 0:00:05 left, 6 files)");
    }

    #[test]
    fn silence_beats_on_the_clock_and_says_what_arrived() {
        let mut beats: Vec<Running> = Vec::new();
        {
            let mut r = Reporter::new(false, "bootstrap", Epoch::parse("1700000000").unwrap(), |run: &Running| {
                beats.push(run.clone())
            });
            (r.beat_every, r.first_log) = (Duration::from_secs(3600), Duration::from_secs(3600));
            // No process has this pid (above any pid_max): no bytes known.
            let nobody = i32::MAX as u32;
            // A call that is not slow yet logs nothing.
            r.output(Output::Quiet { pid: nobody });
            assert!(r.last_log.is_none(), "not slow yet");
            // Once it is, the log is due, the beat is not.
            r.first_log = Duration::ZERO;
            r.output(Output::Quiet { pid: nobody });
            assert!(r.last_log.is_some(), "slow: a line");
            r.beat_every = Duration::ZERO;
            r.output(Output::Quiet { pid: nobody });
        }
        assert_eq!(beats.len(), 2, "the start and the due one");
        assert_eq!(beats[1].words(), "0 B received", "no such process: nothing known");
        let local = Running { bytes: 3 << 20, rate: "1.0 MiB/s".into(), local: true, ..Running::default() };
        assert_eq!(local.words(), "3.0 MiB read from the local source (1.0 MiB/s)");
        let run = Running { bytes: 3 << 20, rate: "1.0 MiB/s".into(), ..Running::default() };
        assert_eq!(run.words(), "3.0 MiB received (1.0 MiB/s)");
    }
}
