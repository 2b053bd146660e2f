//! Metrics over HTTP (issue 35): the text of rrr's Prometheus textfile,
//! served by `rrr::monitor::metrics_http` on 127.0.0.1, scraped with a
//! real HTTP request and checked by `promtool check metrics` (Debian's
//! prometheus package; .ci/run unpacks the binary).

use crate::util::fixture::Origin;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// `promtool check metrics` on `text`: its exit status and output.
pub(crate) fn promtool(text: &str) -> (bool, String) {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; .ci/run installs it)");
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    (o.status.success(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn textfile_served_over_http_passes_promtool() {
    let origin = Origin::new([("id/A/a.tar.gz", "a\n"), ("id/B/b.tar.gz", "b\n")], &["init"]);
    let mirror = origin.mirror();
    mirror.rmirror().assert_ok();
    // The mirror's textfile, plus the origin's counters under rrrgo's names.
    let text = mirror.monitoring(&[]).prometheus + &rrr::monitor::metrics_http::rrrgo_metrics(5, 2, 0, Some(1));
    assert!(text.contains("rrr_"), "{text}");
    // The oracle sees a fault: promtool is not a rubber stamp.
    let (ok, out) = promtool("# TYPE x counter\nx_total{a=\"1\"} 1\nx_total{a=\"1\"} 2\n\n");
    assert!(!ok, "promtool accepted a broken exposition: {out}");

    let served = text.clone();
    let server = rrr::monitor::metrics_http::serve_metrics("127.0.0.1:0", move || Ok(served.clone())).unwrap();
    let mut c = std::net::TcpStream::connect(server.local_addr()).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n").unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK") && head.contains("text/plain; version=0.0.4"), "{head}");
    assert_eq!(body, text);
    let (ok, out) = promtool(body);
    assert!(ok, "promtool check metrics: {out}\n{body}");
}

/// What the watch daemon will serve (its textfile and the counters under
/// rrrgo's names) and `rrr probe --prometheus` pass promtool too.
#[test]
fn watch_textfile_and_probe_output_pass_promtool() {
    use crate::util::{poll_until, s, stdout, Rrr};
    let (tmp, root) = crate::watch::tree(&["a/1.txt"]);
    let prom = tmp.path().join("watch.prom");
    let d = crate::watch::Daemon::start(&root, &["--prometheus", s(&prom)]);
    assert!(poll_until(crate::watch::WAIT, || prom.exists()), "no textfile");
    let text = std::fs::read_to_string(&prom).unwrap();
    d.stop();
    assert!(text.contains("rrr_watch_changes_total"), "{text}");
    let all = text + &rrr::monitor::metrics_http::rrrgo_metrics(1, 0, 0, None);
    let (ok, out) = promtool(&all);
    assert!(ok, "promtool check metrics: {out}\n{all}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("rsync://127.0.0.1:{}/M", closed.local_addr().unwrap().port());
    drop(closed);
    let o = Rrr::new().args(["probe", "--prometheus", &url]).output();
    assert_eq!(o.status.code(), Some(3));
    let (ok, out) = promtool(&stdout(&o));
    assert!(ok, "promtool check metrics: {out}\n{}", stdout(&o));
}

/// `GET /metrics` on `addr`: the status line and the body.
fn scrape(addr: &str) -> (String, String) {
    let mut c = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
    c.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap_or_default().to_string(), body.to_string())
}

/// The address a daemon logged it serves metrics at (`127.0.0.1:0` given:
/// the port the kernel chose).
fn served_at(log: &str) -> Option<String> {
    let at = log.split("serving metrics at http://").nth(1)?;
    Some(at.split("/metrics").next()?.to_string())
}

/// A listener holding an address, for the taken-address case.
fn taken() -> (std::net::TcpListener, String) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap().to_string();
    (l, a)
}

/// `rrr watch --metrics-listen` serves the textfile's metrics and rrrgo's
/// counters (aggregation runs counted) over real HTTP; promtool accepts
/// them. A taken address: exit 2 at start, naming it.
#[test]
fn a_running_watch_serves_metrics_over_http() {
    use crate::util::{poll_until, write, Rrr};
    let (_tmp, root) = crate::watch::tree(&["a/1.txt"]);
    let d = crate::watch::Daemon::start(&root, &["--metrics-listen", "127.0.0.1:0"]);
    let addr = served_at(&d.log()).unwrap_or_else(|| panic!("no address logged:\n{}", d.log()));
    write(&root, "a/2.txt", "2");
    let mut last = String::new();
    let ok = poll_until(crate::watch::WAIT, || {
        let (status, body) = scrape(&addr);
        assert_eq!(status, "HTTP/1.1 200 OK");
        last = body;
        last.contains("rrr_events_processed_total{type=\"new\"} ")
            && !last.contains("rrr_events_processed_total{type=\"new\"} 0\n")
            && last.contains("rrr_aggregation_runs_total ")
            && !last.contains("rrr_aggregation_runs_total 0\n")
    });
    assert!(ok, "never served the change and a cascade:\n{last}\n{}", d.log());
    assert!(last.contains("rrr_watch_heartbeat_timestamp_seconds{root="), "{last}");
    let (ok, out) = promtool(&last);
    assert!(ok, "promtool check metrics: {out}\n{last}");
    assert_eq!(d.stop().0, 0);

    let (_hold, addr) = taken();
    let o = Rrr::new().args(["watch", crate::util::s(&root), "--metrics-listen", &addr]).assert_exit(2);
    let err = crate::util::stderr(&o);
    assert!(err.contains(&addr) && err.contains("already in use"), "{err}");
}

/// `rrr rmirror --loop --metrics-listen` serves its tree's textfile over
/// real HTTP, rendered from the state on each scrape; promtool accepts
/// it. A taken address: exit 2 at start; without --loop: a usage error.
#[test]
fn a_running_rmirror_loop_serves_metrics_over_http() {
    use crate::util::{poll_until, stderr};
    let origin = Origin::new([("id/A/a.tar.gz", "a\n")], &["init"]);
    let mirror = origin.mirror();
    let log = origin.dir().join("rmirror.log");
    let err = std::fs::File::create(&log).unwrap();
    let running = mirror
        .rmirror()
        .args(["--loop", "--interval", "1", "--metrics-listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(err)
        .spawn();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut last = String::new();
    let ok = poll_until(crate::watch::WAIT, || {
        let Some(addr) = served_at(&read_log()) else { return false };
        let (status, body) = scrape(&addr);
        assert_eq!(status, "HTTP/1.1 200 OK");
        last = body;
        last.contains("rrr_mirror_complete{") && last.contains("} 1\n") && last.contains("rrr_mirror_last_success")
    });
    assert!(ok, "never served a complete pass:\n{last}\n{}", read_log());
    let (ok, out) = promtool(&last);
    assert!(ok, "promtool check metrics: {out}\n{last}");
    running.signal(libc::SIGTERM);
    let _ = running.wait_with_output();

    let (_hold, addr) = taken();
    let o = mirror.rmirror().args(["--loop", "--metrics-listen", &addr]).assert_exit(2);
    assert!(stderr(&o).contains(&addr) && stderr(&o).contains("already in use"), "{}", stderr(&o));
    let o = mirror.rmirror().args(["--metrics-listen", "127.0.0.1:0"]).assert_exit(2);
    assert!(stderr(&o).contains("--loop"), "{}", stderr(&o));
}
