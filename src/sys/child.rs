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
    /// The child and every process it forks die with rrr, even after
    /// kill -9: it runs under a guard process ([`guard`]) that the kernel
    /// tells when the thread that spawned it dies (`PR_SET_PDEATHSIG`;
    /// spawn it from the thread that waits for it), and that then sends
    /// SIGTERM to the child and the child's own children at once. A stop
    /// passed on to the child (`forward_stop`) reaches them the same way.
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
            let parent = nix::unistd::getpid().as_raw();
            // SAFETY: std has no safe way to run code between fork and
            // exec; `guard::split` makes only async-signal-safe system
            // calls (no allocation, no locks), as pre_exec requires.
            unsafe {
                cmd.pre_exec(move || guard::split(parent));
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

/// The guard between rrr and a child that must not outlive it (rsync).
///
/// `PR_SET_PDEATHSIG` reaches only the process that set it, and it is not
/// inherited by the processes that one forks: rsync's receiver, which
/// rsync forks for a pull, went on writing files from what was in flight
/// for 0.3 to 0.5 s after rrr was killed (about 190 files of 2 KB at
/// `--bwlimit=1000`), and after a plain SIGTERM to rsync too. So the
/// child std forks for the command (C) does not exec it: it forks once
/// more, the grandchild (R) execs the command, and C stays as the guard.
/// C has `PR_SET_PDEATHSIG(SIGTERM)` towards rrr's spawning thread, and
/// its SIGTERM (rrr died, or rrr passed on a stop, or its stall watchdog
/// stopped the call) goes to R and R's children at once, so the receiver
/// stops with its generator. R has `PR_SET_PDEATHSIG(SIGKILL)` towards C
/// (a guard killed outright takes R along). C closes every descriptor
/// (std's exec-status pipe included: R's exec still reports there), waits
/// for R and ends as R ended: the same exit code, or the same signal.
/// It ignores SIGINT, SIGHUP and SIGUSR1 (rrr's handlers of those would
/// run on its stale copy of rrr's memory).
/// After a stop, R's children may linger in their cleanup (rsync's
/// receiver, now and then, for seconds, writing nothing): C is their
/// subreaper, waits up to [`LINGER_MS`] for them and kills what is left,
/// so that when rrr's call returns no rsync of it runs any more. All of
/// it is async-signal-safe system calls on fixed buffers.
mod guard {
    use std::io;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

    /// R's pid, for C's handler.
    static CHILD: AtomicI32 = AtomicI32::new(0);
    /// A stop came (C's SIGTERM), and R's children when it came.
    static STOPPING: AtomicBool = AtomicBool::new(false);
    static KIDS: [AtomicI32; 32] = [const { AtomicI32::new(0) }; 32];
    /// How long R's children may take to end after a stop once R has.
    const LINGER_MS: u32 = 1000;

    fn check(rc: libc::c_int) -> io::Result<()> {
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Run in std's forked child, before exec: returns `Ok` in R (which
    /// then execs the command); never returns in C, the guard.
    ///
    /// # Safety
    /// Only between fork and exec (`Command::pre_exec`).
    pub(super) unsafe fn split(rrr: libc::pid_t) -> io::Result<()> {
        let mut term: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut term);
        libc::sigaddset(&mut term, libc::SIGTERM);
        // Until R's pid is known to the handler.
        check(libc::sigprocmask(libc::SIG_BLOCK, &term, &mut before))?;
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0))?;
        if libc::getppid() != rrr {
            return Err(io::Error::other("rrr exited before the child started"));
        }
        let guard = libc::getpid();
        let r = libc::fork();
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        if r == 0 {
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0))?;
            if libc::getppid() != guard {
                return Err(io::Error::other("the guard exited before the child started"));
            }
            check(libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()))?;
            return Ok(());
        }
        CHILD.store(r, Ordering::SeqCst);
        // R's children come to C when R is gone, so that C can wait for them.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_term as extern "C" fn(libc::c_int) as usize;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGTERM, &act, std::ptr::null_mut());
        // rrr's own handlers (a stop, a wake-up, a reload) would run here on
        // a stale copy of rrr's memory: its registered children, say. A
        // Ctrl-C reaches R from the terminal itself, and rrr passes its
        // stop on as SIGTERM: the guard has no use for any of them.
        for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGUSR1] {
            libc::signal(sig, libc::SIG_IGN);
        }
        close_all();
        libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        let mut status = 0;
        loop {
            let w = libc::waitpid(r, &mut status, 0);
            if w == r {
                break;
            }
            if w < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if STOPPING.load(Ordering::SeqCst) {
            reap_lingering();
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }

    /// After a stop: wait up to [`LINGER_MS`] for R's children (now C's),
    /// then kill those left and reap them. Only the children R had at the
    /// stop: anything else that came to C (an ssh master that daemonized)
    /// is left alone.
    unsafe fn reap_lingering() {
        let pending = || KIDS.iter().any(|k| k.load(Ordering::SeqCst) > 0);
        let forget = |pid: libc::pid_t| {
            for k in &KIDS {
                let _ = k.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
            }
        };
        let step = libc::timespec { tv_sec: 0, tv_nsec: 20_000_000 };
        let mut waited = 0;
        while pending() && waited < LINGER_MS {
            let mut st = 0;
            let w = libc::waitpid(-1, &mut st, libc::WNOHANG);
            if w > 0 {
                forget(w);
                continue;
            }
            if w < 0 && *libc::__errno_location() == libc::ECHILD {
                return;
            }
            libc::nanosleep(&step, std::ptr::null_mut());
            waited += 20;
        }
        for k in &KIDS {
            let pid = k.swap(0, Ordering::SeqCst);
            // Unreaped, ours since R died: the pid is still its.
            if pid > 0 && libc::kill(pid, libc::SIGKILL) == 0 {
                let mut st = 0;
                while libc::waitpid(pid, &mut st, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
            }
        }
    }

    /// Close every descriptor of the guard: it needs none, and std's
    /// exec-status pipe must close for the spawn to return.
    unsafe fn close_all() {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == 0 {
            return;
        }
        for fd in 0..65_536 {
            libc::close(fd);
        }
    }

    /// SIGTERM to the guard: to R's children, then to R.
    extern "C" fn on_term(_: libc::c_int) {
        let r = CHILD.load(Ordering::SeqCst);
        if r <= 0 {
            return;
        }
        // SAFETY: kill(2) and the /proc reads of `children_of` are
        // async-signal-safe system calls on stack buffers; R is not
        // reaped before this process's waitpid, so its pid is still its.
        unsafe {
            let mut kids = [0 as libc::pid_t; 32];
            let n = children_of(r, &mut kids);
            for (k, slot) in kids[..n].iter().zip(&KIDS) {
                slot.store(*k, Ordering::SeqCst);
                libc::kill(*k, libc::SIGTERM);
            }
            STOPPING.store(true, Ordering::SeqCst);
            libc::kill(r, libc::SIGTERM);
        }
    }

    /// The children of `pid` (`/proc/PID/task/PID/children`), at most
    /// `out.len()`; how many.
    unsafe fn children_of(pid: libc::pid_t, out: &mut [libc::pid_t]) -> usize {
        let mut path = [0u8; 64];
        let mut len = 0;
        for part in [&b"/proc/"[..], &[], &b"/task/"[..], &[], &b"/children"[..]] {
            let digits;
            let bytes: &[u8] = if part.is_empty() {
                digits = decimal(pid);
                &digits.0[..digits.1]
            } else {
                part
            };
            path[len..len + bytes.len()].copy_from_slice(bytes);
            len += bytes.len();
        }
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return 0;
        }
        let mut buf = [0u8; 512];
        let got = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        let mut n = 0;
        let mut cur: libc::pid_t = 0;
        for &b in &buf[..got.max(0) as usize] {
            if b.is_ascii_digit() {
                cur = cur * 10 + libc::pid_t::from(b - b'0');
            } else if cur > 0 && n < out.len() {
                out[n] = cur;
                n += 1;
                cur = 0;
            }
        }
        n
    }

    /// `v` in decimal, in a fixed buffer, and its length.
    fn decimal(v: libc::pid_t) -> ([u8; 12], usize) {
        let mut tmp = [0u8; 12];
        let (mut v, mut i) = (v.max(0) as u32, tmp.len());
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let mut out = [0u8; 12];
        out[..tmp.len() - i].copy_from_slice(&tmp[i..]);
        (out, tmp.len() - i)
    }

    #[cfg(test)]
    #[test]
    fn decimal_and_children() {
        assert_eq!(decimal(0), (*b"0\0\0\0\0\0\0\0\0\0\0\0", 1));
        let (d, n) = decimal(4_194_304);
        assert_eq!(&d[..n], b"4194304");
        // A shell (one thread) with two children of its own.
        let mut sh = std::process::Command::new("sh").args(["-c", "sleep 30 & sleep 30 & wait"]).spawn().unwrap();
        let mut kids = [0; 32];
        let t = std::time::Instant::now();
        let mut n = 0;
        while n < 2 && t.elapsed() < std::time::Duration::from_secs(30) {
            std::thread::sleep(std::time::Duration::from_millis(10));
            // SAFETY: reads /proc into the buffer given.
            n = unsafe { children_of(sh.id() as libc::pid_t, &mut kids) };
        }
        assert_eq!(n, 2, "{:?}", &kids[..n]);
        for k in &kids[..n] {
            assert!(crate::sys::proc::cmdline(*k as u32).is_some_and(|w| w[0] == "sleep"), "{k}");
            // SAFETY: the shell's children, alive until it is killed.
            unsafe { libc::kill(*k, libc::SIGKILL) };
        }
        sh.wait().unwrap();
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

    /// The guard is a fork of rrr that never execs: it must not run
    /// rrr's handlers on its stale copy of rrr's memory. A Ctrl-C reaches
    /// it with rsync (one process group): rrr's SIGINT handler there
    /// passed a stop to the children rrr had registered when the guard
    /// was forked, pids that may belong to anyone by then.
    #[test]
    fn the_guard_runs_none_of_rrrs_handlers() {
        use std::os::unix::process::ExitStatusExt;
        crate::sys::signals::install();
        let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
        let registered = ForwardTo::child(victim.id());
        let child = Child::spawn(&mut sh("sleep 30"), Ties { die_with_parent: true, ..Ties::default() }).unwrap();
        drop(registered);
        let guard = child.id();
        let t = Instant::now();
        while crate::sys::proc::with_descendants(guard).len() < 2 {
            assert!(t.elapsed() < Duration::from_secs(30), "the guarded command runs");
            std::thread::sleep(Duration::from_millis(10));
        }
        // A Ctrl-C, then a stop: SIGINT is delivered first (the lower number).
        let _ = nix::sys::signal::kill(Pid::from_raw(guard as i32), Signal::SIGINT);
        let _ = nix::sys::signal::kill(Pid::from_raw(guard as i32), Signal::SIGTERM);
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM), "it ends as its command did");
        // A SIGTERM the guard sent would have decided the victim's end already.
        victim.kill().unwrap();
        assert_eq!(victim.wait().unwrap().signal(), Some(libc::SIGKILL), "the guard signalled nothing of rrr's");
    }

    #[test]
    fn a_child_that_ends_in_time_is_waited_for() {
        let child = Child::spawn(&mut sh("exit 0"), Ties { die_with_parent: true, ..Ties::default() }).unwrap();
        let status = child.wait_until(Instant::now() + Duration::from_secs(60)).unwrap();
        assert!(status.is_some_and(|s| s.success()));
    }
}
