//! Operator hooks: `rmirror --on-pass CMD` (config `on_pass`) runs CMD
//! through `/bin/sh -c` after every pass that changed something or failed,
//! with the pass in `RRR_*` environment variables (which passes and which
//! variables: `mirror::on_pass`), under a timeout (10 minutes by
//! default). Its output is logged (not mixed into rrr's stdout); a hook
//! that fails or runs out of time is a warning in the log and changes
//! neither the pass's exit status nor `check`.
//!
//! `watch --on-batch CMD` runs CMD the same way after recorded batches,
//! but beside the daemon (`Background`): recording never waits for it.

use crate::sys::child::{collect, Child, Ties};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The default time a hook may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How a hook ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exit 0.
    Ok,
    /// Another exit status, or killed by a signal (`None`).
    Failed(Option<i32>),
    /// Still running after the timeout: its process group was killed.
    TimedOut,
    /// `/bin/sh` could not be started.
    NotStarted(String),
}

/// How much of a hook's output is kept: the last 4 KiB.
const OUTPUT_CAP: usize = 4096;

/// Run `cmd` through `/bin/sh -c` with `env`, in its own process group
/// (killed whole on timeout or when rrr is asked to stop); its output
/// (stdout and stderr, the last [`OUTPUT_CAP`] bytes) is returned with the
/// outcome.
pub(crate) fn run(cmd: &str, env: &[(String, String)], timeout: Duration) -> (Outcome, String) {
    let mut c = Command::new("/bin/sh");
    c.arg("-c").arg(cmd).envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match Child::spawn(&mut c, Ties { own_group: true, ..Ties::default() }) {
        Ok(ch) => ch,
        Err(e) => return (Outcome::NotStarted(e.to_string()), String::new()),
    };
    let stdout = child.take_stdout().map(|s| Box::new(s) as Box<dyn Read + Send>);
    let stderr = child.take_stderr().map(|s| Box::new(s) as Box<dyn Read + Send>);
    let output = collect(stdout.into_iter().chain(stderr).collect(), OUTPUT_CAP);
    let outcome = match child.wait_until(Instant::now() + timeout) {
        Ok(Some(st)) if st.success() => Outcome::Ok,
        Ok(Some(st)) => Outcome::Failed(st.code()),
        Ok(None) => Outcome::TimedOut,
        Err(e) => Outcome::NotStarted(e.to_string()),
    };
    // A grandchild that left the group may hold a pipe open: wait briefly.
    let text = output.finish(Duration::from_millis(500));
    (outcome, text.trim_end().to_string())
}

/// Run the hook for one pass and log how it went (never an error).
pub(crate) fn after_pass(cmd: &str, timeout: Duration, env: &[(String, String)]) {
    run_and_log("on-pass", cmd, timeout, env);
}

/// Run a hook and log how it went: `label` names the option.
fn run_and_log(label: &str, cmd: &str, timeout: Duration, env: &[(String, String)]) {
    let (outcome, output) = run(cmd, env, timeout);
    let last = output.lines().last().unwrap_or("");
    let said = if last.is_empty() { String::new() } else { format!("; its last line: {last}") };
    match outcome {
        Outcome::Ok => tracing::debug!("{label} hook {cmd:?} succeeded{said}"),
        Outcome::Failed(Some(code)) => tracing::warn!("{label} hook {cmd:?} failed with exit status {code}{said}"),
        Outcome::Failed(None) => tracing::warn!("{label} hook {cmd:?} was killed by a signal{said}"),
        Outcome::TimedOut => {
            tracing::warn!(
                "{label} hook {cmd:?} still ran after {}: killed{said}",
                crate::output::human::duration(timeout.as_secs_f64())
            )
        }
        Outcome::NotStarted(e) => tracing::warn!("{label} hook {cmd:?} could not be started: {e}"),
    }
}

/// What the batches behind one `--on-batch` run recorded: those recorded
/// while the previous run went on are added up into one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub batches: u64,
    pub new: u64,
    pub delete: u64,
}

impl Recorded {
    fn add(&mut self, other: Recorded) {
        self.batches += other.batches;
        self.new += other.new;
        self.delete += other.delete;
    }
}

/// The `--on-batch` queue: at most one run going and one waiting.
#[derive(Default)]
struct Queue {
    waiting: Option<Recorded>,
    closed: bool,
}

/// A hook run by its own thread, so that the caller never waits for it:
/// one run at a time; what is recorded meanwhile waits as one more run
/// (however many batches that is), started as soon as the current one
/// ends.
pub(crate) struct Background {
    queue: Arc<(Mutex<Queue>, Condvar)>,
}

impl Background {
    /// Start the thread. `env` makes a run's `RRR_*` variables; it runs on
    /// that thread, so it may read files.
    pub(crate) fn start(
        label: &'static str,
        cmd: String,
        timeout: Duration,
        env: impl Fn(Recorded) -> Vec<(String, String)> + Send + 'static,
    ) -> std::io::Result<Background> {
        let queue: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let q = Arc::clone(&queue);
        // Its lines name the tree, as the caller's do.
        let span = tracing::Span::current();
        std::thread::Builder::new().name(label.into()).spawn(move || loop {
            let _in = span.enter();
            let next = {
                let (lock, wake) = &*q;
                let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
                while g.waiting.is_none() && !g.closed {
                    g = wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                if g.closed {
                    return;
                }
                g.waiting.take()
            };
            if let Some(rec) = next {
                run_and_log(label, &cmd, timeout, &env(rec));
            }
        })?;
        Ok(Background { queue })
    }

    /// Ask for a run after `rec` was recorded; never waits for a run.
    pub(crate) fn trigger(&self, rec: Recorded) {
        let (lock, wake) = &*self.queue;
        let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
        g.waiting.get_or_insert_with(Recorded::default).add(rec);
        wake.notify_one();
    }
}

impl Drop for Background {
    /// No run starts any more; one going ends by itself (or with rrr's
    /// stop request, which kills it).
    fn drop(&mut self) {
        let (lock, wake) = &*self.queue;
        lock.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_runs_coalesce_while_one_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (log, gate) = (dir.path().join("log"), dir.path().join("gate"));
        let cmd = format!(
            "echo \"$RRR_N\" >> {log}; while [ ! -e {gate} ]; do sleep 0.02; done",
            log = log.display(),
            gate = gate.display()
        );
        let env = |r: Recorded| vec![("RRR_N".to_string(), format!("{} {}", r.batches, r.new))];
        let bg = Background::start("test", cmd, DEFAULT_TIMEOUT, env).unwrap();
        let lines = || std::fs::read_to_string(&log).unwrap_or_default();
        let wait = |n: usize| {
            let t = Instant::now();
            while lines().lines().count() < n {
                assert!(t.elapsed() < Duration::from_secs(60), "{}", lines());
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        bg.trigger(Recorded { batches: 1, new: 1, delete: 0 });
        wait(1);
        // The first run is held at the gate: these return at once and wait as one run.
        for _ in 0..5 {
            bg.trigger(Recorded { batches: 1, new: 2, delete: 0 });
        }
        assert_eq!(lines(), "1 1\n");
        std::fs::write(&gate, "").unwrap();
        wait(2);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(lines(), "1 1\n5 10\n", "one more run for the five");
    }

    #[test]
    fn hooks_succeed_fail_and_time_out() {
        let env = vec![("RRR_STATUS".to_string(), "ok".to_string())];
        assert_eq!(run("echo $RRR_STATUS", &env, DEFAULT_TIMEOUT), (Outcome::Ok, "ok".to_string()));
        assert_eq!(run("echo no >&2; exit 3", &env, DEFAULT_TIMEOUT), (Outcome::Failed(Some(3)), "no".to_string()));
        let t = Instant::now();
        // The sleep is a grandchild of sh: the whole group goes.
        let (o, _) = run("sleep 30; true", &env, Duration::from_millis(300));
        assert_eq!(o, Outcome::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
}
