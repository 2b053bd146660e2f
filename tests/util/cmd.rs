//! A builder for one run of the real `rrr` binary.
//!
//! Every test starts rrr through [`Rrr`], so a failing expectation always
//! shows the same thing: the command line (with the environment and the
//! directory the test set), the exit code or signal, stdout and stderr.
//!
//! ```ignore
//! let out = Rrr::new().args(["news", "--local", &p]).assert_ok();
//! Rrr::new().args(["update", "--stdin", &p]).stdin("new a\n").assert_exit(0);
//! let mut daemon = Rrr::new().args(["watch", &root]).stderr(log).spawn(); // killed on drop
//! ```
//!
//! rrr runs with `TERM=dumb` (no progress on a terminal the test happens
//! to have) unless the test sets `TERM` itself.

use std::fmt;
use std::io::Write;
use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// One invocation of `rrr` (or of a wrapper that execs it) being set up.
pub struct Rrr {
    cmd: Command,
    /// What the test changed, for messages: `K=V` settings, the cwd, the wrapper and the args.
    shown: Vec<String>,
    stdin: Option<Vec<u8>>,
}

impl Default for Rrr {
    fn default() -> Self {
        Rrr::new()
    }
}

impl Rrr {
    pub fn new() -> Rrr {
        let mut cmd = Command::new(super::rrr_bin());
        cmd.env("TERM", "dumb");
        Rrr { cmd, shown: vec!["rrr".to_string()], stdin: None }
    }

    /// rrr run by `wrapper` (e.g. `["prlimit", "--as=N", "--"]`), which
    /// gets the rrr binary as its next argument and must exec it.
    pub fn wrapped(wrapper: &[&str]) -> Rrr {
        let Some((program, rest)) = wrapper.split_first() else { return Rrr::new() };
        let mut cmd = Command::new(program);
        cmd.args(rest).arg(super::rrr_bin()).env("TERM", "dumb");
        let mut shown: Vec<String> = wrapper.iter().map(|w| w.to_string()).collect();
        shown.push("rrr".to_string());
        Rrr { cmd, shown, stdin: None }
    }

    pub fn arg(&mut self, arg: impl AsRef<std::ffi::OsStr>) -> &mut Rrr {
        self.shown.push(arg.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, A>(&mut self, args: I) -> &mut Rrr
    where
        I: IntoIterator<Item = A>,
        A: AsRef<std::ffi::OsStr>,
    {
        for a in args {
            self.arg(a);
        }
        self
    }

    pub fn env(&mut self, key: impl AsRef<std::ffi::OsStr>, value: impl AsRef<std::ffi::OsStr>) -> &mut Rrr {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.shown.insert(0, format!("{}={}", k.to_string_lossy(), v.to_string_lossy()));
        self.cmd.env(k, v);
        self
    }

    /// Bytes written to rrr's stdin (then closed).
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Rrr {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Rrr {
        self.shown.insert(0, format!("cd {} &&", dir.as_ref().display()));
        self.cmd.current_dir(dir);
        self
    }

    /// Where stdout goes when [`spawn`](Rrr::spawn)ed (default: inherited);
    /// [`output`](Rrr::output) always captures it.
    pub fn stdout(&mut self, to: impl Into<Stdio>) -> &mut Rrr {
        self.cmd.stdout(to);
        self
    }

    /// Where stderr goes when [`spawn`](Rrr::spawn)ed (default: inherited);
    /// [`output`](Rrr::output) always captures it.
    pub fn stderr(&mut self, to: impl Into<Stdio>) -> &mut Rrr {
        self.cmd.stderr(to);
        self
    }

    /// Run in its own process group (`0`: a new one led by rrr).
    pub fn process_group(&mut self, pgid: i32) -> &mut Rrr {
        self.cmd.process_group(pgid);
        self
    }

    /// Run as this user and group (the tests run as root).
    pub fn user(&mut self, uid: u32, gid: u32) -> &mut Rrr {
        self.shown.insert(0, format!("(as {uid}:{gid})"));
        self.cmd.uid(uid).gid(gid);
        self
    }

    /// Run to the end, capturing stdout and stderr; never panics on the exit code.
    pub fn output(&mut self) -> Output {
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        if self.stdin.is_none() {
            // As `Command::output`: a read of stdin ends at once.
            self.cmd.stdin(Stdio::null());
        }
        let line = self.to_string();
        let running = self.spawn();
        running.wait_with_output_of(&line)
    }

    /// Run to the end; panic unless rrr exited with `code`. The output.
    #[track_caller]
    pub fn assert_exit(&mut self, code: i32) -> Output {
        let line = self.to_string();
        let out = self.output();
        if out.status.code() != Some(code) {
            panic!("expected exit {code}\n{}", describe(&line, &out));
        }
        out
    }

    /// Run to the end; panic unless rrr exited 0. The output.
    #[track_caller]
    pub fn assert_ok(&mut self) -> Output {
        self.assert_exit(0)
    }

    /// Start rrr in the background; it is killed (SIGKILL) and reaped when
    /// the returned guard is dropped, so a failing test leaves no process.
    pub fn spawn(&mut self) -> Running {
        if self.stdin.is_some() {
            self.cmd.stdin(Stdio::piped());
        }
        let line = self.to_string();
        let mut child = self.cmd.spawn().unwrap_or_else(|e| panic!("cannot start {line}: {e}"));
        if let Some(bytes) = self.stdin.take() {
            let mut pipe = child.stdin.take().unwrap();
            // A thread, so a child that writes much before it reads cannot deadlock us.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        Running { child: Some(child), line }
    }
}

impl fmt::Display for Rrr {
    /// The command line as a shell would take it (quoted where needed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self.shown.iter().map(|w| quote(w)).collect();
        f.write_str(&words.join(" "))
    }
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && (word.chars().all(plain) || word.starts_with("cd ") || word.starts_with("(as ")) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The command line, exit status and both outputs, for a failure message.
pub fn describe(line: &str, out: &Output) -> String {
    format!(
        "command: {line}\nstatus:  {}\n--- stdout ---\n{}--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A running rrr, killed and reaped on drop unless the test waited for it.
/// Derefs to the [`Child`] for `id`, `wait`, `try_wait`, `kill`, and its pipes.
pub struct Running {
    child: Option<Child>,
    line: String,
}

impl Running {
    /// Wait for the end, collecting what is left of the piped outputs.
    pub fn wait_with_output(self) -> Output {
        let line = self.line.clone();
        self.wait_with_output_of(&line)
    }

    fn wait_with_output_of(mut self, line: &str) -> Output {
        let child = self.child.take().unwrap();
        child.wait_with_output().unwrap_or_else(|e| panic!("waiting for {line}: {e}"))
    }

    /// Wait for the end; panic unless rrr exited with `code`.
    #[track_caller]
    pub fn assert_exit(self, code: i32) -> Output {
        let line = self.line.clone();
        let out = self.wait_with_output();
        if out.status.code() != Some(code) {
            panic!("expected exit {code}\n{}", describe(&line, &out));
        }
        out
    }

    /// Send `signal` (e.g. `libc::SIGTERM`) to rrr.
    pub fn signal(&self, signal: i32) {
        let rc = kill(self.id() as i32, signal);
        assert_eq!(rc, Ok(()), "kill({}, {signal}) for {}", self.id(), self.line);
    }
}

impl Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.child.as_ref().unwrap()
    }
}

impl DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        self.child.as_mut().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // After a wait() std knows the status and sends nothing.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// kill(2) without `unsafe`: `signal` (e.g. `libc::SIGTERM`) to `pid`
/// (a negative pid is a process group, as for kill(2)).
pub fn kill(pid: i32, signal: i32) -> nix::Result<()> {
    let signal = nix::sys::signal::Signal::try_from(signal)?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
}
