//! A userspace TCP delay proxy for WAN benchmarks on loopback (this kernel
//! has no `tc netem`).
//!
//! ```text
//! cargo run --release --example delay_proxy -- \
//!     --listen 127.0.0.1:PORT --connect 127.0.0.1:PORT2 --delay-ms 20 [--rate-kbps N]
//! ```
//!
//! Every accepted connection is relayed to `--connect`, both directions
//! independently. A chunk read at time t is written at t + delay (one way, so
//! a round trip costs twice the delay). Chunks are queued, not slept on one
//! by one: a reader thread timestamps chunks into a queue and a writer
//! thread sends each when it is due, so the link is pipelined and order is
//! kept. End of stream (FIN) is delayed the same way.
//!
//! `--rate-kbps N` adds a token bucket of N kilobits (1000 bits) per second
//! per direction, like a bottleneck link. The queue of a direction is then
//! bounded by about twice the bandwidth-delay product (at least 64 KiB),
//! so a fast sender feels backpressure instead of filling memory; without
//! a rate it holds up to 32 MiB.
//!
//! Both addresses must be loopback. Prints `listening on ADDR` on stdout,
//! one line per connection on stderr, and serves until killed.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::exit;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: delay_proxy --listen 127.0.0.1:PORT --connect 127.0.0.1:PORT \
                     --delay-ms MS [--rate-kbps KBITS]";
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug, Clone, Copy)]
struct Config {
    listen: SocketAddr,
    connect: SocketAddr,
    delay: Duration,
    /// Bytes per second, per direction.
    rate: Option<f64>,
}

fn main() {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("delay_proxy: {e}\n{USAGE}");
            exit(2);
        }
    };
    let listener = match TcpListener::bind(config.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("delay_proxy: cannot listen on {}: {e}", config.listen);
            exit(1);
        }
    };
    let local = listener.local_addr().expect("bound socket has an address");
    println!("listening on {local}");
    let _ = io::stdout().flush();

    for conn in listener.incoming() {
        match conn {
            Ok(client) => {
                thread::spawn(move || {
                    if let Err(e) = serve(client, config) {
                        eprintln!("delay_proxy: connection failed: {e}");
                    }
                });
            }
            Err(e) => eprintln!("delay_proxy: accept failed: {e}"),
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
    let (mut listen, mut connect, mut delay, mut rate) = (None, None, None, None);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value"));
        match name.as_str() {
            "--listen" => listen = Some(loopback(&value()?)?),
            "--connect" => connect = Some(loopback(&value()?)?),
            "--delay-ms" => delay = Some(number(&name, &value()?)?),
            "--rate-kbps" => rate = Some(number(&name, &value()?)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                exit(0);
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    let rate = match rate {
        Some(0) => return Err("--rate-kbps must be positive".into()),
        r => r.map(|kbps| kbps as f64 * 1000.0 / 8.0),
    };
    Ok(Config {
        listen: listen.ok_or("--listen is required")?,
        connect: connect.ok_or("--connect is required")?,
        delay: Duration::from_millis(delay.ok_or("--delay-ms is required")?),
        rate,
    })
}

fn number(name: &str, v: &str) -> Result<u64, String> {
    v.parse().map_err(|_| format!("{name}: {v:?} is not a whole number"))
}

/// `s` resolved, refused unless every address is loopback.
fn loopback(s: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = s.to_socket_addrs().map_err(|e| format!("bad address {s:?}: {e}"))?.collect();
    match addrs.first() {
        Some(a) if addrs.iter().all(|a| a.ip().is_loopback()) => Ok(*a),
        Some(_) => Err(format!("{s} is not a loopback address")),
        None => Err(format!("{s} resolves to nothing")),
    }
}

fn serve(client: TcpStream, config: Config) -> io::Result<()> {
    let peer = client.peer_addr()?;
    let upstream = TcpStream::connect(config.connect)?;
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    let started = Instant::now();
    let up = relay(client.try_clone()?, upstream.try_clone()?, config)?;
    let down = relay(upstream, client, config)?;
    let sent = up.join().unwrap_or(0);
    let received = down.join().unwrap_or(0);
    eprintln!("delay_proxy: {peer}: {sent} bytes up, {received} bytes down, {:.3} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Relays `from` to `to` with the configured delay and rate; the returned
/// thread yields the number of bytes written.
fn relay(from: TcpStream, to: TcpStream, config: Config) -> io::Result<thread::JoinHandle<u64>> {
    let cap = match config.rate {
        Some(rate) => ((rate * (2.0 * config.delay.as_secs_f64() + 0.01)) as usize).max(64 << 10),
        None => 32 << 20,
    };
    let queue = Arc::new(Queue::new(cap));
    let q = Arc::clone(&queue);
    let from_for_writer = from.try_clone()?;
    thread::Builder::new().name("delay-read".into()).spawn(move || read_side(from, &q, config.delay))?;
    thread::Builder::new()
        .name("delay-write".into())
        .spawn(move || write_side(to, from_for_writer, &queue, config.rate))
}

fn read_side(mut from: TcpStream, queue: &Queue, delay: Duration) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match from.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        let due = Instant::now() + delay;
        // An empty chunk stands for end of stream.
        if !queue.push(due, buf[..n].to_vec()) || n == 0 {
            return;
        }
    }
}

fn write_side(mut to: TcpStream, from: TcpStream, queue: &Queue, rate: Option<f64>) -> u64 {
    let mut bucket = rate.map(TokenBucket::new);
    let mut written = 0u64;
    while let Some((due, chunk)) = queue.pop() {
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        if chunk.is_empty() {
            let _ = to.shutdown(Shutdown::Write);
            return written;
        }
        let ok = match &mut bucket {
            None => to.write_all(&chunk).is_ok(),
            Some(b) => chunk.chunks(b.burst).all(|piece| {
                b.take(piece.len());
                to.write_all(piece).is_ok()
            }),
        };
        if !ok {
            // The receiver is gone: stop the reader and drop what is queued.
            queue.close();
            let _ = from.shutdown(Shutdown::Read);
            let _ = to.shutdown(Shutdown::Both);
            return written;
        }
        written += chunk.len() as u64;
    }
    written
}

/// A FIFO of timestamped chunks bounded in bytes.
struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
    cap: usize,
}

struct QueueState {
    chunks: VecDeque<(Instant, Vec<u8>)>,
    bytes: usize,
    closed: bool,
}

impl Queue {
    fn new(cap: usize) -> Queue {
        Queue {
            state: Mutex::new(QueueState { chunks: VecDeque::new(), bytes: 0, closed: false }),
            changed: Condvar::new(),
            cap,
        }
    }

    /// Waits for room, then appends; false if the queue was closed.
    fn push(&self, due: Instant, chunk: Vec<u8>) -> bool {
        let mut s = self.state.lock().unwrap();
        while !s.closed && s.bytes > 0 && s.bytes + chunk.len() > self.cap {
            s = self.changed.wait(s).unwrap();
        }
        if s.closed {
            return false;
        }
        s.bytes += chunk.len();
        s.chunks.push_back((due, chunk));
        self.changed.notify_all();
        true
    }

    /// The next chunk, waiting for one; None once closed.
    fn pop(&self) -> Option<(Instant, Vec<u8>)> {
        let mut s = self.state.lock().unwrap();
        loop {
            if s.closed {
                return None;
            }
            if let Some((due, chunk)) = s.chunks.pop_front() {
                s.bytes -= chunk.len();
                self.changed.notify_all();
                return Some((due, chunk));
            }
            s = self.changed.wait(s).unwrap();
        }
    }

    fn close(&self) {
        let mut s = self.state.lock().unwrap();
        s.closed = true;
        s.chunks.clear();
        s.bytes = 0;
        self.changed.notify_all();
    }
}

/// Tokens are bytes; they accrue at `rate` per second up to `burst`.
struct TokenBucket {
    rate: f64,
    burst: usize,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(rate: f64) -> TokenBucket {
        // About 10 ms worth of data, at least 1 KiB, at most 64 KiB.
        let burst = ((rate / 100.0) as usize).clamp(1024, 64 << 10);
        TokenBucket { rate, burst, tokens: burst as f64, last: Instant::now() }
    }

    /// Waits until `n` (at most `burst`) bytes may be sent, and spends them.
    fn take(&mut self, n: usize) {
        loop {
            let now = Instant::now();
            let t = now.duration_since(self.last).as_secs_f64();
            self.tokens = (self.tokens + t * self.rate).min(self.burst as f64);
            self.last = now;
            if self.tokens >= n as f64 {
                self.tokens -= n as f64;
                return;
            }
            let wait = (n as f64 - self.tokens) / self.rate;
            thread::sleep(Duration::from_secs_f64(wait));
        }
    }
}
