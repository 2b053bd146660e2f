//! Prometheus metrics over HTTP (`--metrics-listen ADDR:PORT`): the same
//! text as the node-exporter textfile, rendered on each scrape of
//! `/metrics` by the caller's function.
//!
//! Bounded by construction: one thread accepts, [`WORKERS`] threads answer,
//! and at most [`QUEUE`] accepted connections wait for them; a connection
//! beyond that is closed at once. Each connection gets one request and
//! [`CLIENT_DEADLINE`] in all to send it (a client that dribbles a byte at
//! a time is cut off too), so a slow or hostile client holds one worker
//! for at most that long and never blocks the daemon, whose loop does not
//! run on these threads. Requests are parsed by `httparse` (see README.md's
//! crate list for why not a whole server crate).

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads that answer requests.
pub const WORKERS: usize = 2;
/// Accepted connections that may wait for a worker.
pub const QUEUE: usize = 16;
/// How long a client has to send its request and take the answer.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(5);
/// The largest request head read.
const MAX_REQUEST: usize = 8 * 1024;
/// The content type of Prometheus's text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A running metrics server; dropping it stops it.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl MetricsServer {
    /// The address it listens on (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept; its end drops the queue, which ends the workers.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// What renders the metrics on each scrape: the text, or why it cannot be
/// had (answered with a 500, never an empty 200 that would look healthy).
pub type Render = dyn Fn() -> Result<String> + Send + Sync;

/// Listen on `addr` (`127.0.0.1:9105`, `[::1]:9105`, `localhost:9105`) and
/// answer `GET /metrics` with `render()` on threads of its own. An address
/// that is taken or cannot be bound is an error here, at start (the
/// command exits 2), never later.
pub fn serve_metrics(addr: &str, render: impl Fn() -> Result<String> + Send + Sync + 'static) -> Result<MetricsServer> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .with_context(|| format!("--metrics-listen {addr}: not an ADDR:PORT (e.g. 127.0.0.1:9105)"))?
        .collect();
    let listener = TcpListener::bind(&addrs[..]).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::AddrInUse {
            "the address is already in use (another rrr or exporter listens there?)".to_string()
        } else {
            e.to_string()
        };
        anyhow::anyhow!("--metrics-listen {addr}: cannot listen: {why}")
    })?;
    let local = listener.local_addr().context("the metrics listener's address")?;
    let stop = Arc::new(AtomicBool::new(false));
    let render: Arc<Render> = Arc::new(render);
    let (tx, rx) = sync_channel::<TcpStream>(QUEUE);
    let rx = Arc::new(Mutex::new(rx));
    let mut threads = Vec::new();
    for i in 0..WORKERS {
        let (rx, render) = (Arc::clone(&rx), Arc::clone(&render));
        let t = std::thread::Builder::new()
            .name(format!("metrics-{i}"))
            .spawn(move || worker(&rx, &*render))
            .context("cannot start a metrics thread")?;
        threads.push(t);
    }
    let stopping = Arc::clone(&stop);
    let t = std::thread::Builder::new()
        .name("metrics-accept".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                match tx.try_send(conn) {
                    Ok(()) => {}
                    // Too many waiting: this one is closed (dropped) at once.
                    Err(TrySendError::Full(_)) => tracing::debug!("metrics: queue full, connection closed"),
                    Err(TrySendError::Disconnected(_)) => break,
                }
            }
        })
        .context("cannot start the metrics thread")?;
    threads.push(t);
    Ok(MetricsServer { addr: local, stop, threads })
}

/// The origin's counters under the names abh/rrrgo's `rrr-server` serves
/// (docs/decisions.md#freshness), to append to the watch daemon's metrics:
/// `rrr_events_processed_total{type}` (rrr's `rrr_watch_changes_total`),
/// `rrr_events_in_queue` (`rrr_watch_pending_changes`) and, once the
/// daemon counts them, `rrr_aggregation_runs_total`. Unlabelled, as
/// rrrgo's: one daemon per process.
pub fn rrrgo_metrics(news: u64, deletes: u64, pending: u64, aggregation_runs: Option<u64>) -> String {
    use crate::output::prometheus::metric;
    let mut out = String::new();
    let events = [("type=\"new\"".to_string(), news as f64), ("type=\"delete\"".to_string(), deletes as f64)];
    metric(&mut out, "rrr_events_processed_total", "counter", "Total number of file system events processed", &events);
    if let Some(n) = aggregation_runs {
        metric(
            &mut out,
            "rrr_aggregation_runs_total",
            "counter",
            "Total number of aggregation runs",
            &[(String::new(), n as f64)],
        );
    }
    let q = [(String::new(), pending as f64)];
    metric(&mut out, "rrr_events_in_queue", "gauge", "Current number of events queued for processing", &q);
    out
}

fn worker(rx: &Mutex<Receiver<TcpStream>>, render: &Render) {
    loop {
        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(conn) = next else { return };
        if let Err(e) = answer(conn, render) {
            tracing::debug!("metrics: a client: {e}");
        }
    }
}

/// Read one request head within [`CLIENT_DEADLINE`] and answer it.
fn answer(mut conn: TcpStream, render: &Render) -> std::io::Result<()> {
    let deadline = Instant::now() + CLIENT_DEADLINE;
    conn.set_write_timeout(Some(CLIENT_DEADLINE))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let (status, body) = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        conn.set_read_timeout(Some(left))?;
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => break route(req.method, req.path, render),
            Ok(httparse::Status::Partial) if buf.len() <= MAX_REQUEST => continue,
            Ok(httparse::Status::Partial) => break ("431 Request Header Fields Too Large", String::new()),
            Err(_) => break ("400 Bad Request", String::new()),
        }
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

fn route(method: Option<&str>, path: Option<&str>, render: &Render) -> (&'static str, String) {
    let path = path.unwrap_or_default();
    let path = path.split('?').next().unwrap_or_default();
    match (method, path) {
        (Some("GET"), "/metrics") => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(render)) {
            Ok(Ok(text)) => ("200 OK", text),
            Ok(Err(e)) => ("500 Internal Server Error", format!("cannot render the metrics: {e:#}\n")),
            Err(_) => ("500 Internal Server Error", "rendering the metrics failed\n".into()),
        },
        (Some("GET"), _) => ("404 Not Found", "not found: the metrics are at /metrics\n".into()),
        _ => ("405 Method Not Allowed", String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real HTTP/1.1 exchange over loopback: status line and body.
    fn get(addr: SocketAddr, path: &str) -> (String, String) {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").expect("a complete response");
        (head.to_string(), body.to_string())
    }

    #[test]
    fn scrape_over_loopback() {
        let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = Arc::clone(&n);
        let server = serve_metrics("127.0.0.1:0", move || {
            let k = seen.fetch_add(1, Ordering::SeqCst) + 1;
            if k == 3 {
                anyhow::bail!("the state is unreadable");
            }
            Ok(format!("# TYPE rrr_scrapes counter\nrrr_scrapes {k}\n"))
        })
        .unwrap();
        let addr = server.local_addr();
        let (head, body) = get(addr, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
        assert_eq!(body, "# TYPE rrr_scrapes counter\nrrr_scrapes 1\n");
        // Rendered again on each scrape.
        assert!(get(addr, "/metrics?x=1").1.ends_with("rrr_scrapes 2\n"));
        let (head, body) = get(addr, "/metrics");
        assert!(head.starts_with("HTTP/1.1 500 ") && body.contains("the state is unreadable"), "{head}{body}");
        assert!(get(addr, "/").0.starts_with("HTTP/1.1 404 "));
        assert!(get(addr, "/metricsx").0.starts_with("HTTP/1.1 404 "));
        // A client that connects and says nothing holds one worker; the other answers.
        let silent = TcpStream::connect(addr).unwrap();
        assert!(get(addr, "/metrics").0.starts_with("HTTP/1.1 200 "));
        drop(silent);
        // Garbage is a 400, not a dead server.
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"\x00\x01 nonsense\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
        drop(server);
        assert!(TcpStream::connect(addr).is_err(), "stopped when dropped");
    }

    #[test]
    fn rrrgos_names() {
        let t = rrrgo_metrics(3, 1, 7, Some(2));
        for want in [
            "rrr_events_processed_total{type=\"new\"} 3\n",
            "rrr_events_processed_total{type=\"delete\"} 1\n",
            "rrr_aggregation_runs_total 2\n",
            "rrr_events_in_queue 7\n",
            "# TYPE rrr_events_processed_total counter\n",
        ] {
            assert!(t.contains(want), "{want}: {t}");
        }
        assert!(!rrrgo_metrics(0, 0, 0, None).contains("aggregation"));
    }

    #[test]
    fn a_taken_address_is_an_error_at_start() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let e = serve_metrics(&addr, || Ok(String::new())).err().expect("refused");
        let msg = format!("{e:#}");
        assert!(msg.contains("already in use") && msg.contains(&addr), "{msg}");
        assert!(serve_metrics("no-port-here", || Ok(String::new())).is_err());
    }
}
