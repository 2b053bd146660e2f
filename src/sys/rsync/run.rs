//! Running rsync and judging its exit: [`Rsync::run_watched`] and the
//! outcome or error it returns, with the failure classes that say whether
//! a retry may help.

use super::stderr::{classify, drain_stderr, Line, StderrSummary};
use super::watchdog::stall_watchdog;
use super::Rsync;
use crate::sys::child::{for_each_line, Child, Ties};
use std::fmt;
use std::os::fd::AsFd;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

/// How many stderr lines [`RsyncError`]'s `Display` shows.
const DISPLAY_LINES: usize = 20;

/// Pass rsync's stdout to `on` line by line until it closes, with
/// [`Output::Quiet`] each time `quiet` passes without a line. A read error
/// on our end of the pipe only costs progress lines; rsync's exit status
/// still decides. The child is not reaped before this returns, so its pid
/// is still rsync's in `Quiet`. The pipe is returned so that it stays
/// open until rsync is reaped.
fn read_stdout(child: &mut Child, quiet: Option<Duration>, on: &mut dyn FnMut(Output<'_>)) -> std::fs::File {
    let pid = child.id();
    // A File, so that the reader and the poll share it by reference.
    let stdout = std::fs::File::from(std::os::fd::OwnedFd::from(child.take_stdout().expect("stdout is piped")));
    let quiet = quiet.map(|d| (stdout.as_fd(), d));
    let _ = for_each_line(&stdout, quiet, |line| match line {
        Some(line) => on(Output::Line(&String::from_utf8_lossy(line))),
        None => on(Output::Quiet { pid }),
    });
    stdout
}

impl Rsync {
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
        let (mut child, stderr_thread) = self.spawn()?;
        let pid = child.id();
        // Stopped (the sender dropped) once rsync has exited, before it is
        // reaped: until then `pid` is rsync's.
        let (stop_watchdog, stopped) = std::sync::mpsc::channel::<()>();
        // The tree's thread: its line names the tree.
        let watchdog = self
            .stall_limit
            .map(|limit| crate::sys::signals::spawn_in_tree(move || stall_watchdog(pid, limit, stopped)));
        let _stdout = read_stdout(&mut child, quiet, on);
        // The watchdog may signal `pid` until rsync has exited but is not
        // reaped yet, so that its pid cannot have been reused by then.
        child.wait_exited();
        drop(stop_watchdog);
        let stalled = watchdog.and_then(|w| w.join().ok()).flatten();
        let status = child.wait();
        let stderr = stderr_thread.join().unwrap_or_else(|_| StderrSummary::default());
        let status = status.map_err(|e| self.error(RsyncFailure::Other, format!("cannot wait for rsync: {e}")))?;
        if let Some(limit) = stalled {
            // Its exit code (20 after our SIGTERM) would only mislead.
            return Err(self.error(
                RsyncFailure::Timeout,
                format!(
                    "{}[rrr] rsync moved no data and used no CPU for {} s: stopped (--timeout)\n",
                    stderr.tail,
                    limit.as_secs()
                ),
            ));
        }
        self.judge(status, stderr)
    }

    /// rsync started, tied to rrr, with its stderr drained on a thread of
    /// its own; on an error nothing is left running.
    fn spawn(&self) -> Result<(Child, thread::JoinHandle<StderrSummary>), RsyncError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env("LANG", "C")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // No rsync outlives rrr, even after kill -9 (rsync then removes
        // its temp file and stops its own receiver); a stop of rrr is
        // passed on to it.
        let ties = Ties { die_with_parent: true, forward_stop: true, own_group: false };
        let mut child = Child::spawn(&mut cmd, ties).map_err(|e| {
            let missing = matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied);
            if !missing {
                return self.error(RsyncFailure::NotStarted, e.to_string());
            }
            // The same on every attempt: say what to do.
            let hint = format!(
                "{e}: no runnable {} (install rsync, e.g. apt-get install rsync, put it in PATH, or name it in RRR_RSYNC)",
                self.program.to_string_lossy()
            );
            RsyncError { cause: Some(Cause::NoRsync), ..self.error(RsyncFailure::NotStarted, hint) }
        })?;
        let stderr = child.take_stderr().expect("stderr is piped");
        match thread::Builder::new().name("rsync-stderr".into()).spawn(move || drain_stderr(stderr)) {
            Ok(t) => Ok((child, t)),
            Err(e) => {
                child.kill();
                Err(self.error(RsyncFailure::NotStarted, format!("cannot start a thread to read its stderr: {e}")))
            }
        }
    }

    /// An error of this command without an exit code or signal.
    fn error(&self, class: RsyncFailure, stderr: String) -> RsyncError {
        RsyncError { command: self.to_string(), code: None, signal: None, stderr, class, cause: None }
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
        let only_per_file =
            !err.other_errors && (!err.vanished.is_empty() || !err.failed.is_empty() || !err.too_long.is_empty());
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
            too_long: err.too_long,
            deletion_skipped: err.deletion_skipped,
            stderr: err.tail,
            code,
        })
    }
}

/// A run that rsync finished well enough: exit 0, exit 24 (files vanished),
/// or exit 23 caused only by missing source files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsyncOutcome {
    /// Paths rsync reported missing or vanished, as rsync printed them
    /// (unescaped to their bytes): absolute for a local source,
    /// module-relative through a daemon.
    pub vanished: Vec<Vec<u8>>,
    /// Paths the origin could not send (`[sender] … Permission denied
    /// (13)`, a symlink out of the module): the rest of the run arrived.
    pub failed: Vec<FailedPath>,
    /// Paths rsync cannot carry: longer than its MAXPATHLEN (4096 bytes
    /// with the NUL) on the sender's side. The rest of the run arrived.
    pub too_long: Vec<FailedPath>,
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
    /// As rsync printed it (unescaped to its bytes): absolute for a local
    /// source, module-relative (maybe with a leading `/`) through a daemon.
    pub path: Vec<u8>,
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

    /// `--max-delete` stopped the deletes (exit 25); the rest was done.
    pub fn is_max_delete_reached(&self) -> bool {
        self.code == Some(25)
    }

    /// The rsync program itself could not be run: no later try can cure it.
    pub fn is_program_missing(&self) -> bool {
        self.cause == Some(Cause::NoRsync)
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
    /// rsync itself cannot be run (not installed, not in PATH, not
    /// executable): the same on every attempt and every pass.
    NoRsync,
    /// The source directory does not exist: a wrong path inside a
    /// correct module (`change_dir "author" (in CPAN) failed: No such file
    /// or directory`), not a network fault.
    NoSuchPath,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::UnknownModule => "unknown_module",
            Cause::AuthFailed => "auth_failed",
            Cause::UnknownHost => "unknown_host",
            Cause::NoSpace => "no_space",
            Cause::LocalPermission => "local_permission",
            Cause::NoSuchPath => "no_such_path",
            Cause::NoRsync => "no_rsync",
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

/// What a watched rsync ([`Rsync::run_watched`]) said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'l> {
    /// A line of its stdout, without the line end.
    Line(&'l str),
    /// Nothing for a while; `pid` is the running rsync's (see [`received_bytes`]).
    Quiet { pid: u32 },
}

#[cfg(test)]
mod tests {
    use super::super::write_files_from;
    use super::*;
    use std::fs;
    use std::path::Path;
    use std::time::Instant;

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
        let list = write_files_from(dst.path(), &[b"here", b"gone", b"also gone"]).unwrap();
        let mut r = Rsync::new();
        r.args(["-rlt", "--from0"])
            .arg(format!("--files-from={}", list.path().display()))
            .arg(src.path())
            .arg(dst.path());
        let out = r.run().unwrap();
        // rsync 3.5.0: exit 23 with only link_stat ENOENT lines.
        assert_eq!(out.code, 23, "{out:?}");
        let want: Vec<Vec<u8>> =
            ["gone", "also gone"].iter().map(|n| src.path().join(n).display().to_string().into_bytes()).collect();
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
        assert_eq!(out.vanished, [src.path().join("b_small").display().to_string().into_bytes()]);
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
