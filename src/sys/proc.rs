//! The one reader of Linux's `/proc`: a process's state, CPU time and start
//! time (`/proc/PID/stat`), its I/O counters (`/proc/PID/io`), children,
//! name and command line; the inotify watch limit
//! (`/proc/sys/fs/inotify/max_user_watches`). Every function answers `None` (or empty) where
//! `/proc` cannot tell: the process is gone, or the kernel lacks the file.

use std::fs;
use std::time::{Duration, SystemTime};

/// The fields of `/proc/PID/stat` that rrr uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `R`, `S`, `D`, `Z` (zombie), `X` (dead), …
    pub state: char,
    /// CPU time in user and kernel mode, in clock ticks.
    pub utime: u64,
    pub stime: u64,
    /// When the process started, in clock ticks after boot.
    pub start_ticks: u64,
}

impl Stat {
    /// A zombie or a dead process: not running, whatever `kill 0` says.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }

    /// CPU time used so far, in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.utime + self.stime
    }

    /// The wall-clock time the process started (boot time + start ticks;
    /// whole seconds of boot time, so a second or so off).
    pub fn started(&self) -> Option<SystemTime> {
        let hz = clock_ticks_per_second()?;
        Some(boot_time()? + Duration::from_millis(self.start_ticks.saturating_mul(1000) / hz))
    }
}

/// `/proc/PID/stat` of `pid`.
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parse one `/proc/PID/stat` line. The command name (field 2, in
/// parentheses) may hold spaces and parentheses itself, so the fields are
/// counted from the last `)`: field 3 (state) is the first after it.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field N of the whole line is fields[N - 3].
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat { state: fields.first()?.chars().next()?, utime: field(14)?, stime: field(15)?, start_ticks: field(22)? })
}

/// Bytes `pid` has read and written so far (`rchar`, `wchar` of
/// `/proc/PID/io`: files, pipes and sockets alike).
pub(crate) fn io_bytes(pid: u32) -> Option<(u64, u64)> {
    let io = fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let field = |k: &str| io.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse::<u64>().ok());
    Some((field("rchar: ")?, field("wchar: ")?))
}

/// The children of `pid` (of each of its threads).
pub(crate) fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(list) = fs::read_to_string(t.path().join("children")) {
                out.extend(list.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
            }
        }
    }
    out
}

/// `pid` and its descendants (children, theirs, …), `pid` first, at
/// most [`MAX_DESCENDANTS`] of them: rsync under its guard, the receiver
/// it forks, an ssh.
pub(crate) fn with_descendants(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut next = 0;
    while next < all.len() && all.len() <= MAX_DESCENDANTS {
        let kids = children(all[next]);
        all.extend(kids);
        next += 1;
    }
    all.truncate(MAX_DESCENDANTS + 1);
    all
}

/// See [`with_descendants`].
const MAX_DESCENDANTS: usize = 64;

/// Whether this kernel lists children (`/proc/PID/task/TID/children`,
/// CONFIG_PROC_CHILDREN), which [`children`] needs.
pub(crate) fn lists_children() -> bool {
    let me = std::process::id();
    std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
}

/// `fs.inotify.max_user_watches`: how many inotify watches one user may
/// hold (`None`: unreadable).
pub(crate) fn inotify_max_user_watches() -> Option<u64> {
    fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").ok().and_then(|s| s.trim().parse().ok())
}

/// The command line of `pid`, its words; `None` for a kernel thread or a
/// zombie (an empty `cmdline`).
pub(crate) fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> =
        raw.split(|b| *b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
    (!words.is_empty()).then_some(words)
}

/// The inodes of the sockets `pid` holds open (its `/proc/PID/fd/*`
/// links read `socket:[INODE]`).
pub(crate) fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    fds.flatten()
        .filter_map(|fd| {
            let link = fs::read_link(fd.path()).ok()?;
            link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// Boot time (`btime` of `/proc/stat`).
fn boot_time() -> Option<SystemTime> {
    let secs = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<u64>().ok()))?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

fn clock_ticks_per_second() -> Option<u64> {
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    u64::try_from(hz).ok().filter(|h| *h > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        // A name with spaces and parentheses, as `(a) b (c)` would be.
        let line = "4242 ((a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 5 0 0 20 0 1 0 98765 1000 10 \
                    18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        assert_eq!(parse_stat(line), Some(Stat { state: 'S', utime: 17, stime: 5, start_ticks: 98765 }));
        assert_eq!(parse_stat("12 (x) Z 1"), None, "too few fields");
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn this_process_runs_and_started_before_now() {
        let me = stat(std::process::id()).expect("/proc/self/stat");
        assert!(!me.is_dead());
        let started = me.started().expect("boot time and clock ticks");
        assert!(started <= SystemTime::now() + Duration::from_secs(2));
        assert!(started > SystemTime::now() - Duration::from_secs(24 * 3600), "this test process is young");
        assert!(io_bytes(std::process::id()).is_some());
        assert!(cmdline(std::process::id()).is_some_and(|w| !w.is_empty()));
    }

    #[test]
    fn descendants_at_any_depth() {
        // sh → sh → sleep: a grandchild, as rsync's receiver is under its guard.
        let mut sh = std::process::Command::new("sh").args(["-c", "sh -c 'sleep 30; true' & wait"]).spawn().unwrap();
        let t = std::time::Instant::now();
        let mut all = Vec::new();
        while all.len() < 3 && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
            all = with_descendants(sh.id());
        }
        assert_eq!(all.len(), 3, "{all:?}");
        assert_eq!(all[0], sh.id());
        assert!(cmdline(all[2]).is_some_and(|w| w[0] == "sleep"), "{all:?}");
        for p in all.iter().rev() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p as i32), nix::sys::signal::Signal::SIGKILL);
        }
        sh.wait().unwrap();
    }

    #[test]
    fn a_zombie_is_dead_and_its_children_listed() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let t = std::time::Instant::now();
        while !stat(pid).is_some_and(|s| s.is_dead()) {
            assert!(t.elapsed() < Duration::from_secs(30), "{:?}", stat(pid));
            std::thread::sleep(Duration::from_millis(10));
        }
        if lists_children() {
            assert!(children(std::process::id()).contains(&pid));
        }
        child.wait().unwrap();
        assert_eq!(stat(pid), None);
    }
}
