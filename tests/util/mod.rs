//! The integration tests' harness: run the real `rrr` binary ([`cmd`]),
//! find fixtures, build and compare temp trees, wait for a condition, and
//! ([`rsyncd`]) a real `rsync --daemon` on 127.0.0.1.

pub mod cmd;
pub mod fixture;
pub mod mirror;
pub mod names;
pub mod net;
pub mod rsyncd;

pub use cmd::{kill, Rrr, Running};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub fn rrr_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rrr")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Run rrr with args; returns the output (never panics on non-zero exit).
pub fn rrr(args: &[&str]) -> Output {
    Rrr::new().args(args).output()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert success and return stdout.
#[track_caller]
pub fn ok(args: &[&str]) -> String {
    stdout(&Rrr::new().args(args).assert_ok())
}

/// Every step directory of the Perl reference fixtures.
pub fn fixture_steps() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = fixtures().join("perl-0.4.3");
    for scen in std::fs::read_dir(&base).unwrap().flatten() {
        if !scen.path().is_dir() {
            continue;
        }
        for step in std::fs::read_dir(scen.path()).unwrap().flatten() {
            if step.path().join("RECENT.recent").exists() {
                out.push(step.path());
            }
        }
    }
    out.sort();
    assert!(out.len() >= 13, "fixture steps missing under {}", base.display());
    out
}

/// Remove the `Producers` block (YAML) so files by different producers compare.
pub fn mask_producers(yaml: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in yaml.split_inclusive('\n') {
        if line.starts_with("  Producers:") {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("    ") {
            continue;
        }
        skipping = false;
        out.push_str(line);
    }
    out
}

/// `root/RECENT.recent` as an argument.
pub fn principal(root: &Path) -> String {
    s(&root.join("RECENT.recent")).to_string()
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Write `root/rel`, creating its directories.
pub fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Make `dirs` (each a component) below `root` and write `files` into the
/// last one (`deep\n` each), through open directories: the whole path may
/// be longer than the kernel takes in one piece (PATH_MAX), or than rsync
/// can carry.
pub fn write_deep(root: &Path, dirs: &[String], files: &[String]) {
    use nix::fcntl::{open, openat, OFlag};
    use nix::sys::stat::{mkdirat, Mode};
    let mut fd = open(root, OFlag::O_DIRECTORY | OFlag::O_RDONLY, Mode::empty()).unwrap();
    for d in dirs {
        let _ = mkdirat(&fd, d.as_str(), Mode::from_bits_truncate(0o755));
        fd = openat(&fd, d.as_str(), OFlag::O_DIRECTORY | OFlag::O_RDONLY, Mode::empty()).unwrap();
    }
    for f in files {
        let file = openat(&fd, f.as_str(), OFlag::O_WRONLY | OFlag::O_CREAT, Mode::from_bits_truncate(0o644)).unwrap();
        nix::unistd::write(&file, b"deep\n").unwrap();
    }
}

/// Poll `cond` every 10 ms until it holds (`true`) or `limit` has passed
/// (`false`, after one last look).
pub fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// Whether process `pid` has a handler installed for `signal` (bit
/// `signal - 1` of `SigCgt` in /proc/PID/status): after this, the signal
/// reaches rrr's handler instead of ending the process.
pub fn catches_signal(pid: u32, signal: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim);
    mask.and_then(|m| u64::from_str_radix(m, 16).ok()).is_some_and(|m| m & (1 << (signal - 1)) != 0)
}

/// Wait until `cond` holds; panic naming `what` after `limit`.
#[track_caller]
pub fn wait_for(what: &str, limit: Duration, cond: impl FnMut() -> bool) {
    assert!(poll_until(limit, cond), "timed out after {limit:?} waiting for {what}");
}

/// An epoch as a key that sorts as its decimal value (asserting that it is
/// a plain decimal number).
pub fn decimal_key(e: &str) -> String {
    let (int, frac) = e.split_once('.').unwrap_or((e, ""));
    let int = int.trim_start_matches('0');
    assert!(
        int.len() <= 20 && frac.len() <= 70 && int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()),
        "{e:?} is not a decimal number"
    );
    format!("{int:0>20}.{frac:0<70}")
}

/// A tmpfs mounted on `dir` for the test's life (rrr's tests run as root).
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    pub fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", s(dir)])
            .output()
            .unwrap();
        assert!(o.status.success(), "mount a tmpfs (tests need root): {}", stderr(&o));
        Tmpfs(dir.to_path_buf())
    }
    pub fn umount(&self) {
        let o = Command::new("umount").arg(&self.0).output().unwrap();
        assert!(o.status.success(), "umount: {}", stderr(&o));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}
