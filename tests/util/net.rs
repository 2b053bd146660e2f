//! Upstreams that never serve: a black hole (a listening socket that
//! accepts and never answers) and a closed port (nothing listens), and a
//! test `NOTIFY_SOCKET` that collects what rrr tells systemd.

use std::net::TcpListener;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An upstream that accepts connections and never answers.
pub struct BlackHole {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
}

impl BlackHole {
    pub fn start() -> BlackHole {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                held.push(conn);
            }
        });
        BlackHole { port, accepted }
    }

    /// A principal on it, as `--remote` takes it.
    pub fn src(&self) -> String {
        format!("rsync://127.0.0.1:{}/M/RECENT.recent", self.port)
    }

    /// Connections it has accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// A loopback port nothing listens on (bound, then closed again): a
/// connection to it is refused at once.
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A stand-in for systemd's notify socket: give [`NotifySocket::path`]
/// as `NOTIFY_SOCKET` and read what arrives.
pub struct NotifySocket {
    sock: UnixDatagram,
    path: PathBuf,
    seen: Vec<String>,
}

impl NotifySocket {
    /// A socket `notify` in `dir`.
    pub fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        NotifySocket { sock, path, seen: Vec::new() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Wait up to `limit` for a message that `want` accepts; every
    /// message seen so far is kept.
    pub fn wait_for(&mut self, limit: Duration, want: impl Fn(&str) -> bool) -> Option<String> {
        if let Some(m) = self.seen.iter().find(|m| want(m)) {
            return Some(m.clone());
        }
        let end = Instant::now() + limit;
        let mut buf = [0u8; 4096];
        while Instant::now() < end {
            if let Ok(n) = self.sock.recv(&mut buf) {
                let m = String::from_utf8_lossy(&buf[..n]).into_owned();
                self.seen.push(m.clone());
                if want(&m) {
                    return Some(m);
                }
            }
        }
        None
    }

    /// Every message received so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }
}
