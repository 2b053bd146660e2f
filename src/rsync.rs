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
//! went wrong with rsync >= 3.2 (spec 12.8): its `^rsync: link_stat` pattern
//! no longer matched and each vanished file cost 72 s of sleeps and a
//! give-up.
//!
//! rsync runs with `LANG=C` and `LC_ALL=C`, so its messages and its escaping
//! of non-ASCII bytes in names (`\#303\#251` for `é`) do not depend on the
//! user's locale; [`vanished_paths`] undoes that escaping ([`unescape`]).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;

/// How much of rsync's stderr is kept: the last 64 KiB.
const STDERR_CAP: usize = 64 * 1024;
/// Longest line handed on at once; a longer one arrives in pieces.
const LINE_CAP: u64 = 64 * 1024;
/// How many stderr lines [`RsyncError`]'s `Display` shows.
const DISPLAY_LINES: usize = 20;

/// A command line for `rsync`, to be run once or many times.
#[derive(Debug, Clone)]
pub struct Rsync {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(String, OsString)>,
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
        Rsync { program: program.as_ref().to_owned(), args: Vec::new(), envs: Vec::new() }
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
    /// `LC_ALL` are always `C`.
    pub fn env(&mut self, k: &str, v: impl AsRef<OsStr>) -> &mut Self {
        self.envs.retain(|(key, _)| key != k);
        self.envs.push((k.to_owned(), v.as_ref().to_owned()));
        self
    }

    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    pub fn get_args(&self) -> &[OsString] {
        &self.args
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
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env("LANG", "C")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| RsyncError {
            command: self.to_string(),
            code: None,
            signal: None,
            stderr: e.to_string(),
            class: RsyncFailure::NotStarted,
        })?;

        let stderr = child.stderr.take().expect("stderr is piped");
        let stderr_thread =
            thread::Builder::new().name("rsync-stderr".into()).spawn(move || drain_stderr(stderr)).map_err(|e| {
                let _ = child.kill();
                let _ = child.wait();
                RsyncError {
                    command: self.to_string(),
                    code: None,
                    signal: None,
                    stderr: format!("cannot start a thread to read its stderr: {e}"),
                    class: RsyncFailure::NotStarted,
                }
            })?;

        let stdout = child.stdout.take().expect("stdout is piped");
        // A read error on our end of the pipe only costs progress lines;
        // rsync's exit status still decides.
        let _ = for_each_line(stdout, |line| on_stdout_line(&String::from_utf8_lossy(line)));

        let status = child.wait();
        let stderr = stderr_thread.join().unwrap_or_else(|_| StderrSummary::default());
        let status = status.map_err(|e| RsyncError {
            command: self.to_string(),
            code: None,
            signal: None,
            stderr: format!("cannot wait for rsync: {e}"),
            class: RsyncFailure::Other,
        })?;
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
            });
        };
        let only_vanished = !err.other_errors && !err.vanished.is_empty();
        match code {
            0 | 24 => {}
            23 if only_vanished => {}
            _ => {
                return Err(RsyncError {
                    command: self.to_string(),
                    code: Some(code),
                    signal: None,
                    stderr: err.tail,
                    class: RsyncFailure::from_code(code),
                })
            }
        }
        Ok(RsyncOutcome { vanished: err.vanished, stderr: err.tail, code })
    }
}

/// The shell-quoted command line: program and arguments, no environment.
impl fmt::Display for Rsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shell_quote(&self.program.to_string_lossy()))?;
        for a in &self.args {
            write!(f, " {}", shell_quote(&a.to_string_lossy()))?;
        }
        Ok(())
    }
}

/// `s` as one shell word: unchanged if it holds only characters no shell
/// treats specially, else in single quotes (a `'` becomes `'\''`).
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
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
    /// The tail of rsync's stderr.
    pub stderr: String,
    /// rsync's exit code: 0, 23 or 24.
    pub code: i32,
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

impl fmt::Display for RsyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.class, self.code, self.signal) {
            (RsyncFailure::NotStarted, _, _) => {
                return write!(f, "could not start rsync: {}: {}", self.command, self.stderr)
            }
            (_, Some(code), _) => write!(f, "rsync failed with code {code}: {}", self.command)?,
            (_, None, Some(sig)) => write!(f, "rsync was killed by signal {sig}: {}", self.command)?,
            (_, None, None) => write!(f, "rsync failed: {}", self.command)?,
        }
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let shown = &lines[lines.len().saturating_sub(DISPLAY_LINES)..];
        if shown.len() < lines.len() {
            write!(f, "\n[{} earlier lines of stderr]", lines.len() - shown.len())?;
        }
        for line in shown {
            write!(f, "\n{line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RsyncError {}

/// The paths in rsync's messages about missing source files, unescaped:
/// `rsync: link_stat "/p" failed: No such file or directory (2)` (rsync
/// < 3.2), `rsync: [sender] link_stat "/p" failed: …` (>= 3.2) and
/// `file has vanished: "/p"` (with or without `rsync: [sender] `). A
/// ` (in module)` after the quoted path is dropped.
pub fn vanished_paths(stderr: &str) -> Vec<String> {
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

/// Calls `f` with each line of `r` (line end removed); a line longer than
/// [`LINE_CAP`] comes in pieces.
fn for_each_line(r: impl Read, mut f: impl FnMut(&[u8])) -> io::Result<()> {
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        line.clear();
        if (&mut r).take(LINE_CAP).read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let mut l = line.as_slice();
        l = l.strip_suffix(b"\n").unwrap_or(l);
        l = l.strip_suffix(b"\r").unwrap_or(l);
        f(l);
    }
}

/// What the stderr thread learned.
#[derive(Debug, Default)]
struct StderrSummary {
    /// Paths of missing/vanished files, all of them.
    vanished: Vec<String>,
    /// A line that is neither about a vanished file nor rsync's summary.
    other_errors: bool,
    /// The last [`STDERR_CAP`] bytes, starting at a line.
    tail: String,
}

fn drain_stderr(r: impl Read) -> StderrSummary {
    let mut judge = StderrJudge::default();
    let mut tail = TailBuffer::default();
    let res = for_each_line(r, |line| {
        judge.line(&String::from_utf8_lossy(line));
        tail.push(line);
    });
    if let Err(e) = res {
        judge.other_errors = true;
        tail.push(format!("[rrr: cannot read rsync's stderr: {e}]").as_bytes());
    }
    StderrSummary { vanished: judge.vanished, other_errors: judge.other_errors, tail: tail.into_string() }
}

/// Sorts stderr lines into vanished files, harmless lines and real errors.
#[derive(Debug, Default)]
struct StderrJudge {
    vanished: Vec<String>,
    other_errors: bool,
    seen_summary_23: bool,
}

impl StderrJudge {
    fn line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        if let Some(p) = vanished_path(line) {
            self.vanished.push(p);
        } else if line.starts_with("rsync error: some files/attrs were not transferred") && line.contains("(code 23)") {
            self.seen_summary_23 = true;
        } else if line.starts_with("rsync warning: some files vanished before they could be")
            && line.contains("(code 24)")
        {
        } else if self.seen_summary_23 && line.contains("read error: Connection reset by peer") {
            // Through a daemon, when every requested file is missing, the
            // daemon hangs up right after the summary (rsync 3.5.0).
        } else {
            self.other_errors = true;
        }
    }
}

/// The last [`STDERR_CAP`] bytes of a stream of lines.
#[derive(Debug, Default)]
struct TailBuffer {
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
    dropped: usize,
}

impl TailBuffer {
    fn push(&mut self, line: &[u8]) {
        self.lines.push_back(line.to_vec());
        self.bytes += line.len() + 1;
        while self.bytes > STDERR_CAP && self.lines.len() > 1 {
            let old = self.lines.pop_front().expect("more than one line");
            self.bytes -= old.len() + 1;
            self.dropped += 1;
        }
    }

    fn into_string(self) -> String {
        let mut out = Vec::with_capacity(self.bytes + 40);
        if self.dropped > 0 {
            out.extend_from_slice(format!("[{} lines dropped]\n", self.dropped).as_bytes());
        }
        for l in self.lines {
            out.extend_from_slice(&l);
            out.push(b'\n');
        }
        String::from_utf8_lossy(&out).into_owned()
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
        (j.vanished, j.other_errors)
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
        };
        let s = e.to_string();
        assert!(s.starts_with("rsync failed with code 23: rsync -rlt a b\n[5 earlier lines"));
        assert!(s.contains("]\nline 6\nline 7\n") && s.ends_with("\nline 25"), "{s}");
        assert!(!s.contains("line 5\n"), "{s}");
    }

    #[test]
    fn tail_buffer_keeps_the_end() {
        let mut t = TailBuffer::default();
        for i in 0..10_000 {
            t.push(format!("line {i:05}").as_bytes());
        }
        let s = t.into_string();
        assert!(s.len() <= STDERR_CAP + 40);
        assert!(s.starts_with('['));
        assert!(s.ends_with("line 09999\n"));
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
        assert!(e.to_string().starts_with("rsync was killed by signal 9: sh -c"), "{e}");
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
