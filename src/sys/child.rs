//! Child processes: one runner for rsync and the operator hooks. It
//! starts a child tied to rrr as the caller asks ([`Ties`]: killed when
//! rrr dies, in its own process group, passed rrr's stop), reads its pipes
//! line by line ([`for_each_line`]) into a bounded [`Tail`], waits for it
//! with a deadline, and shows command lines to people ([`shell_quote`]).

use crate::sys::signals::ForwardTo;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};
use std::os::fd::BorrowedFd;
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, ChildStdout, Command, ExitStatus};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest line handed on at once; a longer one arrives in pieces.
pub(crate) const LINE_CAP: u64 = 64 * 1024;

/// How a child is tied to rrr.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ties {
    /// `PR_SET_PDEATHSIG(SIGTERM)`: the kernel sends the child SIGTERM when
    /// the thread that spawned it dies, so it does not outlive rrr even
    /// after kill -9 (spawn it from the thread that waits for it).
    pub die_with_parent: bool,
    /// Its own process group, so that a timeout kills the whole group (a
    /// shell's children too).
    pub own_group: bool,
    /// While it runs, SIGINT/SIGTERM to rrr are passed on to it as SIGTERM
    /// ([`ForwardTo`]).
    pub forward_stop: bool,
}

/// A running child; [`Child::wait`] or [`Child::wait_until`] reaps it.
pub(crate) struct Child {
    inner: std::process::Child,
    own_group: bool,
    forward: Option<ForwardTo>,
}

impl Child {
    /// Start `cmd` (its stdio as the caller set it up) with `ties`.
    pub fn spawn(cmd: &mut Command, ties: Ties) -> io::Result<Child> {
        if ties.die_with_parent {
            let parent = nix::unistd::getpid();
            // SAFETY: std has no safe way to run code between fork and
            // exec; the closure calls only prctl and getppid (no
            // allocation, no locks), as pre_exec requires. A parent that
            // died before the prctl is caught by the getppid() check.
            unsafe {
                cmd.pre_exec(move || {
                    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
                    if nix::unistd::getppid() != parent {
                        return Err(io::Error::other("rrr exited before the child started"));
                    }
                    Ok(())
                });
            }
        }
        if ties.own_group {
            cmd.process_group(0);
        }
        let inner = cmd.spawn()?;
        let forward = ties.forward_stop.then(|| ForwardTo::child(inner.id()));
        Ok(Child { inner, own_group: ties.own_group, forward })
    }

    pub fn id(&self) -> u32 {
        self.inner.id()
    }

    /// Its stdout, if piped and not taken yet.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.inner.stdout.take()
    }

    /// Its stderr, if piped and not taken yet.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.inner.stderr.take()
    }

    /// Send `sig` to the child (to its whole group if it has its own).
    /// Only before it is reaped, so the pid is still the child's.
    fn signal(&self, sig: Signal) {
        let pid = Pid::from_raw(self.inner.id() as i32);
        let _ = if self.own_group { nix::sys::signal::killpg(pid, sig) } else { nix::sys::signal::kill(pid, sig) };
    }

    /// Wait until the child has exited, without reaping it, and stop
    /// passing rrr's stop on: its pid cannot have been reused yet.
    pub fn wait_exited(&mut self) {
        use nix::sys::wait::{waitid, Id, WaitPidFlag};
        let pid = Pid::from_raw(self.inner.id() as i32);
        while let Err(nix::errno::Errno::EINTR) = waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {}
        self.forward = None;
    }

    /// Wait for the child to exit and reap it.
    pub fn wait(mut self) -> io::Result<ExitStatus> {
        self.wait_exited();
        self.inner.wait()
    }

    /// Kill the child (its group) with SIGKILL and reap it; rrr's stop is
    /// no longer passed on once the pid may be reused.
    pub fn kill(mut self) {
        self.signal(Signal::SIGKILL);
        self.forward = None;
        let _ = self.inner.wait();
    }

    /// Wait for the child until `deadline`. `None`: the deadline passed,
    /// or rrr was asked to stop, first; the child (its whole group, if
    /// it has its own) was killed with SIGKILL and reaped.
    pub fn wait_until(mut self, deadline: Instant) -> io::Result<Option<ExitStatus>> {
        loop {
            if let Some(status) = self.inner.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline || crate::sys::signals::stop_requested() {
                self.kill();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Read `streams` (a child's stdout and stderr) line by line on their own
/// threads into one [`Tail`] of `cap` bytes, lines interleaved as they
/// arrive; [`Collected::finish`] gives the tail.
pub(crate) fn collect(streams: Vec<Box<dyn Read + Send>>, cap: usize) -> Collected {
    let tail = Arc::new(Mutex::new(Tail::new(cap)));
    let (done_tx, done) = mpsc::channel();
    for stream in streams {
        let (tail, done_tx) = (Arc::clone(&tail), done_tx.clone());
        std::thread::spawn(move || {
            let _ = for_each_line(stream, None, |line| {
                if let Some(line) = line {
                    tail.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            });
            let _ = done_tx.send(());
        });
    }
    Collected { tail, done }
}

/// A child's output being read ([`collect`]).
pub(crate) struct Collected {
    tail: Arc<Mutex<Tail>>,
    done: mpsc::Receiver<()>,
}

impl Collected {
    /// The tail, once every stream has ended or `grace` has passed (a
    /// grandchild that left the process group may hold a pipe open).
    pub fn finish(self, grace: Duration) -> String {
        let until = Instant::now() + grace;
        while self.done.recv_timeout(until.saturating_duration_since(Instant::now())).is_ok() {}
        let tail = std::mem::take(&mut *self.tail.lock().unwrap_or_else(|e| e.into_inner()));
        tail.into_string()
    }
}

/// The last `cap` bytes of a stream of lines, starting at a line (the
/// newest line is kept whole, however long); a `[N lines dropped]` line
/// says that lines went.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    cap: usize,
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
    dropped: usize,
}

impl Tail {
    pub fn new(cap: usize) -> Tail {
        Tail { cap, ..Tail::default() }
    }

    pub fn push(&mut self, line: &[u8]) {
        self.lines.push_back(line.to_vec());
        self.bytes += line.len() + 1;
        while self.bytes > self.cap && self.lines.len() > 1 {
            let old = self.lines.pop_front().expect("more than one line");
            self.bytes -= old.len() + 1;
            self.dropped += 1;
        }
    }

    /// The lines, each ending in `\n`; bytes that are no UTF-8 replaced.
    pub fn into_string(self) -> String {
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

/// Calls `f` with each line of `r` as it arrives, a line ending at `\n`
/// or `\r` (rsync's `--info=progress2` rewrites its line with `\r`), line
/// ends removed and empty lines skipped; a line longer than [`LINE_CAP`]
/// comes in pieces. With `quiet` (`r`'s descriptor and a period), `f`
/// also gets `None` each time that period passes without input.
pub(crate) fn for_each_line(
    r: impl Read,
    quiet: Option<(BorrowedFd<'_>, Duration)>,
    mut f: impl FnMut(Option<&[u8]>),
) -> io::Result<()> {
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        if let Some((fd, period)) = quiet {
            if r.buffer().is_empty() && !readable_within(fd, period)? {
                f(None);
                continue;
            }
        }
        let (ended, used) = {
            let buf = match r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                if !line.is_empty() {
                    f(Some(&line));
                }
                return Ok(());
            }
            match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(i) => {
                    line.extend_from_slice(&buf[..i]);
                    (true, i + 1)
                }
                None => {
                    line.extend_from_slice(buf);
                    (false, buf.len())
                }
            }
        };
        r.consume(used);
        if ended || line.len() as u64 >= LINE_CAP {
            if !line.is_empty() {
                f(Some(&line));
            }
            line.clear();
        }
    }
}

/// Whether `fd` has input (or its end: EOF and errors count) within `period`.
fn readable_within(fd: BorrowedFd<'_>, period: Duration) -> io::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let timeout = PollTimeout::try_from(period.max(Duration::from_millis(1))).unwrap_or(PollTimeout::MAX);
    loop {
        match poll(&mut [PollFd::new(fd, PollFlags::POLLIN)], timeout) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `s` as one shell word: unchanged if it holds only characters no shell
/// treats specially, else in single quotes (a `'` becomes `'\''`).
pub(crate) fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::process::Stdio;

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("/srv/CPAN/RECENT-1h.yaml.lock"), "/srv/CPAN/RECENT-1h.yaml.lock");
        assert_eq!(shell_quote("--files-from=x"), "--files-from=x");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's $HOME"), r"'it'\''s $HOME'");
    }

    #[test]
    fn tail_keeps_the_end() {
        let mut t = Tail::new(64 * 1024);
        for i in 0..10_000 {
            t.push(format!("line {i:05}").as_bytes());
        }
        let s = t.into_string();
        // 11 bytes a line: 5957 lines fit in 64 KiB.
        assert!(s.starts_with("[4043 lines dropped]\nline 04043\n"), "{}", &s[..40]);
        assert!(s.ends_with("line 09999\n"));
    }

    #[test]
    fn lines_end_at_carriage_returns_too() {
        let mut got = Vec::new();
        let input: &[u8] =
            b">f+++ 1 a\n\r   100  1%  1.00kB/s  0:00:01\r   200  2%  1.00kB/s  0:00:01 (xfr#1, to-chk=1/2)\n\rlast";
        for_each_line(input, None, |l| got.extend(l.map(|l| String::from_utf8_lossy(l).into_owned()))).unwrap();
        assert_eq!(
            got,
            [">f+++ 1 a", "   100  1%  1.00kB/s  0:00:01", "   200  2%  1.00kB/s  0:00:01 (xfr#1, to-chk=1/2)", "last"]
        );
    }

    #[test]
    fn quiet_input_gives_ticks_then_lines() {
        let (r, mut w) = std::os::unix::net::UnixStream::pair().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(250));
            w.write_all(b"one\ntwo").unwrap();
        });
        let mut got = Vec::new();
        for_each_line(&r, Some((r.as_fd(), Duration::from_millis(50))), |l| {
            got.push(l.map_or("<quiet>".to_string(), |l| String::from_utf8_lossy(l).into_owned()))
        })
        .unwrap();
        writer.join().unwrap();
        let quiet = got.iter().take_while(|l| *l == "<quiet>").count();
        assert!(quiet >= 2, "ticks while nothing came: {got:?}");
        assert_eq!(got[quiet..], ["one", "two"]);
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(script).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    }

    fn output_of(child: &mut Child, cap: usize) -> Collected {
        let out = child.take_stdout().map(|s| Box::new(s) as Box<dyn Read + Send>);
        let err = child.take_stderr().map(|s| Box::new(s) as Box<dyn Read + Send>);
        collect(out.into_iter().chain(err).collect(), cap)
    }

    /// Both pipes end up in one tail.
    #[test]
    fn output_of_both_pipes_is_collected() {
        let mut child = Child::spawn(&mut sh("echo out; echo err >&2; exit 3"), Ties::default()).unwrap();
        let output = output_of(&mut child, 4096);
        assert_eq!(child.wait().unwrap().code(), Some(3));
        let text = output.finish(Duration::from_secs(30));
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort();
        assert_eq!(lines, ["err", "out"]);
    }

    /// The tail holds at most `cap` bytes, and says how many lines went.
    #[test]
    fn output_is_tailed() {
        let script = "i=0; while [ $i -lt 50 ]; do echo out $i; i=$((i+1)); done";
        let mut child = Child::spawn(&mut sh(script), Ties::default()).unwrap();
        let output = output_of(&mut child, 40);
        assert!(child.wait().unwrap().success());
        let text = output.finish(Duration::from_secs(30));
        // 7 bytes a line: 5 lines fit in 40 bytes.
        assert_eq!(text, "[45 lines dropped]\nout 45\nout 46\nout 47\nout 48\nout 49\n");
    }

    /// A deadline kills the whole group: the shell's own child too.
    #[test]
    fn a_deadline_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let mut child = Child::spawn(&mut sh(&script), Ties { own_group: true, ..Ties::default() }).unwrap();
        let output = output_of(&mut child, 1024);
        let t = Instant::now();
        while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            assert!(t.elapsed() < Duration::from_secs(30));
            std::thread::sleep(Duration::from_millis(10));
        }
        let sleeper: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        assert_eq!(child.wait_until(Instant::now()).unwrap(), None, "the deadline passed");
        // Reaped by nobody here (its parent, the shell, is gone): a zombie or gone.
        let t = Instant::now();
        while crate::sys::proc::stat(sleeper).is_some_and(|s| !s.is_dead()) {
            assert!(t.elapsed() < Duration::from_secs(30), "the shell's child still runs");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(output.finish(Duration::from_secs(30)), "");
    }

    #[test]
    fn a_child_that_ends_in_time_is_waited_for() {
        let child = Child::spawn(&mut sh("exit 0"), Ties { die_with_parent: true, ..Ties::default() }).unwrap();
        let status = child.wait_until(Instant::now() + Duration::from_secs(60)).unwrap();
        assert!(status.is_some_and(|s| s.success()));
    }
}
