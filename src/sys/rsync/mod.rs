//! The rsync process: building its command line, running it, and judging
//! its exit.
//!
//! [`Rsync`] is a builder over the `rsync` program (or `RRR_RSYNC`). Its
//! `Display` is the shell-quoted command line, without the environment, so a
//! `RSYNC_PASSWORD` never reaches a log. [`Rsync::run_with`] passes stdout
//! lines to a callback as they arrive (progress), drains stderr on its own
//! thread, keeps its tail, and returns either an [`RsyncOutcome`] or an
//! [`RsyncError`] carrying the exit code, the stderr tail and a
//! [`RsyncFailure`] class that says whether a retry may help.
//!
//! Files that disappeared at the origin are not failures. rsync reports them
//! in two ways (checked with rsync 3.5.0, both locally and against a daemon):
//!
//! * a path in `--files-from` (or a source argument) that does not exist:
//!   `rsync: [sender] link_stat "/src/p" failed: No such file or directory (2)`,
//!   exit code 23. Older rsync (< 3.2) omits the `[sender]`. Through a daemon
//!   the path is module-relative and followed by ` (in module)`.
//! * a file listed but gone when its turn to be sent came:
//!   `file has vanished: "/src/p"`, exit code 24.
//!
//! Exit 24, and exit 23 whose stderr holds nothing but such lines (plus
//! rsync's closing summary), count as success with
//! [`RsyncOutcome::vanished`] filled. This is where the reference client
//! went wrong with rsync >= 3.2 (protocol.md 12.8): its `^rsync: link_stat` pattern
//! no longer matched and each vanished file cost 72 s of sleeps and a
//! give-up.
//!
//! Other per-file trouble at the origin (a file the daemon may not read, a
//! path through a symlink out of the module: `[sender]` with an errno other
//! than ENOENT) is not a failure of the run either: the rest arrived, and
//! the paths are in [`RsyncOutcome::failed`]. Lines are classified by their
//! role tag and errno ([`classify`]); a cause that no retry can cure
//! (unknown module or host, a full disk or a permission problem on our
//! side) is in [`RsyncError::cause`].
//!
//! Every rsync child gets `PR_SET_PDEATHSIG(SIGTERM)`, so none outlives
//! rrr, even after kill -9 (the signal follows the death of the *thread*
//! that spawned it: rrr spawns rsync from the thread that waits for it);
//! and while it runs, SIGINT/SIGTERM to rrr are passed on to it
//! ([`crate::signals::ForwardTo`]).
//!
//! rsync runs with `LANG=C` and `LC_ALL=C`, so its messages and its escaping
//! of non-ASCII bytes in names (`\#303\#251` for `é`) do not depend on the
//! user's locale; `vanished_path` undoes that escaping ([`unescape`]).

use crate::sys::child::{for_each_line, Child, Tail, Ties};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

/// How much of rsync's stderr is kept: the last 64 KiB.
const STDERR_CAP: usize = 64 * 1024;
/// How many stderr lines [`RsyncError`]'s `Display` shows.
const DISPLAY_LINES: usize = 20;

/// A command line for `rsync`, to be run once or many times.
#[derive(Debug, Clone)]
pub struct Rsync {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(String, OsString)>,
    stall_limit: Option<Duration>,
}

impl Default for Rsync {
    fn default() -> Self {
        Rsync::new()
    }
}

impl Rsync {
    /// `rsync` from PATH, or the program named by env RRR_RSYNC if set.
    pub fn new() -> Rsync {
        let program =
            std::env::var_os("RRR_RSYNC").filter(|p| !p.is_empty()).unwrap_or_else(|| OsString::from("rsync"));
        Rsync::with_program(program)
    }

    /// A specific rsync binary, ignoring `RRR_RSYNC`.
    pub fn with_program(program: impl AsRef<OsStr>) -> Rsync {
        Rsync { program: program.as_ref().to_owned(), args: Vec::new(), envs: Vec::new(), stall_limit: None }
    }

    /// rrr's own `--timeout`: stop rsync (SIGTERM, then SIGKILL) once its
    /// processes moved no data and used no CPU for `limit` ([`activity`]),
    /// and fail with [`RsyncFailure::Timeout`]. It guards what rsync's
    /// `--timeout` guards without its cost: with `--timeout` a default
    /// rsyncd sends a keep-alive at once, and Nagle's algorithm makes it
    /// wait for our delayed ACK, 40 ms on every connection.
    pub fn stall_limit(&mut self, limit: Duration) -> &mut Self {
        self.stall_limit = Some(limit);
        self
    }

    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(a.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, it: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(it.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for rsync, e.g. `RSYNC_PASSWORD`.
    /// Environment variables are never shown by `Display`. `LANG` and
    /// `LC_ALL` are always `C`. Only the tests set one: a mirror passes
    /// its password as `--password-file`.
    #[cfg(test)]
    pub fn env(&mut self, k: &str, v: impl AsRef<OsStr>) -> &mut Self {
        self.envs.retain(|(key, _)| key != k);
        self.envs.push((k.to_owned(), v.as_ref().to_owned()));
        self
    }

    /// Runs rsync to completion without looking at its stdout.
    pub fn run(&self) -> Result<RsyncOutcome, RsyncError> {
        self.run_with(&mut |_| {})
    }

    /// Runs rsync to completion. Each stdout line (without its line end) is
    /// passed to `on_stdout_line` as it arrives; add `--out-format=…` for a
    /// line per transferred file. stderr is drained on its own thread; the
    /// last 64 KiB are kept.
    pub fn run_with(&self, on_stdout_line: &mut dyn FnMut(&str)) -> Result<RsyncOutcome, RsyncError> {
        self.run_watched(None, &mut |out| {
            if let Output::Line(line) = out {
                on_stdout_line(line)
            }
        })
    }

    /// [`Rsync::run_with`] for a long rsync that may print nothing for a
    /// long time (a whole-tree pass without `--info=progress2`): `on` also
    /// gets [`Output::Quiet`] each time `quiet` passes without a line, so
    /// that a heartbeat does not depend on rsync's output.
    pub fn run_watched(
        &self,
        quiet: Option<Duration>,
        on: &mut dyn FnMut(Output<'_>),
    ) -> Result<RsyncOutcome, RsyncError> {
        tracing::debug!("running {self}");
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env("LANG", "C")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let not_started = |stderr: String| RsyncError {
            command: self.to_string(),
            code: None,
            signal: None,
            stderr,
            class: RsyncFailure::NotStarted,
            cause: None,
        };
        // No rsync outlives rrr, even after kill -9 (rsync then removes
        // its temp file and stops its own receiver); a stop of rrr is
        // passed on to it.
        let ties = Ties { die_with_parent: true, forward_stop: true, own_group: false };
        let mut child = Child::spawn(&mut cmd, ties).map_err(|e| not_started(e.to_string()))?;

        let stderr = child.take_stderr().expect("stderr is piped");
        let stderr_thread = match thread::Builder::new().name("rsync-stderr".into()).spawn(move || drain_stderr(stderr))
        {
            Ok(t) => t,
            Err(e) => {
                child.kill();
                return Err(not_started(format!("cannot start a thread to read its stderr: {e}")));
            }
        };

        let pid = child.id();
        // Stopped (the sender dropped) once rsync has exited, before it is
        // reaped: until then `pid` is rsync's.
        let (stop_watchdog, stopped) = std::sync::mpsc::channel::<()>();
        let watchdog = self.stall_limit.map(|limit| thread::spawn(move || stall_watchdog(pid, limit, stopped)));

        // A File, so that the reader and the poll share it by reference.
        let stdout = std::fs::File::from(std::os::fd::OwnedFd::from(child.take_stdout().expect("stdout is piped")));
        let quiet = quiet.map(|d| (stdout.as_fd(), d));
        // A read error on our end of the pipe only costs progress lines;
        // rsync's exit status still decides. The child is not reaped
        // before this returns, so `pid` is still rsync's in `Quiet`.
        let _ = for_each_line(&stdout, quiet, |line| match line {
            Some(line) => on(Output::Line(&String::from_utf8_lossy(line))),
            None => on(Output::Quiet { pid }),
        });

        // The watchdog may signal `pid` until rsync has exited but is not
        // reaped yet, so that its pid cannot have been reused by then.
        child.wait_exited();
        drop(stop_watchdog);
        let stalled = watchdog.and_then(|w| w.join().ok()).flatten();
        let status = child.wait();
        let stderr = stderr_thread.join().unwrap_or_else(|_| StderrSummary::default());
        let status = status.map_err(|e| RsyncError {
            command: self.to_string(),
            code: None,
            signal: None,
            stderr: format!("cannot wait for rsync: {e}"),
            class: RsyncFailure::Other,
            cause: None,
        })?;
        if let Some(limit) = stalled {
            // Its exit code (20 after our SIGTERM) would only mislead.
            return Err(RsyncError {
                command: self.to_string(),
                code: None,
                signal: None,
                stderr: format!(
                    "{}[rrr] rsync moved no data and used no CPU for {} s: stopped (--timeout)\n",
                    stderr.tail,
                    limit.as_secs()
                ),
                class: RsyncFailure::Timeout,
                cause: None,
            });
        }
        self.judge(status, stderr)
    }

    fn judge(&self, status: ExitStatus, err: StderrSummary) -> Result<RsyncOutcome, RsyncError> {
        let Some(code) = status.code() else {
            use std::os::unix::process::ExitStatusExt;
            return Err(RsyncError {
                command: self.to_string(),
                code: None,
                signal: status.signal(),
                stderr: err.tail,
                class: RsyncFailure::Signal,
                cause: err.cause,
            });
        };
        // Exit 23/24 caused only by files missing at the origin or files
        // the origin could not send: everything else arrived.
        let only_per_file = !err.other_errors && (!err.vanished.is_empty() || !err.failed.is_empty());
        match code {
            0 | 24 => {}
            23 if only_per_file => {}
            _ => {
                return Err(RsyncError {
                    command: self.to_string(),
                    code: Some(code),
                    signal: None,
                    stderr: err.tail,
                    class: RsyncFailure::from_code(code),
                    cause: err.cause,
                })
            }
        }
        Ok(RsyncOutcome {
            vanished: err.vanished,
            failed: err.failed,
            deletion_skipped: err.deletion_skipped,
            stderr: err.tail,
            code,
        })
    }
}

/// Watch rsync `pid` until `stopped` says it exited; when its [`activity`]
/// stays the same for `limit`, stop it and return `Some(limit)`.
fn stall_watchdog(pid: u32, limit: Duration, stopped: std::sync::mpsc::Receiver<()>) -> Option<Duration> {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;
    let look_every = (limit / 10).clamp(Duration::from_millis(100), Duration::from_secs(2));
    let mut last = activity(pid);
    let mut since = Instant::now();
    loop {
        match stopped.recv_timeout(look_every) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return None,
        }
        let now = activity(pid);
        if now != last {
            (last, since) = (now, Instant::now());
            continue;
        }
        if since.elapsed() < limit {
            continue;
        }
        // The caller reports the failure (with its retries).
        tracing::debug!("rsync moved no data and used no CPU for {} s: stopping it (--timeout)", limit.as_secs());
        // Our child, which is not reaped before `stopped`: `pid` is still rsync's.
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_secs(10)) {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
        return Some(limit);
    }
}

/// What rsync `pid` and its descendants (the receiver it forks, the
/// local sender, an ssh) have done so far: bytes read and written
/// (`/proc/PID/io`, sockets and pipes included) plus CPU ticks
/// (`/proc/PID/stat`). It changes while rsync moves data or works (a
/// generator comparing a large tree reads nothing but uses CPU) and stays
/// the same while every process waits. `None` where `/proc` cannot tell,
/// which [`stall_limit_works`] finds out first.
fn activity(pid: u32) -> Option<u64> {
    use crate::sys::proc;
    fn one(pid: u32) -> Option<u64> {
        let (rchar, wchar) = proc::io_bytes(pid)?;
        Some(rchar + wchar + proc::stat(pid)?.cpu_ticks())
    }
    let mut total = one(pid)?;
    let mut todo = proc::children(pid);
    let mut seen = 0;
    while let Some(c) = todo.pop() {
        seen += 1;
        if seen > 64 {
            break;
        }
        total = total.wrapping_add(one(c).unwrap_or(0));
        todo.extend(proc::children(c));
    }
    Some(total)
}

/// Whether [`Rsync::stall_limit`] can see rsync's activity here: `/proc`
/// with per-process I/O counters and children lists (Linux with
/// CONFIG_PROC_CHILDREN). Where it cannot, rsync's own `--timeout` is used.
pub fn stall_limit_works() -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORKS.get_or_init(|| activity(std::process::id()).is_some() && crate::sys::proc::lists_children())
}

/// The shell-quoted command line: program and arguments, no environment.
impl fmt::Display for Rsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::sys::child::shell_quote;
        f.write_str(&shell_quote(&self.program.to_string_lossy()))?;
        for a in &self.args {
            write!(f, " {}", shell_quote(&a.to_string_lossy()))?;
        }
        Ok(())
    }
}

/// A run that rsync finished well enough: exit 0, exit 24 (files vanished),
/// or exit 23 caused only by missing source files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsyncOutcome {
    /// Paths rsync reported missing or vanished, as rsync printed them
    /// (unescaped): absolute for a local source, module-relative through a
    /// daemon.
    pub vanished: Vec<String>,
    /// Paths the origin could not send (`[sender] … Permission denied
    /// (13)`, a symlink out of the module): the rest of the run arrived.
    pub failed: Vec<FailedPath>,
    /// rsync said "IO error encountered -- skipping file deletion": a read
    /// error on the origin made it leave `--delete` undone.
    pub deletion_skipped: bool,
    /// The tail of rsync's stderr.
    pub stderr: String,
    /// rsync's exit code: 0, 23 or 24.
    pub code: i32,
}

/// A path the origin's rsync could not send, with rsync's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedPath {
    /// As rsync printed it (unescaped): absolute for a local source,
    /// module-relative (maybe with a leading `/`) through a daemon.
    pub path: String,
    pub message: String,
}

/// rsync could not be started, was killed, or exited with a failure.
#[derive(Debug)]
pub struct RsyncError {
    /// The shell-quoted command line.
    pub command: String,
    /// The exit code; `None` when rsync was killed by a signal or could not
    /// be started.
    pub code: Option<i32>,
    /// The signal that killed rsync.
    pub signal: Option<i32>,
    /// The tail of rsync's stderr; for [`RsyncFailure::NotStarted`] the
    /// reason it could not start.
    pub stderr: String,
    pub class: RsyncFailure,
    /// A cause read from stderr that no retry can cure.
    pub cause: Option<Cause>,
}

impl RsyncError {
    /// Whether the same command may succeed when tried again soon.
    pub fn is_retryable(&self) -> bool {
        self.class.is_retryable() && self.cause.is_none()
    }

    /// The name failures are counted under: the cause, else the class.
    pub fn kind(&self) -> &'static str {
        self.cause.map_or(self.class.as_str(), Cause::as_str)
    }

    /// The daemon refused the connection because its slots were taken
    /// (`@ERROR: max connections (N) reached -- try again later`).
    pub fn is_connection_limit(&self) -> bool {
        self.stderr.contains("@ERROR: max connections")
    }
}

/// Failures that are the same on every attempt
/// (docs/decisions.md#retries): retrying them only delays the error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// `@ERROR: Unknown module 'x'`.
    UnknownModule,
    /// `@ERROR: auth failed on module x`.
    AuthFailed,
    /// The host name does not exist (EAI_NONAME; EAI_AGAIN is transient).
    UnknownHost,
    /// ENOSPC or EDQUOT on our side.
    NoSpace,
    /// EACCES, EPERM or EROFS on our side (`[receiver]`, `[generator]`).
    LocalPermission,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::UnknownModule => "unknown_module",
            Cause::AuthFailed => "auth_failed",
            Cause::UnknownHost => "unknown_host",
            Cause::NoSpace => "no_space",
            Cause::LocalPermission => "local_permission",
        }
    }
}

/// What kind of failure an [`RsyncError`] is (codes from rsync(1)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RsyncFailure {
    /// The program could not be started.
    NotStarted,
    /// 5 (starting the client-server protocol), 10 (socket I/O),
    /// 12 (protocol data stream), 35 (daemon connection timeout).
    Connection,
    /// 30: timeout in data send/receive (`--timeout`).
    Timeout,
    /// 23 with errors other than missing files.
    Partial,
    /// 1, 2, 4, 6, 13, 14, 20, 21, 22, 25: usage, incompatibility, rsync's
    /// own trouble, interrupted (20), `--max-delete` reached (25).
    Protocol,
    /// Killed by a signal.
    Signal,
    /// Any other code, e.g. 3 (file selection), 11 (file I/O).
    Other,
}

impl RsyncFailure {
    /// The class of a failing exit code (23 is taken as real errors).
    pub fn from_code(code: i32) -> RsyncFailure {
        match code {
            5 | 10 | 12 | 35 => RsyncFailure::Connection,
            30 => RsyncFailure::Timeout,
            23 => RsyncFailure::Partial,
            1 | 2 | 4 | 6 | 13 | 14 | 20 | 21 | 22 | 25 => RsyncFailure::Protocol,
            _ => RsyncFailure::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RsyncFailure::NotStarted => "not_started",
            RsyncFailure::Connection => "connection",
            RsyncFailure::Timeout => "timeout",
            RsyncFailure::Partial => "partial",
            RsyncFailure::Protocol => "protocol",
            RsyncFailure::Signal => "signal",
            RsyncFailure::Other => "other",
        }
    }

    /// Whether the same command may succeed later: network trouble,
    /// timeouts, partial transfers and unclassified codes. Not: a missing
    /// program, usage or protocol errors, `--max-delete`, or an interrupt
    /// (a signal, or code 20) which usually means we are being stopped.
    pub fn is_retryable(self) -> bool {
        match self {
            RsyncFailure::Connection | RsyncFailure::Timeout | RsyncFailure::Partial | RsyncFailure::Other => true,
            RsyncFailure::NotStarted | RsyncFailure::Protocol | RsyncFailure::Signal => false,
        }
    }
}

impl fmt::Display for RsyncFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl RsyncError {
    /// The stderr line that says what went wrong: the one that gave the
    /// cause, else the last one that is not rsync's closing
    /// `rsync error: … (code N) at …` summary, else the last one.
    pub fn key_line(&self) -> &str {
        let lines: Vec<&str> = self.stderr.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
        if let Some(c) = self.cause {
            if let Some(l) = lines.iter().find(|l| classify(l) == Line::Error(Some(c))) {
                return l;
            }
        }
        let key = lines.iter().rev().find(|l| !l.starts_with("rsync error: ")).or(lines.last()).copied().unwrap_or("");
        if key.contains("connection unexpectedly closed") {
            // Only the symptom: the cause is the transport's own line before
            // it (ssh's "Connection refused", a failed exec of the shell).
            if let Some(cause) =
                lines.iter().find(|l| !l.starts_with("rsync error: ") && !l.contains("connection unexpectedly closed"))
            {
                return cause;
            }
        }
        key
    }

    /// The exact command and the tail of its stderr, for `-v` and for the
    /// operator who reproduces a failure by hand.
    pub fn details(&self) -> String {
        let mut s = self.command.clone();
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let shown = &lines[lines.len().saturating_sub(DISPLAY_LINES)..];
        if shown.len() < lines.len() {
            s.push_str(&format!("\n[{} earlier lines of stderr]", lines.len() - shown.len()));
        }
        for line in shown {
            s.push('\n');
            s.push_str(line);
        }
        s
    }
}

/// One line: the exit code (or signal) and [`RsyncError::key_line`]. The
/// command and the rest of stderr are in [`RsyncError::details`].
impl fmt::Display for RsyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.class, self.code, self.signal) {
            (RsyncFailure::NotStarted, _, _) => {
                return write!(f, "could not start rsync: {}: {}", self.command, self.stderr)
            }
            (_, Some(code), _) => write!(f, "rsync failed with code {code}")?,
            (_, None, Some(sig)) => write!(f, "rsync was killed by signal {sig}")?,
            (_, None, None) => write!(f, "rsync failed")?,
        }
        match self.key_line() {
            "" => Ok(()),
            l => write!(f, ": {l}"),
        }
    }
}

impl std::error::Error for RsyncError {}

/// The paths in rsync's messages about missing source files, unescaped:
/// `rsync: link_stat "/p" failed: No such file or directory (2)` (rsync
/// < 3.2), `rsync: [sender] link_stat "/p" failed: …` (>= 3.2) and
/// `file has vanished: "/p"` (with or without `rsync: [sender] `). A
/// ` (in module)` after the quoted path is dropped. (The summary reads
/// them one line at a time; this is the whole-stderr form the tests use.)
#[cfg(test)]
fn vanished_paths(stderr: &str) -> Vec<String> {
    stderr.lines().filter_map(vanished_path).collect()
}

/// The path of one vanished-file message, if `line` is one.
fn vanished_path(line: &str) -> Option<String> {
    const LINK_STAT: &str = "link_stat \"";
    const ENOENT: &str = " failed: No such file or directory";
    const VANISHED: &str = "file has vanished: \"";
    let line = line.trim_end_matches(['\r', '\n']);
    let quoted = if let Some(at) = line.find(LINK_STAT) {
        if !line.starts_with("rsync: ") {
            return None;
        }
        let rest = &line[at + LINK_STAT.len()..];
        &rest[..rest.rfind(ENOENT)?]
    } else if let Some(at) = line.find(VANISHED) {
        let head = &line[..at];
        if !(head.is_empty() || head.starts_with("rsync: ")) {
            return None;
        }
        &line[at + VANISHED.len()..]
    } else {
        return None;
    };
    // `quoted` is `p"` or `p" (in module)`; p itself may hold quotes.
    let path = match quoted.strip_suffix('"') {
        Some(p) => p,
        None => &quoted[..quoted.rfind("\" (in ")?],
    };
    Some(unescape(path))
}

/// Undoes rsync's escaping of bytes it cannot print: `\#ooo` (three octal
/// digits) is that byte. Invalid UTF-8 is replaced (U+FFFD).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = |c: u8| (b'0'..=b'7').contains(&c);
        if b[i] == b'\\' && i + 5 <= b.len() && b[i + 1] == b'#' && b[i + 2..i + 5].iter().all(|&c| octal(c)) {
            let v = b[i + 2..i + 5].iter().fold(0u32, |v, &c| v * 8 + u32::from(c - b'0'));
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 5;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes `paths` NUL-separated (with a trailing NUL) into a new hidden
/// file `.rrr-files-from-*` in `dir`, for `--from0 --files-from=FILE`.
/// The file is removed when the returned value is dropped.
pub fn write_files_from(dir: &Path, paths: &[&str]) -> io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new().prefix(".rrr-files-from-").tempfile_in(dir)?;
    {
        let mut w = io::BufWriter::new(file.as_file_mut());
        for p in paths {
            if p.contains('\0') {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("path {p:?} contains a NUL byte")));
            }
            w.write_all(p.as_bytes())?;
            w.write_all(b"\0")?;
        }
        w.flush()?;
    }
    Ok(file)
}

/// One line of rsync's `--info=progress2`: the whole transfer so far,
/// `   1,200,000  20%    3.43MB/s    0:00:05 (xfr#6, to-chk=24/31)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress2 {
    /// Bytes transferred so far.
    pub bytes: u64,
    pub percent: u8,
    /// As rsync prints it: `3.43MB/s`.
    pub rate: String,
    /// As rsync prints it: `0:00:05` (time left, or the total at the end).
    pub eta: String,
    /// Files transferred so far (`xfr#`).
    pub files: Option<u64>,
    /// Files left to check and known in all (`to-chk=24/31`); with
    /// incremental recursion (`ir-chk`) the total still grows.
    pub to_check: Option<(u64, u64)>,
    /// `ir-chk`: rsync is still listing the tree, the percentage is of what it found so far.
    pub listing: bool,
}

/// Parse a `--info=progress2` line; `None` for any other line (the
/// itemized `--out-format` lines come on the same stream).
pub fn parse_progress2(line: &str) -> Option<Progress2> {
    let mut it = line.split_whitespace();
    let bytes = it.next()?;
    if !bytes.bytes().all(|b| b.is_ascii_digit() || b == b',') || !bytes.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let bytes = bytes.replace(',', "").parse().ok()?;
    let percent = it.next()?.strip_suffix('%')?.parse().ok()?;
    let rate = it.next()?;
    let eta = it.next()?;
    if !rate.ends_with("/s") || !eta.contains(':') {
        return None;
    }
    let rest: String = it.collect::<Vec<_>>().join(" ");
    let files = rest.strip_prefix("(xfr#").and_then(|r| r.split(',').next()).and_then(|n| n.parse().ok());
    let (listing, chk) = match (rest.find("to-chk="), rest.find("ir-chk=")) {
        (Some(i), _) => (false, Some(&rest[i + 7..])),
        (None, Some(i)) => (true, Some(&rest[i + 7..])),
        (None, None) => (false, None),
    };
    let to_check = chk.and_then(|c| {
        let (a, b) = c.trim_end_matches(')').split_once('/')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    });
    Some(Progress2 { bytes, percent, rate: rate.to_string(), eta: eta.to_string(), files, to_check, listing })
}

/// What a watched rsync ([`Rsync::run_watched`]) said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'l> {
    /// A line of its stdout, without the line end.
    Line(&'l str),
    /// Nothing for a while; `pid` is the running rsync's (see [`received_bytes`]).
    Quiet { pid: u32 },
}

/// About how many bytes the running rsync `pid` has received: the most
/// any one of its rsync processes (the client and the receiver it forks)
/// has read, from `/proc/PID/io` (`rchar`: sockets, pipes and files). An
/// estimate for a progress line when rsync prints none; `None` where
/// `/proc` cannot tell.
pub fn received_bytes(pid: u32) -> Option<u64> {
    // Not an ssh it runs: that one reads what the receiver reads again.
    use crate::sys::proc;
    let is_rsync = |p: &u32| proc::comm(*p).is_some_and(|c| c == "rsync");
    std::iter::once(pid).chain(proc::children(pid)).filter(is_rsync).filter_map(|p| Some(proc::io_bytes(p)?.0)).max()
}

/// What the stderr thread learned.
#[derive(Debug, Default)]
struct StderrSummary {
    /// Paths of missing/vanished files, all of them.
    vanished: Vec<String>,
    /// Paths the origin could not send.
    failed: Vec<FailedPath>,
    deletion_skipped: bool,
    /// A line that is neither about one file of the origin nor harmless.
    other_errors: bool,
    /// The first cause no retry can cure.
    cause: Option<Cause>,
    /// The last [`STDERR_CAP`] bytes, starting at a line.
    tail: String,
}

fn drain_stderr(r: impl Read) -> StderrSummary {
    let mut judge = StderrJudge::default();
    let mut tail = Tail::new(STDERR_CAP);
    let res = for_each_line(r, None, |line| {
        if let Some(line) = line {
            judge.line(&String::from_utf8_lossy(line));
            tail.push(line);
        }
    });
    if let Err(e) = res {
        judge.s.other_errors = true;
        tail.push(format!("[rrr: cannot read rsync's stderr: {e}]").as_bytes());
    }
    StderrSummary { tail: tail.into_string(), ..judge.s }
}

/// What one line of rsync's stderr says (see [`classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Empty, or rsync's closing summary of a run with per-file trouble.
    Harmless,
    /// The summary of exit 23 (a connection reset may follow it).
    Summary23,
    /// A source file that does not exist (any more).
    Vanished(String),
    /// A file the origin's rsync could not read or send: `[sender]` with an
    /// errno other than ENOENT.
    OriginFailed(String),
    /// `--delete` was left undone because of read errors at the origin.
    DeletionSkipped,
    /// A real error, with a cause when retrying cannot help.
    Error(Option<Cause>),
}

/// Classify one stderr line by its role tag (`[sender]` is the origin's
/// side, `[receiver]`/`[generator]` ours; rsync capitalises the client's
/// role) and its errno text. The table of real messages is in the tests.
pub fn classify(line: &str) -> Line {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return Line::Harmless;
    }
    if let Some(p) = vanished_path(line) {
        return Line::Vanished(p);
    }
    if line.starts_with("rsync error: some files/attrs were not transferred") && line.contains("(code 23)") {
        return Line::Summary23;
    }
    if line.starts_with("rsync warning: some files vanished before they could be") && line.contains("(code 24)") {
        return Line::Harmless;
    }
    if line.starts_with("IO error encountered -- skipping file deletion") {
        return Line::DeletionSkipped;
    }
    if line.starts_with("@ERROR: Unknown module") {
        return Line::Error(Some(Cause::UnknownModule));
    }
    if line.starts_with("@ERROR: auth failed") {
        return Line::Error(Some(Cause::AuthFailed));
    }
    // EAI_NONAME (rsync's getaddrinfo, or ssh's); EAI_AGAIN ("Temporary
    // failure in name resolution") stays retryable.
    if (line.starts_with("rsync: getaddrinfo:") || line.starts_with("ssh: Could not resolve hostname"))
        && (line.ends_with("Name or service not known") || line.ends_with("No address associated with hostname"))
    {
        return Line::Error(Some(Cause::UnknownHost));
    }
    let Some(rest) = line.strip_prefix("rsync: ") else { return Line::Error(None) };
    let (role, rest) = match rest.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((role, rest)) => (Some(role), rest),
        None => (None, rest),
    };
    let errno = errno_of(rest);
    let ours = matches!(role.map(str::to_ascii_lowercase).as_deref(), Some("receiver" | "generator") | None);
    match (role.map(str::to_ascii_lowercase).as_deref(), errno) {
        // change_dir is the source root itself: the whole source is gone.
        (Some("sender"), Some(e)) if !rest.starts_with("change_dir") => match quoted_path(rest) {
            Some(p) if e == libc::ENOENT => Line::Vanished(p),
            Some(p) => Line::OriginFailed(p),
            None => Line::Error(None),
        },
        (_, Some(libc::ENOSPC | libc::EDQUOT)) if ours => Line::Error(Some(Cause::NoSpace)),
        (_, Some(libc::EACCES | libc::EPERM | libc::EROFS)) if ours && role.is_some() => {
            Line::Error(Some(Cause::LocalPermission))
        }
        _ => Line::Error(None),
    }
}

/// The errno at the end of a message: `… Permission denied (13)`.
fn errno_of(msg: &str) -> Option<i32> {
    let open = msg.strip_suffix(')')?.rfind(" (")?;
    msg[open + 2..msg.len() - 1].parse().ok()
}

/// The quoted path of a message (`op "PATH" (in mod) failed: …`,
/// `send_files failed to open "PATH": …`), unescaped. The path itself may
/// hold quotes, so the end is found from the right.
fn quoted_path(msg: &str) -> Option<String> {
    let start = msg.find('"')? + 1;
    let body = &msg[start..];
    let end = body.rfind("\" (in ").or_else(|| body.rfind("\" failed")).or_else(|| body.rfind("\": "))?;
    Some(unescape(&body[..end]))
}

/// Sorts stderr lines into per-file trouble, harmless lines and real errors.
#[derive(Debug, Default)]
struct StderrJudge {
    s: StderrSummary,
    seen_summary_23: bool,
}

impl StderrJudge {
    fn line(&mut self, line: &str) {
        let s = &mut self.s;
        match classify(line) {
            Line::Harmless => {}
            Line::Summary23 => self.seen_summary_23 = true,
            Line::Vanished(p) => s.vanished.push(p),
            Line::OriginFailed(path) => {
                let message = line.trim_end().strip_prefix("rsync: ").unwrap_or(line.trim_end()).to_string();
                s.failed.push(FailedPath { path, message });
            }
            Line::DeletionSkipped => s.deletion_skipped = true,
            // Through a daemon, when every requested file is missing, the
            // daemon hangs up right after the summary (rsync 3.5.0).
            Line::Error(None) if self.seen_summary_23 && line.contains("read error: Connection reset by peer") => {}
            Line::Error(cause) => {
                s.other_errors = true;
                s.cause = s.cause.or(cause);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::{Duration, Instant};

    #[test]
    fn vanished_paths_all_forms() {
        let cases: &[(&str, &[&str])] = &[
            // rsync < 3.2
            (
                r#"rsync: link_stat "/src/a/b" failed: No such file or directory (2)"#,
                &["/src/a/b"],
            ),
            // rsync >= 3.2
            (
                r#"rsync: [sender] link_stat "/tmp/vt/src/missing" failed: No such file or directory (2)"#,
                &["/tmp/vt/src/missing"],
            ),
            // through a daemon
            (
                r#"rsync: [sender] link_stat "id/A/AB/x.tar.gz" (in CPAN) failed: No such file or directory (2)"#,
                &["id/A/AB/x.tar.gz"],
            ),
            (
                r#"rsync: link_stat "sub dir/gone "q"" (in mod) failed: No such file or directory (2)"#,
                &[r#"sub dir/gone "q""#],
            ),
            (r#"file has vanished: "/tmp/vt/src2/b_small""#, &["/tmp/vt/src2/b_small"]),
            (r#"file has vanished: "b_small" (in two)"#, &["b_small"]),
            (r#"rsync: [sender] file has vanished: "/x/y""#, &["/x/y"]),
            // escaped non-ASCII
            (
                r#"rsync: [sender] link_stat "n\#303\#266" (in mod) failed: No such file or directory (2)"#,
                &["nö"],
            ),
            // not vanished
            (
                r#"rsync: [sender] link_stat "/x" failed: Permission denied (13)"#,
                &[],
            ),
            (
                r#"rsync: [sender] change_dir "src2" (in mod) failed: No such file or directory (2)"#,
                &[],
            ),
            (
                "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]",
                &[],
            ),
            ("", &[]),
            (
                "rsync: link_stat \"/a\" failed: No such file or directory (2)\r\n\
                 file has vanished: \"/b\"\n\
                 rsync warning: some files vanished before they could be transferred (code 24) at main.c(1394) [sender=3.5.0]\n",
                &["/a", "/b"],
            ),
        ];
        for (stderr, want) in cases {
            assert_eq!(vanished_paths(stderr), *want, "stderr: {stderr}");
        }
    }

    /// rsync's real messages (3.5.0, the installed version; 3.2.7 prints
    /// the same texts), each with what it means for a mirror.
    #[test]
    fn classify_real_messages() {
        use Cause::*;
        let origin = |p: &str| Line::OriginFailed(p.to_string());
        let vanished = |p: &str| Line::Vanished(p.to_string());
        let table: &[(&str, Line)] = &[
            // A file the daemon (running as nobody) may not read.
            (r#"rsync: [sender] send_files failed to open "secret.txt" (in m): Permission denied (13)"#, origin("secret.txt")),
            // The same below the module, with a `/./` marker in --files-from.
            (r#"rsync: [sender] send_files failed to open "/deep/er/sec" (in m): Permission denied (13)"#, origin("/deep/er/sec")),
            // A local source.
            (r#"rsync: [sender] send_files failed to open "/tmp/exp/mod/deep/er/sec": Permission denied (13)"#, origin("/tmp/exp/mod/deep/er/sec")),
            // A path through a symlink out of the module.
            (r#"rsync: [sender] link_stat "sub/link/hostname" (in m) failed: Too many levels of symbolic links (40)"#, origin("sub/link/hostname")),
            // A file in a directory the daemon may not search; a directory it may not list.
            (r#"rsync: [sender] link_stat "closed/f" (in m) failed: Permission denied (13)"#, origin("closed/f")),
            (r#"rsync: [sender] opendir "closed" (in m) failed: Permission denied (13)"#, origin("closed")),
            (r#"rsync: [sender] link_stat "missing" (in m) failed: No such file or directory (2)"#, vanished("missing")),
            (r#"rsync: [sender] link_stat "/deep/er/missing" (in m) failed: No such file or directory (2)"#, vanished("/deep/er/missing")),
            (r#"file has vanished: "/tmp/vt/src2/b_small""#, vanished("/tmp/vt/src2/b_small")),
            // The source root itself is gone: the whole run failed.
            (r#"rsync: [sender] change_dir "src2" (in mod) failed: No such file or directory (2)"#, Line::Error(None)),
            ("IO error encountered -- skipping file deletion", Line::DeletionSkipped),
            ("rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [generator=3.5.0]", Line::Summary23),
            ("rsync warning: some files vanished before they could be transferred (code 24) at main.c(1394) [sender=3.5.0]", Line::Harmless),
            // Deterministic: not retried.
            ("@ERROR: Unknown module 'nomod'", Line::Error(Some(UnknownModule))),
            ("@ERROR: auth failed on module m", Line::Error(Some(AuthFailed))),
            ("rsync: getaddrinfo: no.such.host.invalid 873: Name or service not known", Line::Error(Some(UnknownHost))),
            ("ssh: Could not resolve hostname http: Name or service not known", Line::Error(Some(UnknownHost))),
            (r#"rsync: [receiver] write failed on "/tmp/exp/small/big.bin": No space left on device (28)"#, Line::Error(Some(NoSpace))),
            (r#"rsync: [receiver] mkstemp "/tmp/exp/ro/.ok.txt.UUhzV5" failed: Permission denied (13)"#, Line::Error(Some(LocalPermission))),
            (r#"rsync: [generator] recv_generator: mkdir "/m/x" failed: Permission denied (13)"#, Line::Error(Some(LocalPermission))),
            (r#"rsync: [Receiver] write failed on "/m/x": Disk quota exceeded (122)"#, Line::Error(Some(NoSpace))),
            // Transient: retried.
            ("rsync: getaddrinfo: cpan.example 873: Temporary failure in name resolution", Line::Error(None)),
            ("rsync: [Receiver] failed to connect to 127.0.0.1 (127.0.0.1): Connection refused (111)", Line::Error(None)),
            ("rsync: [Receiver] read error: Connection reset by peer (104)", Line::Error(None)),
            ("rsync: connection unexpectedly closed (0 bytes received so far) [Receiver]", Line::Error(None)),
            ("rsync error: error in socket IO (code 10) at clientserver.c(165) [Receiver=3.5.0]", Line::Error(None)),
            ("[Receiver] io timeout after 30 seconds -- exiting", Line::Error(None)),
            ("", Line::Harmless),
        ];
        for (line, want) in table {
            assert_eq!(classify(line), *want, "{line}");
        }
    }

    #[test]
    fn per_file_failures_are_not_a_failed_run() {
        let mut j = StderrJudge::default();
        for l in [
            r#"rsync: [sender] link_stat "missing" (in m) failed: No such file or directory (2)"#,
            r#"rsync: [sender] send_files failed to open "secret.txt" (in m): Permission denied (13)"#,
            "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [generator=3.5.0]",
        ] {
            j.line(l);
        }
        assert!(!j.s.other_errors);
        assert_eq!(j.s.vanished, ["missing"]);
        assert_eq!(j.s.failed[0].path, "secret.txt");
        assert!(j.s.failed[0].message.starts_with("[sender] send_files failed to open"), "{:?}", j.s.failed);
        let mut j = StderrJudge::default();
        j.line(r#"rsync: [receiver] write failed on "/m/x": No space left on device (28)"#);
        j.line("@ERROR: Unknown module 'x'");
        assert!(j.s.other_errors);
        assert_eq!(j.s.cause, Some(Cause::NoSpace), "the first cause is kept");
    }

    #[test]
    fn progress2_lines() {
        let p = parse_progress2("      1,200,000  20%    3.43MB/s    0:00:05 (xfr#6, to-chk=24/31)").unwrap();
        assert_eq!(
            p,
            Progress2 {
                bytes: 1_200_000,
                percent: 20,
                rate: "3.43MB/s".into(),
                eta: "0:00:05".into(),
                files: Some(6),
                to_check: Some((24, 31)),
                listing: false
            }
        );
        let p = parse_progress2("         32,768   0%    0.00kB/s    0:00:00  ").unwrap();
        assert_eq!((p.bytes, p.percent, p.files, p.to_check), (32_768, 0, None, None));
        let p = parse_progress2("  9,000,000  41%  120.00MB/s    0:01:02 (xfr#1000, ir-chk=1020/3000)").unwrap();
        assert!(p.listing && p.to_check == Some((1020, 3000)));
        for other in [">f+++++++++ 200000 f1", "created directory p2/dst", "cd+++++++++ 4096 ./", "", "12 files"] {
            assert_eq!(parse_progress2(other), None, "{other}");
        }
    }

    /// A real rsync, slowed down: what it received so far shows in /proc
    /// while it runs, and nothing is claimed for a process that is no rsync.
    #[test]
    fn received_bytes_of_a_running_rsync() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("big"), vec![b'x'; 2_000_000]).unwrap();
        let mut child = Command::new("rsync")
            .args(["--bwlimit=400", "-t"])
            .arg(tmp.path().join("big"))
            .arg(tmp.path().join("copy"))
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut seen = 0;
        while seen < 200_000 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            seen = received_bytes(child.id()).unwrap_or(0);
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen >= 200_000, "bytes of a running rsync: {seen}");
        let mut sleep = Command::new("sleep").arg("10").spawn().unwrap();
        let other = received_bytes(sleep.id());
        let _ = sleep.kill();
        let _ = sleep.wait();
        assert_eq!(other, None, "sleep is no rsync");
    }

    /// An upstream that accepts the connection and then says nothing (a
    /// hung daemon): rsync alone would wait forever; the watchdog stops it
    /// and the failure is a retryable timeout that says so.
    #[test]
    fn a_silent_upstream_is_stopped_by_the_stall_limit() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let holder = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            // Hold it open, silent, until rsync is gone.
            let mut buf = [0u8; 64];
            while (&conn).read(&mut buf).is_ok_and(|n| n > 0) {}
        });
        let dest = tempfile::tempdir().unwrap();
        let mut r = Rsync::new();
        r.args(["-rlt", &format!("rsync://127.0.0.1:{port}/m/"), &format!("{}/", dest.path().display())]);
        r.stall_limit(Duration::from_millis(1500));
        let t0 = std::time::Instant::now();
        let e = r.run().unwrap_err();
        let took = t0.elapsed();
        holder.join().unwrap();
        assert_eq!(e.class, RsyncFailure::Timeout, "{e}");
        assert!(e.is_retryable());
        assert!(e.to_string().contains("moved no data and used no CPU for 1 s"), "{e}");
        assert!(took >= Duration::from_millis(1500), "not before the limit: {took:?}");
    }

    /// A slow but moving transfer is never stopped, however long it takes.
    #[test]
    fn a_slow_transfer_that_moves_is_not_stopped() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), vec![b'x'; 600_000]).unwrap();
        let mut r = Rsync::new();
        r.args(["--bwlimit=300", "-t"]).arg(tmp.path().join("f")).arg(tmp.path().join("g"));
        r.stall_limit(Duration::from_millis(700));
        r.run().unwrap();
        assert_eq!(std::fs::metadata(tmp.path().join("g")).unwrap().len(), 600_000);
    }

    #[test]
    fn unescape_octal() {
        assert_eq!(unescape(r"caf\#303\#251"), "café");
        assert_eq!(unescape(r"a\#134#b"), r"a\#b");
        assert_eq!(unescape(r"plain\path"), r"plain\path");
        assert_eq!(unescape(r"short\#30"), r"short\#30");
        assert_eq!(unescape(r"big\#777"), r"big\#777");
        assert_eq!(unescape(r"end\#"), r"end\#");
    }

    fn judge(stderr: &str) -> (Vec<String>, bool) {
        let mut j = StderrJudge::default();
        stderr.lines().for_each(|l| j.line(l));
        (j.s.vanished, j.s.other_errors)
    }

    #[test]
    fn stderr_judge() {
        // All requested files missing, through a daemon (rsync 3.5.0).
        let all_missing = "\
rsync: [sender] link_stat \"missing\" (in mod) failed: No such file or directory (2)
rsync: [sender] link_stat \"other\" (in mod) failed: No such file or directory (2)
rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [Receiver=3.5.0]
rsync: [Receiver] read error: Connection reset by peer (104)
";
        assert_eq!(judge(all_missing), (vec!["missing".into(), "other".into()], false));
        let real = "\
rsync: [sender] link_stat \"missing\" failed: No such file or directory (2)
rsync: [receiver] mkstemp \"/dst/.a.XXXX\" failed: Permission denied (13)
rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]
";
        assert_eq!(judge(real), (vec!["missing".into()], true));
        // A reset before the summary is a real error.
        let reset = "rsync: [Receiver] read error: Connection reset by peer (104)\n";
        assert_eq!(judge(reset), (vec![], true));
    }

    #[test]
    fn classification_of_codes() {
        use RsyncFailure::*;
        let table = [
            (1, Protocol),
            (2, Protocol),
            (3, Other),
            (4, Protocol),
            (5, Connection),
            (6, Protocol),
            (10, Connection),
            (11, Other),
            (12, Connection),
            (13, Protocol),
            (14, Protocol),
            (20, Protocol),
            (21, Protocol),
            (22, Protocol),
            (23, Partial),
            (25, Protocol),
            (30, Timeout),
            (35, Connection),
            (127, Other),
        ];
        for (code, class) in table {
            assert_eq!(RsyncFailure::from_code(code), class, "code {code}");
        }
        assert!(Connection.is_retryable() && Timeout.is_retryable() && Partial.is_retryable());
        assert!(!NotStarted.is_retryable() && !Protocol.is_retryable() && !Signal.is_retryable());
        assert_eq!(NotStarted.as_str(), "not_started");
    }

    #[test]
    fn display_quotes_and_hides_env() {
        let mut r = Rsync::with_program("rsync");
        r.args(["--times", "--files-from=/tmp/a b", "it's", "", "rsync://h:873/m/"])
            .arg("$HOME;*")
            .env("RSYNC_PASSWORD", "s3cret");
        let shown = r.to_string();
        assert_eq!(shown, r#"rsync --times '--files-from=/tmp/a b' 'it'\''s' '' rsync://h:873/m/ '$HOME;*'"#);
        assert!(!shown.contains("s3cret"));
    }

    #[test]
    fn error_display() {
        let e = RsyncError {
            command: "rsync -rlt a b".into(),
            code: Some(23),
            signal: None,
            stderr: (1..=25).map(|i| format!("line {i}\n")).collect(),
            class: RsyncFailure::Partial,
            cause: None,
        };
        assert_eq!(e.to_string(), "rsync failed with code 23: line 25", "one line");
        let s = e.details();
        assert!(s.starts_with("rsync -rlt a b\n[5 earlier lines"));
        assert!(s.contains("]\nline 6\nline 7\n") && s.ends_with("\nline 25"), "{s}");
        assert!(!s.contains("line 5\n"), "{s}");
        // The line that gave the cause, not rsync's closing summary or what followed.
        let full = RsyncError {
            command: "rsync".into(),
            code: Some(11),
            signal: None,
            stderr: "rsync: [receiver] write failed on \"/m/x\": No space left on device (28)\n\
                     rsync error: error in file IO (code 11) at receiver.c(381) [receiver=3.5.0]\n\
                     rsync: [sender] write error: Broken pipe (32)\n"
                .into(),
            class: RsyncFailure::Other,
            cause: Some(Cause::NoSpace),
        };
        assert_eq!(
            full.to_string(),
            "rsync failed with code 11: rsync: [receiver] write failed on \"/m/x\": No space left on device (28)"
        );
        let summary_last =
            RsyncError { cause: None, stderr: "rsync: x\nrsync error: y (code 5) at z\n".into(), ..full };
        assert_eq!(summary_last.key_line(), "rsync: x");
    }

    #[test]
    fn write_files_from_nul_separated() {
        let dir = tempfile::tempdir().unwrap();
        let f = write_files_from(dir.path(), &["a", "b c/d"]).unwrap();
        let name = f.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".rrr-files-from-"), "{name}");
        assert_eq!(f.path().parent().unwrap(), dir.path());
        assert_eq!(fs::read(f.path()).unwrap(), b"a\0b c/d\0");
        assert!(write_files_from(dir.path(), &["x\0y"]).is_err());
    }

    fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
    }

    fn slash(p: &Path) -> String {
        format!("{}/", p.display())
    }

    #[test]
    fn real_local_copy() {
        let (src, dst) = dirs();
        fs::create_dir(src.path().join("d")).unwrap();
        fs::write(src.path().join("d/f.txt"), "hello").unwrap();
        let mut r = Rsync::new();
        r.args(["-rlt", "--out-format=%n"]).arg(slash(src.path())).arg(slash(dst.path()));
        let mut lines = Vec::new();
        let out = r.run_with(&mut |l| lines.push(l.to_owned())).unwrap();
        assert_eq!(out.code, 0);
        assert!(out.vanished.is_empty());
        assert_eq!(fs::read_to_string(dst.path().join("d/f.txt")).unwrap(), "hello");
        assert!(lines.iter().any(|l| l == "d/f.txt"), "{lines:?}");
    }

    #[test]
    fn missing_file_in_files_from_is_vanished_success() {
        let (src, dst) = dirs();
        fs::write(src.path().join("here"), "x").unwrap();
        let list = write_files_from(dst.path(), &["here", "gone", "also gone"]).unwrap();
        let mut r = Rsync::new();
        r.args(["-rlt", "--from0"])
            .arg(format!("--files-from={}", list.path().display()))
            .arg(src.path())
            .arg(dst.path());
        let out = r.run().unwrap();
        // rsync 3.5.0: exit 23 with only link_stat ENOENT lines.
        assert_eq!(out.code, 23, "{out:?}");
        let want: Vec<String> =
            ["gone", "also gone"].iter().map(|n| src.path().join(n).display().to_string()).collect();
        assert_eq!(out.vanished, want);
        assert!(dst.path().join("here").exists());
    }

    #[test]
    fn file_vanishing_during_transfer_is_success() {
        let (src, dst) = dirs();
        fs::write(src.path().join("a_big"), vec![7u8; 300_000]).unwrap();
        fs::write(src.path().join("b_small"), "x").unwrap();
        let victim = src.path().join("b_small");
        let dst_path = dst.path().to_owned();
        // Delete b_small once the receiver works on a_big (its temp file
        // exists): the file list is built, b_small's turn has not come.
        let deleter = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                let busy = fs::read_dir(&dst_path)
                    .unwrap()
                    .any(|e| e.unwrap().file_name().to_string_lossy().starts_with(".a_big."));
                if busy {
                    fs::remove_file(&victim).unwrap();
                    return true;
                }
                thread::sleep(Duration::from_millis(5));
            }
            false
        });
        let mut r = Rsync::new();
        r.args(["-rlt", "--bwlimit=300"]).arg(slash(src.path())).arg(slash(dst.path()));
        let out = r.run().unwrap();
        assert!(deleter.join().unwrap());
        assert_eq!(out.code, 24, "{out:?}");
        assert_eq!(out.vanished, [src.path().join("b_small").display().to_string()]);
    }

    #[test]
    fn real_failure_is_an_error() {
        let (src, dst) = dirs();
        let mut r = Rsync::new();
        r.arg("-rlt").arg(src.path().join("no/such/dir/")).arg(dst.path());
        let e = r.run().unwrap_err();
        assert_eq!(e.code, Some(23));
        assert_eq!(e.class, RsyncFailure::Partial);
        assert!(e.to_string().starts_with("rsync failed with code 23: "), "{e}");
        assert!(e.stderr.contains("change_dir"), "{e}");

        let mut bad = Rsync::new();
        bad.arg("--no-such-option");
        let e = bad.run().unwrap_err();
        assert_eq!((e.code, e.class), (Some(1), RsyncFailure::Protocol));
    }

    #[test]
    fn missing_program_is_not_started() {
        let e = Rsync::with_program("/nonexistent/rsync").run().unwrap_err();
        assert_eq!((e.code, e.class), (None, RsyncFailure::NotStarted));
        assert!(e.to_string().starts_with("could not start rsync: /nonexistent/rsync: "));
    }

    #[test]
    fn killed_by_signal() {
        // A stand-in program: the runner only sees an exit status.
        let mut r = Rsync::with_program("sh");
        r.args(["-c", "kill -9 $$"]);
        let e = r.run().unwrap_err();
        assert_eq!((e.code, e.signal, e.class), (None, Some(9), RsyncFailure::Signal));
        assert_eq!(e.to_string(), "rsync was killed by signal 9");
        assert!(e.details().starts_with("sh -c"), "{}", e.details());
    }

    #[test]
    fn env_reaches_rsync_and_lang_is_c() {
        let mut r = Rsync::with_program("sh");
        r.args(["-c", "echo $LANG $LC_ALL $RSYNC_PASSWORD; echo err >&2"])
            .env("RSYNC_PASSWORD", "pw")
            .env("LANG", "de_DE.UTF-8");
        let mut lines = Vec::new();
        let out = r.run_with(&mut |l| lines.push(l.to_owned())).unwrap();
        assert_eq!(lines, ["C C pw"]);
        assert_eq!(out.stderr, "err\n");
    }
}
