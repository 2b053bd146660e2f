//! A real `rsync --daemon` on 127.0.0.1 for integration tests.
//!
//! [`RsyncDaemon::start`] writes an `rsyncd.conf` with the given modules into
//! a temporary directory, starts `rsync --daemon --no-detach` on a free
//! loopback port and waits until the port accepts connections. Dropping the
//! value kills the daemon and removes the directory.
//!
//! The daemon runs as the current user (`uid`/`gid` set to the numeric ids of
//! the test process, `use chroot = no`): started as root without them it would
//! drop to `nobody` and could not read the test's temporary directories.
//! [`RsyncDaemon::start_as_nobody`] is the exception (docs/decisions.md#tests), for a
//! file the daemon cannot read: the modules' paths and their parents must be
//! world-readable.
//!
//! [`RsyncDaemon::start_limited`] adds lines to every module (`max
//! connections = 1`) and arguments to the daemon (`--bwlimit=100`): an
//! upstream with limits.
//!
//! The rsync program is `rsync` from `PATH`, or `RRR_RSYNC` if set.

use std::fs;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A running rsync daemon serving read-only modules on 127.0.0.1.
pub struct RsyncDaemon {
    pub port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

impl RsyncDaemon {
    /// Starts a daemon serving `modules` (`(name, path)`), read only.
    ///
    /// Panics (with the daemon's log) if it does not accept connections
    /// within about 5 s, or if it cannot be started on any of 10 ports.
    pub fn start(modules: &[(&str, &Path)]) -> RsyncDaemon {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        RsyncDaemon::start_with(modules, &uid.to_string(), &gid.to_string(), "", &[])
    }

    /// A daemon as [`start`](RsyncDaemon::start) with `module_lines` (e.g.
    /// `max connections = 1`) in every module and `daemon_args` (e.g.
    /// `--bwlimit=100`) given to `rsync --daemon`.
    pub fn start_limited(modules: &[(&str, &Path)], module_lines: &str, daemon_args: &[&str]) -> RsyncDaemon {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        RsyncDaemon::start_with(modules, &uid.to_string(), &gid.to_string(), module_lines, daemon_args)
    }

    /// A daemon whose transfers run as `nobody`: it cannot read a file of
    /// mode 0600 owned by root, as a real origin's daemon cannot read a
    /// file its owner forgot to publish. Every module path, and each of its
    /// parents, must be world-readable (chmod the temp dirs 0755).
    pub fn start_as_nobody(modules: &[(&str, &Path)]) -> RsyncDaemon {
        RsyncDaemon::start_with(modules, "nobody", "nogroup", "", &[])
    }

    fn start_with(
        modules: &[(&str, &Path)],
        uid: &str,
        gid: &str,
        module_lines: &str,
        daemon_args: &[&str],
    ) -> RsyncDaemon {
        let dir = tempfile::Builder::new().prefix("rrr-rsyncd-").tempdir().expect("create temp dir for rsyncd");
        let conf = dir.path().join("rsyncd.conf");
        fs::write(&conf, config(dir.path(), modules, uid, gid, module_lines)).expect("write rsyncd.conf");
        let program = std::env::var_os("RRR_RSYNC").filter(|p| !p.is_empty()).unwrap_or_else(|| "rsync".into());

        let mut last_failure = String::new();
        for _attempt in 0..10 {
            let port = free_port();
            let stderr = fs::File::create(dir.path().join("stderr")).expect("create stderr file");
            let mut child = Command::new(&program)
                .arg("--daemon")
                .arg("--no-detach")
                .arg("--address=127.0.0.1")
                .arg(format!("--port={port}"))
                .arg(format!("--config={}", conf.display()))
                .args(daemon_args)
                .env("LANG", "C")
                .env("LC_ALL", "C")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {program:?} --daemon: {e}"));
            match wait_until_listening(&mut child, port) {
                Ok(()) => return RsyncDaemon { port, child, dir },
                Err(why) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_failure = why;
                    // A port taken by someone else between our probe and the
                    // daemon's bind: try another one.
                }
            }
        }
        panic!("rsync daemon did not start: {last_failure}\n{}", read_logs(dir.path()));
    }

    /// `rsync://127.0.0.1:PORT/module`.
    pub fn url(&self, module: &str) -> String {
        format!("rsync://127.0.0.1:{}/{module}", self.port)
    }

    /// How many transfers (client connections that asked for files) the
    /// daemon has served: its log's `rsync on MODULE/PATH` lines.
    pub fn transfers(&self) -> usize {
        self.log_file().lines().filter(|l| l.contains("] rsync on ")).count()
    }

    /// The daemon's log file alone, for counting what it logged.
    pub fn log_file(&self) -> String {
        fs::read_to_string(self.dir.path().join("rsyncd.log")).unwrap_or_default()
    }

    /// The daemon's pid (e.g. to SIGSTOP it: a hung upstream).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The daemon's log file and its stderr, for assertion messages.
    pub fn log(&self) -> String {
        read_logs(self.dir.path())
    }
}

impl Drop for RsyncDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The daemon's config. Its own `lock file` keeps `max connections`
/// counts apart from every other daemon's (the default is system-wide).
fn config(dir: &Path, modules: &[(&str, &Path)], uid: &str, gid: &str, module_lines: &str) -> String {
    let mut conf = format!(
        "pid file = {}\nlog file = {}\nlock file = {}\nuse chroot = no\nuid = {uid}\ngid = {gid}\n\
         read only = yes\nreverse lookup = no\n",
        dir.join("rsyncd.pid").display(),
        dir.join("rsyncd.log").display(),
        dir.join("rsyncd.lock").display(),
    );
    for (name, path) in modules {
        conf.push_str(&format!("\n[{name}]\n    path = {}\n", path.display()));
        for line in module_lines.lines() {
            conf.push_str(&format!("    {line}\n"));
        }
    }
    conf
}

fn free_port() -> u16 {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

fn wait_until_listening(child: &mut Child, port: u16) -> Result<(), String> {
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("daemon on port {port} exited early: {status}"));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("port {port} not accepting connections after 5 s"));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn read_logs(dir: &Path) -> String {
    let log = fs::read_to_string(dir.join("rsyncd.log")).unwrap_or_default();
    let stderr = fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    format!("--- rsyncd.log ---\n{log}--- daemon stderr ---\n{stderr}")
}
