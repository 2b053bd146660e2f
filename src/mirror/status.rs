//! A mirror's run record as operators read it: `rrr status` (plain, JSON,
//! a node-exporter textfile) and `rrr check` (Nagios). Pure: a state and
//! the clock in, a report out.
//!
//! Lag (DECISIONS.md): seconds since the mirror was last complete against
//! the origin's principal (every event of the principal done). An idle
//! origin therefore reads about 0 while the mirror runs, and a dead
//! mirror's lag grows. The heartbeat age (seconds since the state was last
//! written) is reported beside it.

use crate::human;
use crate::mirror::{Failing, State};
use serde::Serialize;
use std::fmt::Write as _;

/// What `status` prints and `check` judges.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(crate) struct Report {
    pub localroot: String,
    pub remote: String,
    pub started: Option<String>,
    pub last_success: Option<String>,
    pub last_complete: Option<String>,
    pub heartbeat: Option<String>,
    pub newest_applied: Option<String>,
    /// Seconds since last complete (or since started, if never complete).
    pub lag_seconds: Option<f64>,
    pub heartbeat_age_seconds: Option<f64>,
    pub pending_deletes: usize,
    pub passes: u64,
    pub files: u64,
    pub bytes: u64,
    pub deletes: u64,
    pub refused: u64,
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Paths the origin could not send, retried every pass.
    pub failing: Vec<Failing>,
    /// Events of the last pass more than an hour ahead of the clock.
    pub future_events: u64,
    /// The last pass's error, if it failed.
    pub last_error: Option<String>,
    /// The pass running now (a bootstrap), as of the last heartbeat.
    pub running: Option<crate::mirror::progress::Running>,
    /// The last whole-tree pass.
    pub last_full: Option<String>,
}

fn age(now: f64, e: &Option<crate::epoch::Epoch>) -> Option<f64> {
    e.as_ref().map(|e| (now - e.to_f64()).max(0.0))
}

/// Summarize `state` at clock `now` (seconds).
pub(crate) fn report(localroot: &str, state: &State, now: f64) -> Report {
    let text = |e: &Option<crate::epoch::Epoch>| e.as_ref().map(|e| e.as_str().to_string());
    Report {
        localroot: localroot.to_string(),
        remote: state.remote.clone(),
        started: text(&state.started),
        last_success: text(&state.last_success),
        last_complete: text(&state.last_complete),
        heartbeat: text(&state.heartbeat),
        newest_applied: text(&state.newest_applied),
        lag_seconds: age(now, &state.last_complete).or_else(|| age(now, &state.started)),
        heartbeat_age_seconds: age(now, &state.heartbeat),
        pending_deletes: state.pending_deletes.len(),
        passes: state.counters.passes,
        files: state.counters.files,
        bytes: state.counters.bytes,
        deletes: state.counters.deletes,
        refused: state.counters.refused,
        errors: state.counters.errors.clone(),
        failing: state.failing.clone(),
        future_events: state.future_events,
        last_error: state.last_error.clone(),
        running: state.running.clone(),
        last_full: text(&state.last_full),
    }
}

/// Nagios states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Ok = 0,
    Warning = 1,
    Critical = 2,
    Unknown = 3,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "OK",
            Level::Warning => "WARNING",
            Level::Critical => "CRITICAL",
            Level::Unknown => "UNKNOWN",
        }
    }
}

/// Judge a report against lag thresholds: one Nagios line with perfdata
/// (labels name the tree, so several trees' lines can be told apart).
/// A mirror that never completed a pass is WARNING while its first pass
/// runs with a fresh heartbeat, CRITICAL when its last pass failed or its
/// heartbeat is older than `crit`. Failing paths and events from the
/// future make it at least WARNING.
pub(crate) fn check(root: &str, r: Option<&Report>, warn: f64, crit: f64) -> (Level, String) {
    let Some(r) = r else {
        return (Level::Unknown, format!("RRR UNKNOWN - {root}: no mirror state (has rmirror run on this target?)"));
    };
    let Some(lag) = r.lag_seconds else {
        return (Level::Unknown, format!("RRR UNKNOWN - {}: state has no timestamps", r.localroot));
    };
    let worse = |a: Level, b: Level| if b as i32 > a as i32 { b } else { a };
    let mut notes: Vec<String> = Vec::new();
    let mut level = if r.last_complete.is_none() {
        let stale = r.heartbeat_age_seconds.is_none_or(|h| h >= crit);
        match &r.last_error {
            Some(e) => {
                notes.push(format!("never complete; last pass failed: {}", e.lines().next().unwrap_or("")));
                Level::Critical
            }
            None if stale => {
                notes.push("never complete; no heartbeat".into());
                Level::Critical
            }
            None => {
                notes.push(match &r.running {
                    Some(run) => format!("first pass running: {} {}", run.phase, run.words()),
                    None => "first pass running".into(),
                });
                Level::Warning
            }
        }
    } else if lag >= crit {
        Level::Critical
    } else if lag >= warn {
        Level::Warning
    } else {
        Level::Ok
    };
    if let Some(f) = r.failing.first() {
        level = worse(level, Level::Warning);
        notes.push(format!(
            "{} failing path{} (e.g. {}: {})",
            r.failing.len(),
            if r.failing.len() == 1 { "" } else { "s" },
            crate::recentfile::shown_path(&f.path),
            f.message
        ));
    }
    if r.future_events > 0 {
        level = worse(level, Level::Warning);
        notes.push(format!("{} events from the future", r.future_events));
    }
    let hb = r.heartbeat_age_seconds.map_or("never".to_string(), |h| format!("{} ago", human::duration(h)));
    let label = |what: &str| format!("'{what} {}'", r.localroot.replace(['\'', '='], "_"));
    let notes = if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) };
    let line = format!(
        "RRR {} - {} lag {} behind {}, heartbeat {hb}, {} pending deletes{notes} | {}={:.0}s;{warn:.0};{crit:.0};0 {}={} {}={}",
        level.word(),
        r.localroot,
        human::duration(lag),
        r.remote,
        r.pending_deletes,
        label("lag"),
        lag,
        label("pending_deletes"),
        r.pending_deletes,
        label("failing"),
        r.failing.len()
    );
    (level, line)
}

fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// One metric: HELP, TYPE and a sample per row (labels, value).
pub(crate) fn prometheus_metric(out: &mut String, name: &str, kind: &str, help: &str, rows: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, v) in rows {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {v}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    }
}

/// Error classes every mirror reports, 0 until they happen (a counter
/// with no sample cannot be alerted on).
const ERROR_CLASSES: &[&str] = &["connection", "timeout", "partial", "protocol", "fetch", "index", "delete", "failing"];

/// A metric of a mirror: name, help, and its value for a report.
type Metric<'a> = (&'a str, &'a str, &'a dyn Fn(&Report) -> Option<f64>);

/// The node-exporter textfile format (one file may hold several mirrors).
/// Instants are `*_timestamp_seconds` (Unix time), never ages frozen at
/// write time: an alert computes `time() - …` itself. Labels: the
/// localroot (absolute) and the remote.
pub(crate) fn prometheus(reports: &[Report]) -> String {
    let mut out = String::new();
    let lbl = |r: &Report| format!("localroot=\"{}\",remote=\"{}\"", label_value(&r.localroot), label_value(&r.remote));
    let ts = |e: &Option<String>| e.as_deref().and_then(|s| s.parse::<f64>().ok());
    let rows = |f: &dyn Fn(&Report) -> Option<f64>| -> Vec<(String, f64)> {
        reports.iter().filter_map(|r| f(r).map(|v| (lbl(r), v))).collect()
    };
    let gauges: [Metric; 11] = [
        ("rrr_mirror_started_timestamp_seconds", "Unix time the mirror's state was created.", &|r| ts(&r.started)),
        ("rrr_mirror_last_success_timestamp_seconds", "Unix time of the last pass without errors.", &|r| {
            ts(&r.last_success)
        }),
        (
            "rrr_mirror_last_complete_timestamp_seconds",
            "Unix time the mirror was last complete against its origin's principal (lag = time() - this).",
            &|r| ts(&r.last_complete),
        ),
        ("rrr_mirror_heartbeat_timestamp_seconds", "Unix time rmirror last wrote its state.", &|r| ts(&r.heartbeat)),
        ("rrr_mirror_newest_applied_timestamp_seconds", "Epoch of the newest event transferred or deleted.", &|r| {
            ts(&r.newest_applied)
        }),
        ("rrr_mirror_last_full_timestamp_seconds", "Unix time of the last whole-tree pass.", &|r| ts(&r.last_full)),
        ("rrr_mirror_complete", "1 once the mirror has been complete at least once, else 0.", &|r| {
            Some(if r.last_complete.is_some() { 1.0 } else { 0.0 })
        }),
        ("rrr_mirror_running_bytes", "Bytes received so far by the running whole-tree pass (0: none runs).", &|r| {
            Some(r.running.as_ref().map_or(0.0, |x| x.bytes as f64))
        }),
        ("rrr_mirror_pending_deletes", "Delete events waiting to be applied.", &|r| Some(r.pending_deletes as f64)),
        ("rrr_mirror_failing_paths", "Paths the origin could not send, retried every pass.", &|r| {
            Some(r.failing.len() as f64)
        }),
        ("rrr_mirror_future_events", "Events of the last pass more than an hour ahead of the clock.", &|r| {
            Some(r.future_events as f64)
        }),
    ];
    for (name, help, f) in gauges {
        prometheus_metric(&mut out, name, "gauge", help, &rows(f));
    }
    let counters: [Metric; 5] = [
        ("rrr_mirror_passes_total", "Passes run.", &|r| Some(r.passes as f64)),
        ("rrr_mirror_files_total", "Files rsync transferred.", &|r| Some(r.files as f64)),
        ("rrr_mirror_bytes_total", "Bytes rsync transferred.", &|r| Some(r.bytes as f64)),
        ("rrr_mirror_deletes_total", "Deletes applied.", &|r| Some(r.deletes as f64)),
        ("rrr_mirror_refused_total", "Hostile events refused.", &|r| Some(r.refused as f64)),
    ];
    for (name, help, f) in counters {
        prometheus_metric(&mut out, name, "counter", help, &rows(f));
    }
    let errs: Vec<(String, f64)> = reports
        .iter()
        .flat_map(|r| {
            let mut classes: Vec<&str> = ERROR_CLASSES.to_vec();
            classes.extend(r.errors.keys().map(String::as_str).filter(|c| !ERROR_CLASSES.contains(c)));
            classes.into_iter().map(move |c| {
                let n = r.errors.get(c).copied().unwrap_or(0);
                (format!("{},class=\"{}\"", lbl(r), label_value(c)), n as f64)
            })
        })
        .collect();
    prometheus_metric(&mut out, "rrr_mirror_errors_total", "counter", "Failures by class.", &errs);
    out
}

/// Plain `rrr status` text: instants in RFC 3339 with their age, sizes
/// in binary units (`--json` keeps the raw epochs and numbers).
pub(crate) fn plain(r: &Report, now: f64) -> String {
    let mut out = String::new();
    let when = |v: &Option<String>| match v.as_deref().and_then(|s| s.parse::<f64>().ok()) {
        Some(t) => format!("{} ({} ago)", human::time(t), human::duration((now - t).max(0.0))),
        None => v.clone().unwrap_or_else(|| "-".into()),
    };
    let secs = |v: Option<f64>| v.map_or("-".to_string(), human::duration);
    let _ = writeln!(out, "localroot        {}", r.localroot);
    let _ = writeln!(out, "remote           {}", r.remote);
    let _ = writeln!(out, "lag              {}", secs(r.lag_seconds));
    let _ = writeln!(out, "heartbeat        {}", when(&r.heartbeat));
    if let Some(run) = &r.running {
        let since = run.started.as_ref().map(|e| when(&Some(e.as_str().to_string()))).unwrap_or_default();
        let _ = writeln!(out, "running          {} since {since}: {}", run.phase, run.words());
    }
    let _ = writeln!(out, "started          {}", when(&r.started));
    let _ = writeln!(out, "last success     {}", when(&r.last_success));
    let _ = writeln!(out, "last complete    {}", when(&r.last_complete));
    let _ = writeln!(out, "last full pass   {}", when(&r.last_full));
    let _ = writeln!(out, "newest applied   {}", when(&r.newest_applied));
    let _ = writeln!(out, "pending deletes  {}", r.pending_deletes);
    let _ = writeln!(
        out,
        "counters         {} passes, {} files, {}, {} deletes, {} refused",
        human::count(r.passes),
        human::count(r.files),
        human::size(r.bytes),
        human::count(r.deletes),
        human::count(r.refused)
    );
    if !r.errors.is_empty() {
        let e: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "errors           {}", e.join(", "));
    }
    if let Some(e) = &r.last_error {
        let _ = writeln!(out, "last error       {}", e.lines().next().unwrap_or(""));
    }
    if r.future_events > 0 {
        let _ = writeln!(out, "future events    {} (more than an hour ahead; taken when due)", r.future_events);
    }
    let _ = writeln!(out, "failing          {}", r.failing.len());
    for f in &r.failing {
        let _ = writeln!(
            out,
            "  {}  {} attempts since {}: {}",
            crate::recentfile::shown_path(&f.path),
            f.attempts,
            human::time(f.first.to_f64()),
            f.message
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epoch::Epoch;

    fn state() -> State {
        let mut s = State::fresh("rsync://h/m/RECENT.recent", &Epoch::parse("1700000000.5").unwrap());
        s.last_complete = Some(Epoch::parse("1700000100.5").unwrap());
        s.heartbeat = Some(Epoch::parse("1700000110.5").unwrap());
        s.counters.errors.insert("connection".into(), 2);
        s
    }

    #[test]
    fn lag_and_levels() {
        let r = report("/m", &state(), 1_700_000_400.5);
        assert_eq!(r.lag_seconds, Some(300.0));
        assert_eq!(r.heartbeat_age_seconds, Some(290.0));
        assert_eq!(check("/m", Some(&r), 600.0, 3600.0).0, Level::Ok);
        assert_eq!(check("/m", Some(&r), 300.0, 3600.0).0, Level::Warning);
        assert_eq!(check("/m", Some(&r), 60.0, 200.0).0, Level::Critical);
        assert_eq!(check("/m", None, 60.0, 200.0).0, Level::Unknown);
        assert!(check("/m", Some(&r), 600.0, 3600.0).1.starts_with("RRR OK - /m lag 5 min 00 s behind"));
        assert!(
            check("/m", Some(&r), 600.0, 3600.0).1.contains("| 'lag /m'=300s;600;3600;0 "),
            "perfdata names the tree"
        );
    }

    #[test]
    fn failing_future_and_first_pass() {
        let mut st = state();
        let now = Epoch::parse("1700000200.5").unwrap();
        st.failing.push(Failing {
            path: "id/secret".into(),
            epoch: None,
            message: "[sender] send_files failed to open \"id/secret\" (in m): Permission denied (13)".into(),
            first: now.clone(),
            last: now.clone(),
            attempts: 3,
        });
        let (level, line) = check("/m", Some(&report("/m", &st, 1_700_000_200.5)), 600.0, 3600.0);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("1 failing path (e.g. id/secret: ") && line.contains("'failing /m'=1"), "{line}");
        assert!(plain(&report("/m", &st, 1_700_000_200.5), 1_700_000_200.5)
            .contains("  id/secret  3 attempts since 2023-11-14T22:16:40Z: [sender]"));
        st.failing.clear();
        st.future_events = 2;
        let (level, line) = check("/m", Some(&report("/m", &st, 1_700_000_200.5)), 600.0, 3600.0);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("2 events from the future"), "{line}");

        // Never complete: WARNING while the first pass runs, CRITICAL when
        // it failed or the heartbeat is old.
        let mut first = State::fresh("rsync://h/m/RECENT.recent", &Epoch::parse("1700000000.5").unwrap());
        first.heartbeat = Some(Epoch::parse("1700000100.5").unwrap());
        let at = |s: &State, t: f64| check("/m", Some(&report("/m", s, t)), 60.0, 3600.0);
        assert_eq!(at(&first, 1_700_000_200.5).0, Level::Warning, "{}", at(&first, 1_700_000_200.5).1);
        assert_eq!(at(&first, 1_700_009_000.5).0, Level::Critical);
        first.last_error = Some("rsync failed with code 5: …".into());
        let (level, line) = at(&first, 1_700_000_200.5);
        assert_eq!(level, Level::Critical);
        assert!(line.contains("last pass failed: rsync failed with code 5"), "{line}");
    }

    #[test]
    fn plain_status_is_for_people() {
        let mut st = state();
        st.counters.bytes = 9_669_840;
        st.running = Some(crate::mirror::progress::Running {
            phase: "bootstrap".into(),
            started: Some(Epoch::parse("1700000300.5").unwrap()),
            bytes: 1 << 30,
            percent: 45,
            rate: "12.00MB/s".into(),
            eta: "0:01:02".into(),
            files: 1204,
            listing: false,
            from_rsync: true,
        });
        let text = plain(&report("/m", &st, 1_700_000_400.5), 1_700_000_400.5);
        assert!(text.contains("lag              5 min 00 s\n"), "{text}");
        assert!(text.contains("heartbeat        2023-11-14T22:15:10Z (4 min 50 s ago)\n"), "{text}");
        assert!(text.contains("9.2 MiB"), "{text}");
        let running = "running          bootstrap since 2023-11-14T22:18:20Z (1 min 40 s ago): \
                       45% (1.0 GiB, 12.00MB/s, 0:01:02 left, 1,204 files)";
        assert!(text.contains(running), "{text}");
        assert!(!text.contains("1700000"), "no raw epochs: {text}");
    }

    #[test]
    fn prometheus_format() {
        let text = prometheus(&[report("/m", &state(), 1_700_000_400.5)]);
        assert!(text.contains("# TYPE rrr_mirror_last_complete_timestamp_seconds gauge\n"));
        let l = "{localroot=\"/m\",remote=\"rsync://h/m/RECENT.recent\"}";
        assert!(text.contains(&format!("rrr_mirror_last_complete_timestamp_seconds{l} 1700000100.5\n")), "{text}");
        assert!(text.contains(&format!("rrr_mirror_heartbeat_timestamp_seconds{l} 1700000110.5\n")), "{text}");
        assert!(text.contains(&format!("rrr_mirror_complete{l} 1\n")), "{text}");
        assert!(!text.contains("age_seconds") && !text.contains("lag_seconds"), "no ages frozen at write time");
        // A counter always has samples, 0 until it happens.
        assert!(text.contains(
            "rrr_mirror_errors_total{localroot=\"/m\",remote=\"rsync://h/m/RECENT.recent\",class=\"timeout\"} 0\n"
        ));
        assert!(text.contains(
            "rrr_mirror_errors_total{localroot=\"/m\",remote=\"rsync://h/m/RECENT.recent\",class=\"connection\"} 2\n"
        ));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name_labels, value) = line.rsplit_once(' ').unwrap();
            assert!(name_labels.starts_with("rrr_mirror_") && name_labels.ends_with('}'), "{line}");
            value.parse::<f64>().unwrap();
        }
    }
}
