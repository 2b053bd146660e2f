//! Locks: the recentfile lock shared with the Perl tools, and rrr's own run
//! locks.
//!
//! **The recentfile lock** is the reference's `<recentfile>.lock/`
//! directory holding `process` = `<pid>\n` (protocol.md 8.1): whoever creates the
//! directory holds the lock, so rrr and the Perl tools exclude each other
//! on one tree. The reference breaks a lock whose pid is not running by
//! writing its own `process` file into the directory; by then the holder
//! may have released it and a third process taken it again, and both go
//! on writing. rrr breaks a stale lock so that at most one process can win
//! and nothing is written into a directory that another process may hold:
//!
//! 1. an rrr holder keeps its lock directory open with an exclusive
//!    `flock(2)` on it, so another rrr process tells a held directory from
//!    a stale one without trusting a pid (and pid reuse cannot fool it);
//! 2. a waiter opens the directory (that instance of it), takes its flock
//!    without waiting (failing: a live rrr holder), checks that the path
//!    still names the instance it opened, and reads the holder through the
//!    open directory. Only one process holds the flock of an instance, so
//!    only one can break it;
//! 3. the holder is stale when its pid is not running (a zombie counts as
//!    not running), or is running but started after the `process` file was
//!    written (a reused pid: every take-over rewrites that file); a lock
//!    left without `process` is stale when a `process.<pid>` leftover of an
//!    interrupted rrr claim names a dead pid, or after
//!    [`ORPHAN_LOCK_SECS`]. A live pid that started earlier is a holder
//!    (a Perl writer): rrr never takes a lock that a live process holds;
//! 4. the break checks once more that the path names the instance and that
//!    `process` is what was judged, empties the directory through the open
//!    descriptor and removes it; `rmdir` fails on a directory that somebody
//!    wrote into meanwhile, and then the waiter simply looks again. After a
//!    break everybody competes with `mkdir` again.
//!
//! A stale lock that rrr may not remove (another user's) is refused with
//! the command its owner must run. Waits are silent for `WAIT_NOTICE`,
//! then say once who holds the lock. A signal ends a wait when the command
//! asked for that (`signals::install_for_short_command`).
//!
//! **Run locks** (`.rrr/rmirror.flock`, `.rrr/watch.flock`) are plain
//! `flock(2)` locks on a file that records the holder for messages: they
//! vanish with their process, so nothing stale can stop the next run.

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::UnlinkatFlags;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A lock directory without `process` (and without a leftover naming its
/// claimant) older than this is stale.
pub const ORPHAN_LOCK_SECS: u64 = 10;

/// Default time to wait for a lock (the reference's `locktimeout`).
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(600);

/// Waiting shorter than this is ordinary contention and says nothing.
pub(crate) const WAIT_NOTICE: Duration = Duration::from_secs(5);

/// A process start time this much later than the `process` file's mtime
/// means a reused pid (boot time in /proc/stat has whole seconds).
const REUSE_SLACK: Duration = Duration::from_secs(2);

/// Why a lock could not be taken. The exit status depends on the variant
/// (`exit::exit_for_error`: Timeout and Busy 75, Interrupted 130, else 2).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The recentfile lock stayed held for the whole timeout.
    #[error("timed out after {} s waiting for lock {}{}", waited.as_secs(), lock.display(), held_by(*holder))]
    Timeout {
        /// The lock directory.
        lock: PathBuf,
        /// The holder's pid, when its `process` file names one.
        holder: Option<u32>,
        /// How long this process waited.
        waited: Duration,
    },
    /// A run lock is held by another process (described from its file).
    #[error("lock {} is held by {holder}", lock.display())]
    Busy {
        /// The run lock's file.
        lock: PathBuf,
        /// Who holds it, as its file says.
        holder: String,
    },
    /// A stale lock that this user may not remove.
    #[error(
        "lock {} is stale ({why}) but belongs to {owner}, and this user may not remove it; as {owner}, run: rm -r -- {}",
        lock.display(),
        crate::sys::child::shell_quote(&lock.to_string_lossy())
    )]
    NotOwner {
        /// The lock directory.
        lock: PathBuf,
        /// Why it is stale.
        why: String,
        /// The user who owns it (and may remove it).
        owner: String,
    },
    /// A signal asked the command to stop while it waited.
    #[error("interrupted while waiting for lock {}", lock.display())]
    Interrupted {
        /// The lock waited for.
        lock: PathBuf,
    },
    /// The lock could not be created, read or removed. The I/O error is
    /// the source (`{:#}` prints it once).
    #[error("cannot take lock {}", lock.display())]
    Io {
        /// The lock directory or file.
        lock: PathBuf,
        /// The cause.
        #[source]
        err: io::Error,
    },
}

/// The end of a timeout's message: who holds the lock.
fn held_by(holder: Option<u32>) -> String {
    match holder {
        Some(pid) => format!(" held by {}", describe_pid(pid)),
        None => " (holder unknown)".to_string(),
    }
}

/// A held recentfile lock; released on drop.
#[derive(Debug)]
pub(crate) struct Lock {
    dir: PathBuf,
    /// The lock directory, open and flocked for as long as it is held.
    handle: fs::File,
}

/// What the `process` file of a lock directory says.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Holder {
    Pid(u32),
    /// No `process` file.
    Missing,
    /// Not a pid (yet: a Perl writer between `open` and `print`).
    Unreadable,
}

/// What a waiter concluded about a lock directory it looked at.
enum Verdict {
    /// Released meanwhile: try `mkdir` at once.
    Gone,
    Held(Option<u32>),
    /// Stale, with the reason; the open directory (flocked) and what was
    /// judged, for the break.
    Stale {
        why: String,
        dir: fs::File,
        judged: Holder,
        leftovers: Vec<std::ffi::OsString>,
    },
}

impl Lock {
    /// Take the lock of `rfile` (`<rfile>.lock/`), waiting up to `timeout`.
    pub fn acquire(rfile: &Path, timeout: Duration) -> Result<Lock, LockError> {
        let dir = lock_dir(rfile);
        let me = std::process::id();
        let start = Instant::now();
        let mut told: Option<Option<u32>> = None;
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => match claim(&dir, me)? {
                    Some(lock) => return Ok(lock),
                    None => continue,
                },
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(LockError::Io { lock: dir, err }),
            }
            let holder = match inspect(&dir, me)? {
                Verdict::Gone => continue,
                Verdict::Held(holder) => holder,
                Verdict::Stale { why, dir: fd, judged, leftovers } => {
                    if break_stale(&dir, &fd, &judged, &leftovers, &why)? {
                        crate::store::notice(&format!("removed stale lock {}: {why}", dir.display()));
                    }
                    continue;
                }
            };
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(LockError::Timeout { lock: dir, holder, waited });
            }
            if crate::sys::signals::wait_interrupted() {
                return Err(LockError::Interrupted { lock: dir });
            }
            if waited >= WAIT_NOTICE && told != Some(holder) {
                let who = holder.map_or_else(|| "an unknown process".to_string(), describe_pid);
                crate::store::notice(&format!(
                    "waiting for lock {} held by {who} ({} s so far, timeout {} s)",
                    dir.display(),
                    waited.as_secs(),
                    timeout.as_secs()
                ));
                told = Some(holder);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Lock {
    /// Whether this process still holds the lock: the path still names the
    /// directory it made, and `process` still names this process. A Perl
    /// writer that judged an earlier holder dead writes its own pid into
    /// the directory (and removes the directory when done), so either
    /// change means somebody else may be writing the file now.
    pub fn still_ours(&self) -> bool {
        same_instance(&self.handle, &self.dir) && read_holder(&self.handle).0 == Holder::Pid(std::process::id())
    }

    /// Who holds the lock now, as far as `process` says, for messages.
    pub fn intruder(&self) -> String {
        match read_holder(&self.handle).0 {
            Holder::Pid(pid) => describe_pid(pid),
            Holder::Missing => "a process that has since released it".to_string(),
            Holder::Unreadable => "an unknown process".to_string(),
        }
    }

    /// The lock directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove only what is ours: a Perl writer that broke this lock
        // while we held it (it may: docs/decisions.md#locks) removes its own.
        match read_holder(&self.handle).0 {
            Holder::Pid(p) if p == std::process::id() => {
                let _ = unlink_at(&self.handle, "process");
                let _ = fs::remove_dir(&self.dir);
            }
            // The writer noticed and said so (`origin::Loaded::save`).
            _ => tracing::debug!("lock {} was taken over while held; left to its new holder", self.dir.display()),
        }
    }
}

/// `<rfile>.lock`
pub(crate) fn lock_dir(rfile: &Path) -> PathBuf {
    let mut s = rfile.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// We created `dir`: flock it, then write `process` through it
/// (`process.<pid>`, renamed). `None`: the directory was no longer ours.
fn claim(dir: &Path, me: u32) -> Result<Option<Lock>, LockError> {
    let io_err = |err| LockError::Io { lock: dir.to_path_buf(), err };
    let handle = match open_dir(dir) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    // Blocking: a waiter holds it only for the moment of its inspection.
    flock(&handle);
    if !same_instance(&handle, dir) {
        return Ok(None);
    }
    let tmp = format!("process.{me}");
    let res = write_at(&handle, &tmp, format!("{me}\n").as_bytes()).and_then(|()| {
        failpoint("LOCK_CLAIM");
        link_at(&handle, &tmp, "process")
    });
    let _ = unlink_at(&handle, &tmp);
    match res {
        Ok(()) => {}
        // A Perl writer that judged the previous holder dead wrote its pid
        // into the directory we just made: it holds it now, and takes it
        // down when done.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => {
            let _ = fs::remove_dir(dir);
            return Err(io_err(e));
        }
    }
    failpoint("LOCK_HELD");
    Ok(Some(Lock { dir: dir.to_path_buf(), handle }))
}

/// Look at a lock directory that exists (see the module doc).
fn inspect(dir: &Path, me: u32) -> Result<Verdict, LockError> {
    let fd = match open_dir(dir) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Verdict::Gone),
        // Cannot even look inside: treat it as held, the timeout reports it.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(Verdict::Held(None)),
        Err(err) => return Err(LockError::Io { lock: dir.to_path_buf(), err }),
    };
    if try_flock(&fd) == FlockTry::Held {
        let holder = match read_holder(&fd).0 {
            Holder::Pid(p) => Some(p),
            _ => None,
        };
        return Ok(Verdict::Held(holder));
    }
    if !same_instance(&fd, dir) {
        return Ok(Verdict::Gone);
    }
    let (holder, written) = read_holder(&fd);
    failpoint("LOCK_DECIDE");
    let leftovers = leftover_claims(dir);
    let why = match &holder {
        Holder::Pid(pid) if *pid == me => format!("process {pid} is this process, which does not hold it"),
        Holder::Pid(pid) => match pid_state(*pid, written) {
            PidState::Running => return Ok(Verdict::Held(Some(*pid))),
            PidState::NotRunning => format!("process {pid} is not running"),
            PidState::Reused => format!("process {pid} started after the lock was taken (a reused pid)"),
        },
        Holder::Missing if leftovers.is_empty() => {
            if !older_than(&fd, ORPHAN_LOCK_SECS) {
                return Ok(Verdict::Held(None));
            }
            format!("no process file for over {ORPHAN_LOCK_SECS} s")
        }
        Holder::Missing => {
            // A claim interrupted between its temp file and the rename.
            let live = leftovers
                .iter()
                .filter_map(|n| leftover_pid(n))
                .find(|pid| *pid != me && pid_state(*pid, None) == PidState::Running);
            if let Some(pid) = live {
                return Ok(Verdict::Held(Some(pid)));
            }
            "an interrupted claim left it behind".to_string()
        }
        Holder::Unreadable if written.is_some_and(|t| age(t) > Duration::from_secs(ORPHAN_LOCK_SECS)) => {
            "its process file holds no pid".to_string()
        }
        Holder::Unreadable => return Ok(Verdict::Held(None)),
    };
    Ok(Verdict::Stale { why, dir: fd, judged: holder, leftovers })
}

/// Remove a lock judged stale. `Ok(false)`: it changed meanwhile; look again.
fn break_stale(
    dir: &Path,
    fd: &fs::File,
    judged: &Holder,
    leftovers: &[std::ffi::OsString],
    why: &str,
) -> Result<bool, LockError> {
    if !same_instance(fd, dir) || read_holder(fd).0 != *judged {
        return Ok(false);
    }
    let refused = |err: io::Error| match err.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EACCES | Errno::EPERM) => LockError::NotOwner {
            lock: dir.to_path_buf(),
            why: why.to_string(),
            owner: fs::symlink_metadata(dir).map_or_else(|_| "its owner".to_string(), |m| user_name(m.uid())),
        },
        _ => LockError::Io { lock: dir.to_path_buf(), err },
    };
    let mut names: Vec<&[u8]> = vec![b"process"];
    names.extend(leftovers.iter().map(|n| n.as_bytes()));
    for name in names {
        match unlink_at_bytes(fd, name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(refused(e)),
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.raw_os_error().map(Errno::from_raw),
                Some(Errno::ENOTEMPTY | Errno::EEXIST | Errno::ENOENT)
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(refused(e)),
    }
}

/// `process.<pid>` files in the lock directory: claims interrupted
/// between writing the temp file and renaming it.
fn leftover_claims(dir: &Path) -> Vec<std::ffi::OsString> {
    let Ok(rd) = fs::read_dir(dir) else { return Vec::new() };
    rd.flatten().map(|e| e.file_name()).filter(|n| n.as_bytes().starts_with(b"process.")).collect()
}

fn leftover_pid(name: &std::ffi::OsStr) -> Option<u32> {
    std::str::from_utf8(name.as_bytes().strip_prefix(b"process.")?).ok()?.parse().ok()
}

/// The holder named by `process` (read through the open directory) and
/// that file's mtime.
fn read_holder(dir: &fs::File) -> (Holder, Option<SystemTime>) {
    let file = match open_at(dir, "process", OFlag::O_RDONLY) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Holder::Missing, None),
        Err(_) => return (Holder::Unreadable, None),
    };
    let written = file.metadata().and_then(|m| m.modified()).ok();
    let mut text = String::new();
    if file.take(64).read_to_string(&mut text).is_err() {
        return (Holder::Unreadable, written);
    }
    match text.trim().parse::<u32>() {
        Ok(pid) if pid > 0 => (Holder::Pid(pid), written),
        _ => (Holder::Unreadable, written),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PidState {
    Running,
    NotRunning,
    /// Running, but started after the lock was written.
    Reused,
}

/// Whether `pid` can be the process that wrote a `process` file at
/// `written`. `kill 0` failing with EPERM means alive (another user's).
fn pid_state(pid: u32, written: Option<SystemTime>) -> PidState {
    if !process_alive(pid) {
        return PidState::NotRunning;
    }
    match crate::sys::proc::stat(pid) {
        Some(st) if st.is_dead() => PidState::NotRunning,
        Some(st) if st.started().is_some_and(|started| written.is_some_and(|w| started > w + REUSE_SLACK)) => {
            PidState::Reused
        }
        _ => PidState::Running,
    }
}

/// `kill 0`; EPERM means alive (another user's process).
pub(crate) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// `process N (command)` for messages.
fn describe_pid(pid: u32) -> String {
    match crate::sys::proc::cmdline(pid) {
        Some(words) => {
            let mut cmd = words.join(" ");
            if cmd.len() > 80 {
                let cut = (0..=80).rev().find(|i| cmd.is_char_boundary(*i)).unwrap_or(0);
                cmd.truncate(cut);
                cmd.push('…');
            }
            format!("process {pid} ({})", crate::recentfile::escape_path(&cmd))
        }
        None => format!("process {pid}"),
    }
}

/// The user name of `uid` through the system's resolver (so LDAP and
/// other NSS users too), or `uid N`.
fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => user.name,
        _ => format!("uid {uid}"),
    }
}

fn age(t: SystemTime) -> Duration {
    SystemTime::now().duration_since(t).unwrap_or_default()
}

fn older_than(fd: &fs::File, secs: u64) -> bool {
    fd.metadata().and_then(|m| m.modified()).is_ok_and(|t| age(t) > Duration::from_secs(secs))
}

// --- the directory primitives, through an open descriptor -------------------

/// Open a directory (not a symlink to one) for `*at` calls and flock.
fn open_dir(dir: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new().read(true).custom_flags((OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW).bits()).open(dir)
}

/// Whether `dir` still names the directory open as `fd`. While `fd` is
/// open its inode cannot be reused, so equal (dev, ino) is proof.
fn same_instance(fd: &fs::File, dir: &Path) -> bool {
    match (fd.metadata(), fs::symlink_metadata(dir)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[derive(PartialEq, Eq)]
enum FlockTry {
    Got,
    Held,
}

/// Non-blocking exclusive flock. A filesystem without flock (some NFS)
/// counts as "got": the pid rules alone then decide, as in the reference.
fn try_flock(fd: &fs::File) -> FlockTry {
    match fd.try_lock() {
        Err(fs::TryLockError::WouldBlock) => FlockTry::Held,
        _ => FlockTry::Got,
    }
}

/// Blocking exclusive flock; as [`try_flock`], a failure other than a
/// signal counts as taken.
fn flock(fd: &fs::File) {
    while matches!(fd.lock(), Err(e) if e.kind() == io::ErrorKind::Interrupted) {}
}

/// A blocking exclusive `flock(2)` on the file `path` (made if missing),
/// held until the returned file is dropped: for a short read-modify-write
/// of a file under `.rrr/` (the journal of acknowledged events). Unlike
/// the recentfile lock's, a failure is an error naming the file.
pub(crate) fn flock_file(path: &Path) -> anyhow::Result<fs::File> {
    use anyhow::Context;
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    loop {
        match f.lock() {
            Ok(()) => return Ok(f),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
        }
    }
}

fn open_at(dir: &fs::File, name: &str, flags: OFlag) -> io::Result<fs::File> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(dir.as_fd(), name, flags, Mode::from_bits_truncate(0o644))?;
    Ok(fs::File::from(fd))
}

fn write_at(dir: &fs::File, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut f = open_at(dir, name, OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC)?;
    f.write_all(bytes)
}

/// A second name for `from`, failing with `AlreadyExists` where `to`
/// exists: unlike a rename it never replaces a `process` file that a Perl
/// writer put there (and, unlike `renameat2`, it works on NFS too).
fn link_at(dir: &fs::File, from: &str, to: &str) -> io::Result<()> {
    Ok(nix::unistd::linkat(dir.as_fd(), from, dir.as_fd(), to, AtFlags::empty())?)
}

fn unlink_at(dir: &fs::File, name: &str) -> io::Result<()> {
    unlink_at_bytes(dir, name.as_bytes())
}

fn unlink_at_bytes(dir: &fs::File, name: &[u8]) -> io::Result<()> {
    Ok(nix::unistd::unlinkat(dir.as_fd(), name, UnlinkatFlags::NoRemoveDir)?)
}

/// Test failpoint (debug builds only): with `RRR_FAILPOINT_<NAME>=DIR`,
/// announce `DIR/reached.<pid>` and wait for `DIR/go` (at most 60 s).
pub(crate) fn failpoint(name: &str) {
    #[cfg(debug_assertions)]
    if let Some(dir) = std::env::var_os(format!("RRR_FAILPOINT_{name}")) {
        let dir = PathBuf::from(dir);
        let _ = fs::write(dir.join(format!("reached.{}", std::process::id())), "");
        let start = Instant::now();
        while !dir.join("go").exists() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

// --- run locks -------------------------------------------------------------

/// rrr's own lock on a file under `.rrr/` (`rmirror.flock`, `watch.flock`):
/// an exclusive `flock(2)`, held until drop or the process's end. The
/// file records the holder (`<pid>\n<command line>\n`) for the message a
/// second run gives.
#[derive(Debug)]
pub struct RunLock {
    _file: fs::File,
}

impl RunLock {
    /// Take the lock at `path` without waiting: `LockError::Busy` names
    /// the holder. The parent directory must exist.
    pub fn try_acquire(path: &Path) -> Result<RunLock, LockError> {
        let io_err = |err| LockError::Io { lock: path.to_path_buf(), err };
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .mode(0o644)
            .open(path)
            .map_err(io_err)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let holder = describe_holder(&file).unwrap_or_else(|| "another process".to_string());
                return Err(LockError::Busy { lock: path.to_path_buf(), holder });
            }
            Err(fs::TryLockError::Error(err)) => return Err(io_err(err)),
        }
        let cmd: Vec<String> = std::env::args().collect();
        let record = format!("{}\n{}\n", std::process::id(), crate::recentfile::escape_path(cmd.join(" ")));
        file.set_len(0).and_then(|()| file.write_all(record.as_bytes())).map_err(io_err)?;
        Ok(RunLock { _file: file })
    }
}

/// The holder a run lock's file records, `process PID (command line)`;
/// `None` when it records none (a holder that has not written it yet).
pub(crate) fn describe_holder(file: &fs::File) -> Option<String> {
    let mut text = String::new();
    let _ = file.take(4096).read_to_string(&mut text);
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse::<u32>().ok()?;
    Some(match lines.next() {
        Some(cmd) if !cmd.is_empty() => format!("process {pid} ({cmd})"),
        _ => format!("process {pid}"),
    })
}

/// Remove a lock directory left by an older rrr (`.rrr/rmirror.lock/`),
/// whatever pid it names: call only while holding the run lock that
/// replaced it.
pub(crate) fn remove_legacy_lock_dir(dir: &Path) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let _ = fs::remove_file(e.path());
        }
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_excludes_and_releases() {
        let dir = tempfile::tempdir().unwrap();
        let rf = dir.path().join("RECENT-1h.yaml");
        let l = Lock::acquire(&rf, Duration::from_secs(1)).unwrap();
        assert_eq!(fs::read_to_string(lock_dir(&rf).join("process")).unwrap(), format!("{}\n", std::process::id()));
        // A second taker in this process sees the flock held and times out.
        match Lock::acquire(&rf, Duration::from_millis(50)) {
            Err(LockError::Timeout { .. }) => {}
            other => panic!("expected a timeout, got {other:?}"),
        }
        drop(l);
        assert!(!lock_dir(&rf).exists());
    }

    #[test]
    fn live_foreign_lock_times_out_and_dead_one_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let rf = dir.path().join("RECENT-1h.yaml");
        fs::create_dir(lock_dir(&rf)).unwrap();
        // pid 1 is alive in every namespace, and started before this file.
        fs::write(lock_dir(&rf).join("process"), "1\n").unwrap();
        match Lock::acquire(&rf, Duration::from_millis(50)) {
            Err(LockError::Timeout { holder: Some(1), .. }) => {}
            other => panic!("expected timeout, got {other:?}"),
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        fs::write(lock_dir(&rf).join("process"), format!("{dead}\n")).unwrap();
        let l = Lock::acquire(&rf, Duration::from_secs(1)).unwrap();
        drop(l);
    }

    #[test]
    fn reused_pid_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let rf = dir.path().join("RECENT-1h.yaml");
        let lock = lock_dir(&rf);
        fs::create_dir(&lock).unwrap();
        let mut young = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        fs::write(lock.join("process"), format!("{}\n", young.id())).unwrap();
        // Written an hour before the process started: its pid was reused.
        let f = fs::File::options().write(true).open(lock.join("process")).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(3600)).unwrap();
        drop(f);
        let l = Lock::acquire(&rf, Duration::from_secs(2)).unwrap();
        drop(l);
        young.kill().unwrap();
        young.wait().unwrap();
    }

    #[test]
    fn zombie_holder_is_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped yet: a zombie until wait().
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pid_state(pid, None), PidState::NotRunning);
        child.wait().unwrap();
        assert_eq!(pid_state(pid, None), PidState::NotRunning);
        assert_eq!(pid_state(std::process::id(), Some(SystemTime::now())), PidState::Running);
    }

    #[test]
    fn interrupted_claim_is_cleaned_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let rf = dir.path().join("RECENT-1h.yaml");
        let lock = lock_dir(&rf);
        fs::create_dir(&lock).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        fs::write(lock.join(format!("process.{dead}")), format!("{dead}\n")).unwrap();
        let start = Instant::now();
        let l = Lock::acquire(&rf, Duration::from_secs(30)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(ORPHAN_LOCK_SECS), "no orphan wait for a dead claimant");
        let names: Vec<_> = fs::read_dir(&lock).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("process")]);
        drop(l);
        assert!(!lock.exists());
    }

    #[test]
    fn run_lock_names_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rmirror.flock");
        let held = RunLock::try_acquire(&p).unwrap();
        match RunLock::try_acquire(&p) {
            Err(LockError::Busy { holder, .. }) => {
                assert!(holder.starts_with(&format!("process {} (", std::process::id())), "{holder}")
            }
            other => panic!("expected busy, got {other:?}"),
        }
        drop(held);
        // A process another test forks in this moment shares the lock's
        // open file until its exec closes it (O_CLOEXEC): the lock is free
        // again once that exec is done.
        let t0 = std::time::Instant::now();
        while let Err(e) = RunLock::try_acquire(&p) {
            assert!(t0.elapsed() < Duration::from_secs(10), "still held after its holder dropped it: {e}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
