//! `rrr probe`: how fresh is each mirror of a network, measured from the
//! origin. For every mirror URL (`rsync://HOST[:PORT]/MODULE[/PATH]`, the
//! tree's root) it fetches, in one rsync call, the trace directory's files
//! (`project/trace` by default) and the origin beacons at the root (every
//! `*.beacon.json`: the one beside each principal, whatever its name) into
//! a temp directory, in parallel (at most [`PARALLEL`] at once) and each bounded
//! by the rsync runner's stall timeout plus `--contimeout` (a silent
//! mirror), and by [`hard_deadline`] (one that trickles bytes), so a dead
//! or hanging mirror costs its own slot and never delays the others'
//! answers beyond that. From what it holds it reads:
//!
//! - the origin time: the `time` of the origin's beacon the mirror holds
//!   ([`origin_time_from_beacon`]; the newest when it holds several), or
//!   the date of the origin's `master` trace when it holds no beacon or
//!   the trace is newer (each is the origin's clock when it wrote it; the
//!   origin refreshes both even when idle); which one gave it is reported
//!   (`origin_source`: `beacon` or `trace`). The beacon's signature is not
//!   checked here (a probe holds no `--trust-key`): it is a reading of what
//!   the mirror serves, as the trace is;
//! - its own trace (named after its host, else the newest other trace):
//!   `Upstream-mirror`, `Archive serial`, when it last completed.
//!
//! Lag is measured behind the freshest origin time seen among all the
//! mirrors probed, or behind `--origin URL`'s. The score follows Debian's
//! mirror-status buckets (its `RunScorer`): lag ≤ 4 h +5, ≤ 12 h +1,
//! ≤ 24 h 0, ≤ 48 h −5, older or unreachable −30. A mirror is stale when
//! its lag is over `--max-lag` (4 h by default, the best bucket's edge).

use super::trace::{self, ParsedTrace};
use crate::sys::rsync::Rsync;
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Mirrors probed at once.
pub const PARALLEL: usize = 16;
/// The largest trace file fetched (rsync's `--max-size`).
const MAX_FETCH: &str = "64K";

/// What to probe.
#[derive(Clone, Debug)]
pub struct Request {
    /// The mirrors' URLs, `rsync://HOST[:PORT]/MODULE[/PATH]`.
    pub urls: Vec<String>,
    /// The origin's URL: lag is measured behind its master trace.
    pub origin: Option<String>,
    /// The trace directory relative to each URL.
    pub trace_dir: String,
    /// Per mirror: rsync's `--contimeout` and the stall timeout.
    pub timeout: Duration,
    /// Lag beyond which a mirror is stale.
    pub max_lag: f64,
    /// The clock (seconds since the epoch; `--now` pins it).
    pub now: f64,
}

/// One mirror's answer.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// The URL as given.
    pub url: String,
    /// `fresh`, `stale` or `unreachable`.
    pub status: &'static str,
    /// The origin time it holds (Unix seconds).
    pub origin_time: Option<i64>,
    /// Where the origin time comes from: `beacon` or `trace`.
    pub origin_source: Option<&'static str>,
    /// The origin its beacon names, when the time is the beacon's.
    pub origin: Option<String>,
    /// Seconds behind the freshest origin time (or `--origin`'s).
    pub lag: Option<f64>,
    /// Seconds from the origin time it holds to now.
    pub age: Option<f64>,
    /// Its trace's `Upstream-mirror`.
    pub upstream: Option<String>,
    /// Its trace's `Archive serial` (rrr: the newest epoch it holds).
    pub archive_serial: Option<String>,
    /// When its trace says it last completed (Unix seconds).
    pub trace_time: Option<i64>,
    /// The trace file read as its own.
    pub trace: Option<String>,
    /// mirror-status's score adjustment for this lag (see the module doc).
    pub score: i32,
    /// Why it could not be read.
    pub error: Option<String>,
}

/// The host of an `rsync://HOST[:PORT]/MODULE[/PATH]` URL; anything else is
/// refused (a usage error).
pub fn check_url(url: &str) -> Result<String> {
    let rest = url.strip_prefix("rsync://").unwrap_or_default();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    let module = path.split('/').next().unwrap_or_default();
    if host.is_empty() || module.is_empty() || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        bail!("{url:?}: expected rsync://HOST[:PORT]/MODULE[/PATH]");
    }
    Ok(host.trim_start_matches('[').trim_end_matches(']').to_string())
}

/// The score of a lag, Debian mirror-status's buckets.
pub fn score(lag: Option<f64>) -> i32 {
    match lag {
        None => -30,
        Some(l) if l <= 4.0 * 3600.0 => 5,
        Some(l) if l <= 12.0 * 3600.0 => 1,
        Some(l) if l <= 24.0 * 3600.0 => 0,
        Some(l) if l <= 48.0 * 3600.0 => -5,
        Some(_) => -30,
    }
}

/// The origin's beacon a mirror holds, among the files fetched from its
/// root into `fetched` (every `*.beacon.json`, at most 64 KiB each): its
/// origin and `time` (whole seconds), the newest when there are several
/// (one per collection of the tree). A file that is not a valid beacon is
/// skipped, as a trace that does not parse is.
pub fn origin_time_from_beacon(fetched: &Path) -> Result<Option<(String, i64)>> {
    let mut best: Option<(String, i64)> = None;
    for e in std::fs::read_dir(fetched)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".beacon.json") || !e.file_type()?.is_file() {
            continue;
        }
        let Ok(b) = ::recentfile::beacon::Beacon::parse(&std::fs::read(e.path())?) else { continue };
        let time = b.time.to_f64().floor() as i64;
        if best.as_ref().is_none_or(|(_, t)| time > *t) {
            best = Some((b.origin, time));
        }
    }
    Ok(best)
}

/// What one mirror's trace directory and beacon say (pure over the fetched files).
struct Held {
    origin_time: Option<i64>,
    origin_source: Option<&'static str>,
    origin: Option<String>,
    own: Option<(String, ParsedTrace)>,
}

/// Read what was fetched into `dir`: the beacons at its top, the traces
/// in `trace_dir` below it.
fn read_held(dir: &Path, trace_dir: &str, host: &str) -> Result<Held> {
    let mut traces = Vec::new();
    let at = dir.join(trace_dir.trim_matches('/'));
    let entries = match std::fs::read_dir(&at) {
        Ok(e) => e.collect::<Vec<_>>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    for e in entries {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(['_', '.']) || !e.file_type()?.is_file() {
            continue;
        }
        if let Ok(t) = trace::parse(&std::fs::read(e.path())?) {
            traces.push((name, t));
        }
    }
    let master = traces.iter().find(|(n, _)| n == "master").map(|(_, t)| t.date);
    let beacon = origin_time_from_beacon(dir)?;
    let (origin_time, origin_source, origin) = match (beacon, master) {
        (Some((o, b)), m) if m.is_none_or(|m| b >= m) => (Some(b), Some("beacon"), Some(o)),
        (_, Some(m)) => (Some(m), Some("trace"), None),
        _ => (None, None, None),
    };
    let others = traces.into_iter().filter(|(n, _)| n != "master");
    let mut others: Vec<_> = others.collect();
    let own = match others.iter().position(|(n, _)| n == host) {
        Some(i) => Some(others.swap_remove(i)),
        None => others.into_iter().max_by_key(|(_, t)| t.date),
    };
    Ok(Held { origin_time, origin_source, origin, own })
}

/// The rsync filter rules that take, from a mirror's root, the files of
/// `trace_dir` (not below) and every `*.beacon.json` at the root, and
/// nothing else (rsync does not descend into what is excluded). A trace
/// dir that is absolute, climbs (`..`) or holds a wildcard is refused.
pub fn probe_filters(trace_dir: &str) -> Result<Vec<String>> {
    let parts: Vec<&str> = trace_dir.trim_end_matches('/').split('/').collect();
    let bad = |p: &str| p.is_empty() || p == "." || p == ".." || p.contains(['*', '?', '[', '\\']);
    if parts.iter().any(|p| bad(p)) {
        bail!("--trace-dir {trace_dir:?}: expected a relative directory (no '..', no wildcards)");
    }
    let mut rules = Vec::new();
    let mut at = String::new();
    for p in &parts {
        at.push('/');
        at.push_str(p);
        rules.push(format!("--include={at}/"));
    }
    rules.push(format!("--exclude={at}/*/"));
    rules.push(format!("--include={at}/*"));
    rules.push("--include=/*.beacon.json".to_string());
    rules.push("--exclude=*".to_string());
    Ok(rules)
}

/// Fetch, in one call, what `rrr probe` reads of the mirror at `url`
/// ([`probe_filters`]) into `into`, bounded as [`fetch`] is.
fn fetch_probed(url: &str, trace_dir: &str, timeout: Duration, into: &Path) -> Result<()> {
    let mut r = Rsync::new();
    r.args(["--recursive", "--times", "--no-motd"])
        .args(probe_filters(trace_dir)?)
        .arg(format!("--max-size={MAX_FETCH}"))
        .arg(format!("--contimeout={}", timeout.as_secs().max(1)))
        .arg(format!("{}/", url.trim_end_matches('/')))
        .arg(into)
        .stall_limit(timeout);
    run_bounded(r, timeout)
}

/// Fetch `url`'s trace directory (its files, not below, each at most
/// 64 KiB) into `into`: what `rrr probe` reads, and what a mirror's pass
/// fetches from its upstream before [`super::trace_write::install_upstream_traces`].
pub fn fetch(url: &str, trace_dir: &str, timeout: Duration, into: &Path) -> Result<()> {
    let src = format!("{}/{}/", url.trim_end_matches('/'), trace_dir.trim_matches('/'));
    let mut r = Rsync::new();
    r.args(["--recursive", "--times", "--no-motd", "--exclude=/*/"])
        .arg(format!("--max-size={MAX_FETCH}"))
        .arg(format!("--contimeout={}", timeout.as_secs().max(1)))
        .arg(src)
        .arg(into)
        .stall_limit(timeout);
    run_bounded(r, timeout)
}

/// Run a probe's rsync call: bounded by its stall timeout and by
/// [`hard_deadline`].
fn run_bounded(r: Rsync, timeout: Duration) -> Result<()> {
    // The stall timeout stops a silent mirror; one that trickles bytes is
    // stopped at the hard deadline, checked each second without output
    // (this fetch prints nothing), while its pid is still rsync's.
    let deadline = std::time::Instant::now() + hard_deadline(timeout);
    let mut stopped = false;
    let res = r.run_watched(Some(Duration::from_secs(1)), &mut |out| {
        if let crate::sys::rsync::Output::Quiet { pid } = out {
            if !stopped && std::time::Instant::now() >= deadline {
                stopped = true;
                let pid = nix::unistd::Pid::from_raw(pid as i32);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            }
        }
    });
    match res {
        Ok(_) => Ok(()),
        Err(_) if stopped => bail!("still fetching after {} s: stopped", hard_deadline(timeout).as_secs()),
        Err(e) => bail!("{}", e.to_string().lines().last().unwrap_or("rsync failed")),
    }
}

/// The most one mirror's fetch may take, however it trickles: twice
/// `--timeout` (connecting, then the few small files).
pub fn hard_deadline(timeout: Duration) -> Duration {
    timeout * 2
}

impl Report {
    /// A mirror nothing is known of yet: unreachable, the lowest score,
    /// until its fetch says otherwise.
    fn unreachable(url: &str) -> Report {
        Report {
            url: url.to_string(),
            status: "unreachable",
            origin_time: None,
            origin_source: None,
            origin: None,
            lag: None,
            age: None,
            upstream: None,
            archive_serial: None,
            trace_time: None,
            trace: None,
            score: -30,
            error: None,
        }
    }
}

fn probe_one(url: &str, req: &Request) -> (Option<i64>, Report) {
    let mut report = Report::unreachable(url);
    let held = (|| -> Result<Held> {
        let host = check_url(url)?;
        let tmp = tempfile::tempdir()?;
        fetch_probed(url, &req.trace_dir, req.timeout, tmp.path())?;
        read_held(tmp.path(), &req.trace_dir, &host)
    })();
    match held {
        Err(e) => report.error = Some(format!("{e:#}")),
        Ok(h) => {
            report.origin_time = h.origin_time;
            report.origin_source = h.origin_source;
            report.origin = h.origin;
            report.age = h.origin_time.map(|t| (req.now - t as f64).max(0.0));
            if let Some((name, t)) = h.own {
                report.upstream = t.upstream().map(Into::into);
                report.archive_serial = t.archive_serial().map(Into::into);
                report.trace_time = Some(t.date);
                report.trace = Some(name);
            }
            if h.origin_time.is_none() {
                report.error = Some(format!("no origin beacon, and no master trace in {}", req.trace_dir));
            }
        }
    }
    (report.origin_time, report)
}

/// Probe every mirror (and the origin), at most [`PARALLEL`] at once: one
/// report per URL, in the order given.
pub fn probe(req: &Request) -> Vec<Report> {
    let mut all: Vec<&str> = req.urls.iter().map(String::as_str).collect();
    if let Some(o) = &req.origin {
        all.push(o);
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Report>>> = Mutex::new(vec![None; all.len()]);
    std::thread::scope(|s| {
        for _ in 0..all.len().min(PARALLEL) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(url) = all.get(i) else { return };
                let (_, r) = probe_one(url, req);
                done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    let mut reports: Vec<Report> = done.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect();
    let origin = req.origin.as_ref().and_then(|_| reports.pop());
    let freshest = match &origin {
        Some(o) => o.origin_time,
        None => reports.iter().filter_map(|r| r.origin_time).max(),
    };
    for r in &mut reports {
        judge(r, freshest, req.max_lag);
        if let (Some(o), None, Some(_)) = (&origin, r.lag, r.origin_time) {
            let why = o.error.as_deref().unwrap_or("no origin beacon or master trace");
            r.error = Some(format!("no lag: the origin {} could not be read: {why}", o.url));
        }
    }
    reports
}

/// Lag, score and status of a report against the freshest origin time.
fn judge(r: &mut Report, freshest: Option<i64>, max_lag: f64) {
    r.lag = match (r.origin_time, freshest) {
        (Some(t), Some(f)) => Some((f - t).max(0) as f64),
        _ => None,
    };
    r.score = score(r.lag);
    r.status = match r.lag {
        None => "unreachable",
        Some(l) if l > max_lag => "stale",
        Some(_) => "fresh",
    };
}

/// The reports as Prometheus metrics, one sample per mirror.
pub fn prometheus(reports: &[Report]) -> String {
    use crate::output::prometheus::metric;
    let label = |r: &Report| format!("mirror=\"{}\"", crate::output::prometheus::label_value(&r.url));
    let mut out = String::new();
    let rows = |f: &dyn Fn(&Report) -> Option<f64>| -> Vec<(String, f64)> {
        reports.iter().filter_map(|r| f(r).map(|v| (label(r), v))).collect()
    };
    let up = rows(&|r| Some(if r.origin_time.is_some() { 1.0 } else { 0.0 }));
    metric(&mut out, "rrr_probe_up", "gauge", "1 when the mirror's traces were read.", &up);
    let t = rows(&|r| r.origin_time.map(|t| t as f64));
    metric(&mut out, "rrr_probe_origin_timestamp_seconds", "gauge", "Origin time the mirror holds.", &t);
    let src: Vec<(String, f64)> = reports
        .iter()
        .filter_map(|r| {
            let s = r.origin_source?;
            Some((format!("{},source=\"{s}\"", label(r)), 1.0))
        })
        .collect();
    let help = "Where the origin time comes from: the origin's beacon or its master trace.";
    metric(&mut out, "rrr_probe_origin_source_info", "gauge", help, &src);
    let lag = rows(&|r| r.lag);
    metric(&mut out, "rrr_probe_lag_seconds", "gauge", "Seconds behind the freshest origin time seen.", &lag);
    let sc = rows(&|r| Some(f64::from(r.score)));
    metric(&mut out, "rrr_probe_score", "gauge", "Debian mirror-status's score adjustment for the lag.", &sc);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(check_url("rsync://m.example:8873/cpan").unwrap(), "m.example");
        assert_eq!(check_url("rsync://m.example/cpan/sub/").unwrap(), "m.example");
        assert_eq!(check_url("rsync://[::1]:873/m").unwrap(), "::1");
        for bad in ["http://m/x", "rsync://m", "rsync://m/", "m::cpan", "rsync://m/x y", "rsync:///m"] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scores_are_mirror_status_buckets() {
        let h = 3600.0;
        let got: Vec<i32> = [0.0, 4.0 * h, 4.0 * h + 1.0, 12.0 * h, 20.0 * h, 30.0 * h, 49.0 * h]
            .into_iter()
            .map(|l| score(Some(l)))
            .collect();
        assert_eq!(got, [5, 5, 1, 1, 0, -5, -30]);
        assert_eq!(score(None), -30);
    }

    #[test]
    fn lag_behind_the_freshest() {
        let base = Report { origin_time: Some(1000), ..Report::unreachable("rsync://a/m") };
        let mut r = base.clone();
        judge(&mut r, Some(1000 + 7200), 3600.0);
        assert_eq!((r.lag, r.status, r.score), (Some(7200.0), "stale", 5));
        let mut r = base.clone();
        judge(&mut r, Some(1000), 3600.0);
        assert_eq!((r.lag, r.status), (Some(0.0), "fresh"));
        let mut r = Report { origin_time: None, ..base };
        judge(&mut r, Some(1000), 3600.0);
        assert_eq!((r.lag, r.status, r.score), (None, "unreachable", -30));
    }
}
