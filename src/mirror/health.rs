//! A mirror's run record as operators read it: `rrr status` (plain, JSON,
//! a node-exporter textfile) and `rrr check` (Nagios). Pure: a state and
//! the clock in, a report out.
//!
//! Lag (docs/decisions.md#lag-status-check): seconds since the mirror was last complete against
//! the origin's principal (every event of the principal done). An idle
//! origin therefore reads about 0 while the mirror runs, and a dead
//! mirror's lag grows. The heartbeat age (seconds since the state was last
//! written) is reported beside it.
//!
//! What is unusual but no error is counted here, one field and one gauge
//! each: failing, quarantined and missing-upstream paths, held deletes,
//! events from the future. The origin's own counts (events re-recorded
//! after a Perl writer hid them, files fsck does not index) are the
//! origin's record, not a mirror's: they join the same textfile format
//! through [`crate::output::prometheus::metric`], as rows of their own.

use crate::mirror::state::Outcome;
use crate::mirror::{Failing, State};
use crate::output::human::{self, plural};
use crate::output::prometheus::{label_value, metric as prometheus_metric};
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
    /// The origin's beacon this mirror holds (`mirror::freshness`): the
    /// origin's name, its clock when it wrote it, and `origin_lag` = now −
    /// that time (what a downstream user sees); none without a beacon.
    pub origin: Option<String>,
    pub origin_time: Option<String>,
    pub origin_lag_seconds: Option<f64>,
    pub last_success_age_seconds: Option<f64>,
    pub pending_deletes: usize,
    pub passes: u64,
    pub files: u64,
    pub bytes: u64,
    pub deletes: u64,
    pub refused: u64,
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Paths the origin could not send, retried every pass.
    pub failing: Vec<Failing>,
    /// Paths rsync cannot carry, left out of whole-tree passes
    /// (docs/decisions.md#quarantine).
    pub quarantined: Vec<Failing>,
    /// With `--trust-key`: paths whose bytes did not match their signed
    /// event (`mirror::staging`): never installed, kept in
    /// `.rrr/quarantine/`, retried every pass. `check` CRITICAL "tampered".
    pub tampered: Vec<crate::mirror::state::Tampered>,
    /// Paths new events list that the origin has not had for the grace
    /// (docs/decisions.md#missing-upstream): the mirror is not complete.
    pub missing_upstream: Vec<Failing>,
    /// Paths the origin lacked at the last try, still within the grace (a
    /// delete event usually follows).
    pub missing_in_grace: usize,
    /// Events of the last pass more than an hour ahead of the clock.
    pub future_events: u64,
    /// Deletes the mass-delete guard held in the last pass.
    pub held_deletes: u64,
    /// The last pass's error, if it failed, and when.
    pub last_error: Option<String>,
    pub last_error_time: Option<String>,
    /// Attempts at a pass, from the first one on (failed and interrupted
    /// ones too), the start of the last one and how it ended (`success`,
    /// `failed`, `interrupted`; null while the first one runs).
    pub attempts: u64,
    pub last_attempt: Option<String>,
    pub last_outcome: Option<&'static str>,
    /// Failed attempts since the last success.
    pub consecutive_failures: u64,
    /// A whole-tree pass is owed (interrupted, or its deletes held back by `--max-delete`).
    pub resync: bool,
    /// The pass running now (a bootstrap), as of the last heartbeat.
    pub running: Option<crate::mirror::pass_progress::Running>,
    /// An attempt runs (as of the last heartbeat): `attempts` and
    /// `last_attempt` count and date it, `last_outcome` is still the
    /// previous attempt's; and for how long it has run.
    pub attempt_running: bool,
    pub attempt_age_seconds: Option<f64>,
    /// The last whole-tree pass.
    pub last_full: Option<String>,
    /// The last `--verify-every` run and what it found.
    pub last_verify: Option<crate::mirror::state::VerifyRecord>,
    /// With `--trust-key`: the origin's signed beacon last accepted and
    /// how it stands (none: the mirror does not verify).
    pub signature: Option<SignatureStatus>,
    /// With several upstreams (docs/decisions.md#several-upstreams): the
    /// one the last pass read, and each one's last result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<crate::mirror::upstreams::UpstreamRecord>,
}

/// What `status` says of the origin's signature (`mirror::trusted`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(crate) struct SignatureStatus {
    /// Why the last pass refused what it fetched (`check` CRITICAL "signature").
    pub error: Option<String>,
    /// The origin the accepted beacon names.
    pub origin: Option<String>,
    /// The trusted key that signed it (`SHA256:…`).
    pub key: Option<String>,
    /// The origin's signed time.
    pub signed: Option<String>,
    /// now − signed, seconds.
    pub age_seconds: Option<f64>,
    /// `--max-signature-age`, seconds.
    pub max_age_seconds: Option<u64>,
    /// Older than that: nothing is deleted, `check` CRITICAL "signature stale".
    pub stale: bool,
}

fn signature_status(state: &State, now: f64) -> Option<SignatureStatus> {
    if state.trusted.is_none() && state.trust_error.is_none() {
        return None;
    }
    let t = state.trusted.as_ref();
    let age_seconds = t.map(|t| (now - t.time.to_f64()).max(0.0));
    let max_age_seconds = t.map(|t| t.max_age);
    Some(SignatureStatus {
        error: state.trust_error.clone(),
        origin: t.map(|t| t.origin.clone()),
        key: t.map(|t| t.key.clone()),
        signed: t.map(|t| t.time.as_str().to_string()),
        age_seconds,
        max_age_seconds,
        stale: matches!((age_seconds, max_age_seconds), (Some(a), Some(m)) if a > m as f64),
    })
}

fn age(now: f64, e: &Option<crate::epoch::Epoch>) -> Option<f64> {
    e.as_ref().map(|e| (now - e.to_f64()).max(0.0))
}

/// Summarize `state` at clock `now` (seconds).
pub(crate) fn report(localroot: &str, state: &State, now: f64) -> Report {
    let text = |e: &Option<crate::epoch::Epoch>| e.as_ref().map(|e| e.as_str().to_string());
    // The attempt the last heartbeat says runs, if it is newer than the
    // last one recorded as finished.
    let running_attempt = state.running.as_ref().filter(|r| r.attempt > state.counters.attempts);
    let attempt_started = running_attempt.and_then(|r| r.attempt_started.clone().or_else(|| r.started.clone()));
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
        origin: state.origin_beacon.as_ref().map(|b| b.origin.clone()),
        origin_time: state.origin_beacon.as_ref().map(|b| b.time.as_str().to_string()),
        origin_lag_seconds: state.origin_beacon.as_ref().and_then(|b| age(now, &Some(b.time.clone()))),
        last_success_age_seconds: age(now, &state.last_success),
        pending_deletes: state.pending_deletes.len(),
        passes: state.counters.passes,
        files: state.counters.files,
        bytes: state.counters.bytes,
        deletes: state.counters.deletes,
        refused: state.counters.refused,
        errors: state.counters.errors.clone(),
        failing: state.failing.clone(),
        quarantined: state.quarantined.clone(),
        tampered: state.tampered.clone(),
        missing_upstream: state.missing_upstream(now).cloned().collect(),
        missing_in_grace: state.missing.iter().filter(|m| !m.overdue(now)).count(),
        future_events: state.future_events,
        held_deletes: state.held_deletes,
        last_error: state.last_error.clone(),
        last_error_time: text(&state.last_error_time),
        attempts: running_attempt.map_or(state.counters.attempts, |r| r.attempt),
        last_attempt: text(&attempt_started).or_else(|| text(&state.last_attempt)),
        last_outcome: state.last_outcome.map(Outcome::as_str),
        consecutive_failures: state.consecutive_failures,
        resync: state.resync,
        running: state.running.clone(),
        attempt_running: running_attempt.is_some(),
        attempt_age_seconds: running_attempt.and(age(now, &attempt_started)),
        last_full: text(&state.last_full),
        last_verify: state.last_verify.clone(),
        signature: signature_status(state, now),
        upstream: state.upstream.clone(),
        upstreams: state.upstreams.clone(),
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
    /// How bad, for picking the worst of several trees: CRITICAL, then
    /// WARNING, then UNKNOWN (a tree never tried), then OK.
    pub fn severity(self) -> u8 {
        match self {
            Level::Ok => 0,
            Level::Unknown => 1,
            Level::Warning => 2,
            Level::Critical => 3,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "OK",
            Level::Warning => "WARNING",
            Level::Critical => "CRITICAL",
            Level::Unknown => "UNKNOWN",
        }
    }
}

/// The first line of an error message.
fn first_line(e: &str) -> &str {
    e.lines().next().unwrap_or("")
}

/// Judge a report against lag thresholds: one Nagios line with perfdata
/// (labels name the tree, so several trees' lines can be told apart).
/// docs/decisions.md#lag-status-check: UNKNOWN only for a tree never tried (no state).
/// A mirror that never completed a pass is judged by its first pass
/// ([`first_pass_level`]), one that completed by its lag and its last
/// success ([`completed_level`]); what needs an operator makes either at
/// least WARNING ([`needs_attention`]).
pub(crate) fn check(root: &str, r: Option<&Report>, warn: f64, crit: f64) -> (Level, String) {
    let Some(r) = r else {
        return (
            Level::Unknown,
            format!("RRR UNKNOWN - {root}: never tried (no mirror state; has rmirror run on this target?)"),
        );
    };
    let mut notes: Vec<String> = Vec::new();
    let level = if r.last_complete.is_none() {
        first_pass_level(r, crit, &mut notes)
    } else {
        completed_level(r, warn, crit, &mut notes)
    };
    let level = if needs_attention(r, &mut notes) { worse(level, Level::Warning) } else { level };
    let level = if signature_trouble(r, &mut notes) { Level::Critical } else { level };
    let level = if tampered(r, &mut notes) { Level::Critical } else { level };
    (level, nagios_line(level, r, &notes, warn, crit))
}

/// With `--trust-key`: the last pass refused what it fetched ("signature"),
/// or the accepted signature is older than `--max-signature-age`
/// ("signature stale"): CRITICAL, each with its note.
fn signature_trouble(r: &Report, notes: &mut Vec<String>) -> bool {
    let Some(s) = &r.signature else { return false };
    let before = notes.len();
    if let Some(e) = &s.error {
        notes.insert(0, format!("signature: {}", first_line(e)));
    }
    if s.stale {
        notes.insert(
            0,
            format!(
                "signature stale: the origin signed {} ago, more than {}; nothing is deleted",
                human::duration(s.age_seconds.unwrap_or(0.0)),
                human::duration(s.max_age_seconds.unwrap_or(0) as f64)
            ),
        );
    }
    notes.len() > before
}

/// With `--trust-key`: paths whose bytes did not match their signed
/// event ("tampered", `mirror::staging`): CRITICAL, first of the notes.
fn tampered(r: &Report, notes: &mut Vec<String>) -> bool {
    let Some(t) = r.tampered.first() else { return false };
    let kept = t.kept.as_deref().map_or(String::new(), |k| format!("; kept as .rrr/quarantine/{k}"));
    let more = match r.tampered.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    notes.insert(
        0,
        format!(
            "tampered: {}{more} (received {}, not what the signed index says; not installed{kept})",
            shortened(&t.path),
            t.received
        ),
    );
    true
}

/// The worse of two levels by their Nagios number (CRITICAL over WARNING over OK).
fn worse(a: Level, b: Level) -> Level {
    if b as i32 > a as i32 {
        b
    } else {
        a
    }
}

/// "N failed attempts in a row: <the last error's first line>".
fn failures(r: &Report) -> String {
    let err = r.last_error.as_deref().map_or(String::new(), |e| format!(": {}", first_line(e)));
    format!("{} in a row{err}", plural(r.consecutive_failures.max(1), "failed attempt", "failed attempts"))
}

/// A mirror that never completed a pass: CRITICAL when a pass failed,
/// the heartbeat is older than `crit` (or missing) or the first attempt
/// has run for `crit`, else WARNING while its first pass runs or after it
/// was interrupted.
fn first_pass_level(r: &Report, crit: f64, notes: &mut Vec<String>) -> Level {
    let stale = r.heartbeat_age_seconds.is_none_or(|h| h >= crit);
    let (level, note) = match (r.last_outcome, &r.running) {
        (Some("failed"), _) => (Level::Critical, format!("never complete; {}", failures(r))),
        _ if stale => (Level::Critical, "never complete; no heartbeat for --crit".into()),
        (_, Some(run)) if r.attempt_age_seconds.is_some_and(|a| a >= crit) => (
            Level::Critical,
            format!(
                "never complete; first attempt running for {}: {}",
                human::duration(r.attempt_age_seconds.unwrap_or(0.0)),
                doing(run)
            ),
        ),
        (_, Some(run)) => (Level::Warning, format!("first pass running: {}", doing(run))),
        (Some("interrupted"), None) => (Level::Warning, "never complete; first pass interrupted".into()),
        _ => (Level::Warning, "first pass running".into()),
    };
    notes.push(note);
    level
}

/// What a running pass does: its phase and progress, and the rsync call
/// with its tries once one failed.
fn doing(run: &crate::mirror::pass_progress::Running) -> String {
    let call = if run.last_error.is_some() { format!("; {}", run.call_words()) } else { String::new() };
    format!("{} {}{call}", run.phase, run.words())
}

/// A mirror that completed a pass: judged by its lag, and CRITICAL when
/// its last success is older than `crit`.
fn completed_level(r: &Report, warn: f64, crit: f64, notes: &mut Vec<String>) -> Level {
    let by = |lag: f64| {
        if lag >= crit {
            Level::Critical
        } else if lag >= warn {
            Level::Warning
        } else {
            Level::Ok
        }
    };
    let mut level = by(r.lag_seconds.unwrap_or(0.0));
    // The origin's lag, when a beacon is held: a stale upstream (a tier
    // above that stopped) passes nothing new and keeps the pass lag near 0.
    if let Some(origin_lag) = r.origin_lag_seconds {
        let by_origin = by(origin_lag);
        if by_origin != Level::Ok {
            notes.push(format!(
                "origin lag {} (the origin's beacon{})",
                human::duration(origin_lag),
                r.origin.as_deref().map_or(String::new(), |o| format!(" from {o}"))
            ));
        }
        level = worse(level, by_origin);
    }
    if r.last_outcome == Some("failed") {
        notes.push(failures(r));
    }
    if let Some(age) = r.last_success_age_seconds.filter(|a| *a >= crit) {
        level = Level::Critical;
        notes.push(format!("last success {} ago", human::duration(age)));
    }
    level
}

/// What needs an operator but breaks nothing (WARNING at least): a held
/// mass delete, held-back deletes, an owed whole-tree pass, failing paths,
/// events from the future. Whether any applies; each adds its note.
fn needs_attention(r: &Report, notes: &mut Vec<String>) -> bool {
    let before = notes.len();
    if r.last_outcome == Some("held") {
        // Like deletes held back by --max-delete: an operator's decision is
        // needed. While it waits, the age of the last success grows and
        // turns CRITICAL past --crit.
        notes.push(
            "the last pass held back a mass delete (rerun with --accept-deletes, or --max-delete N \
             covering the count its log names)"
                .into(),
        );
    }
    if r.pending_deletes > 0 {
        notes.push(format!("{} held back (--max-delete)", plural(r.pending_deletes as u64, "delete", "deletes")));
    }
    if r.resync && r.running.is_none() {
        notes.push("a whole-tree pass is owed".into());
    }
    if let Some(f) = r.failing.first() {
        notes.push(format!(
            "{} (e.g. {}: {})",
            plural(r.failing.len() as u64, "failing path", "failing paths"),
            crate::recentfile::shown_path(&f.path),
            f.message
        ));
    }
    if let Some(q) = r.quarantined.first() {
        notes.push(format!(
            "{} (e.g. {}: {})",
            plural(r.quarantined.len() as u64, "quarantined path", "quarantined paths"),
            shortened(&q.path),
            q.message
        ));
    }
    if let Some(m) = r.missing_upstream.first() {
        notes.push(format!(
            "{} missing upstream (e.g. {}, listed since {})",
            plural(r.missing_upstream.len() as u64, "path", "paths"),
            crate::recentfile::shown_path(&m.path),
            human::time(m.first.to_f64())
        ));
    }
    if r.future_events > 0 {
        notes.push(format!("{} from the future", plural(r.future_events, "event", "events")));
    }
    notes.len() > before
}

/// A path for a one-line note: escaped, and a quarantined path of 4 KiB
/// cut to its first and last 60 characters with its length.
fn shortened(path: &crate::recentfile::RelPath) -> String {
    let shown = crate::recentfile::shown_path(path);
    let chars: Vec<char> = shown.chars().collect();
    if chars.len() <= 160 {
        return shown;
    }
    let head: String = chars[..60].iter().collect();
    let tail: String = chars[chars.len() - 60..].iter().collect();
    format!("{head}…{tail} ({} bytes)", path.len())
}

/// The Nagios line: verdict, lag, heartbeat, notes, then perfdata whose
/// labels carry the localroot (quotes and `=` replaced).
fn nagios_line(level: Level, r: &Report, notes: &[String], warn: f64, crit: f64) -> String {
    let lag = r.lag_seconds.unwrap_or(0.0);
    let hb = r.heartbeat_age_seconds.map_or("never".to_string(), |h| format!("{} ago", human::duration(h)));
    let label = |what: &str| format!("'{what} {}'", r.localroot.replace(['\'', '='], "_"));
    let notes = if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) };
    format!(
        "RRR {} - {} lag {} behind {}, heartbeat {hb}, {}{notes} | {}={:.0}s;{warn:.0};{crit:.0};0 {}={} {}={} {}={}",
        level.word(),
        r.localroot,
        human::duration(lag),
        r.remote,
        plural(r.pending_deletes as u64, "pending delete", "pending deletes"),
        label("lag"),
        lag,
        label("pending_deletes"),
        r.pending_deletes,
        label("failing"),
        r.failing.len(),
        label("consecutive_failures"),
        r.consecutive_failures
    ) + &r
        .origin_lag_seconds
        .map_or(String::new(), |o| format!(" {}={o:.0}s;{warn:.0};{crit:.0};0", label("origin_lag")))
}

/// Error classes every mirror reports, 0 until they happen (a counter
/// with no sample cannot be alerted on).
const ERROR_CLASSES: &[&str] = &["connection", "timeout", "partial", "protocol", "fetch", "index", "delete", "failing"];

/// The values of `rrr_mirror_last_outcome`'s `outcome` label.
const OUTCOMES: &[&str] = &["success", "failed", "interrupted", "held"];

/// Characters of an error message kept in a label.
const MAX_ERROR_LABEL: usize = 300;

/// A metric of a mirror: name, help, and its value for a report (none:
/// no sample for that mirror).
type Metric = (&'static str, &'static str, fn(&Report) -> Option<f64>);

/// A mirror's labels: the localroot (absolute) and the remote.
fn mirror_labels(r: &Report) -> String {
    format!("localroot=\"{}\",remote=\"{}\"", label_value(&r.localroot), label_value(&r.remote))
}

/// An instant of the report (an epoch as text) as Unix time.
fn timestamp(e: &Option<String>) -> Option<f64> {
    e.as_deref().and_then(|s| s.parse::<f64>().ok())
}

/// The gauges with one sample per mirror: instants, then current counts.
const GAUGES: [Metric; 23] = [
    (
        "rrr_mirror_signature_timestamp_seconds",
        "With --trust-key: the origin's signed time in the beacon last accepted.",
        |r| r.signature.as_ref().and_then(|s| timestamp(&s.signed)),
    ),
    (
        "rrr_mirror_signature_ok",
        "With --trust-key: 1 while the last pass verified and the signature is not stale, else 0.",
        |r| r.signature.as_ref().map(|s| if s.error.is_none() && !s.stale { 1.0 } else { 0.0 }),
    ),
    ("rrr_mirror_last_attempt_timestamp_seconds", "Unix time the last attempt at a pass started.", |r| {
        timestamp(&r.last_attempt)
    }),
    ("rrr_mirror_last_error_timestamp_seconds", "Unix time of the last failed attempt (none since a success).", |r| {
        timestamp(&r.last_error_time)
    }),
    ("rrr_mirror_consecutive_failures", "Failed attempts since the last success (from the first attempt on).", |r| {
        Some(r.consecutive_failures as f64)
    }),
    ("rrr_mirror_started_timestamp_seconds", "Unix time the mirror's state was created.", |r| timestamp(&r.started)),
    ("rrr_mirror_last_success_timestamp_seconds", "Unix time of the last pass without errors.", |r| {
        timestamp(&r.last_success)
    }),
    (
        "rrr_mirror_last_complete_timestamp_seconds",
        "Unix time the mirror was last complete against its origin's principal (lag = time() - this).",
        |r| timestamp(&r.last_complete),
    ),
    ("rrr_mirror_heartbeat_timestamp_seconds", "Unix time rmirror last wrote its state.", |r| timestamp(&r.heartbeat)),
    (
        "rrr_mirror_origin_timestamp_seconds",
        "The origin's clock in the newest beacon this mirror holds (origin lag = time() - this; none without a beacon).",
        |r| timestamp(&r.origin_time),
    ),
    ("rrr_mirror_newest_applied_timestamp_seconds", "Epoch of the newest event transferred or deleted.", |r| {
        timestamp(&r.newest_applied)
    }),
    ("rrr_mirror_last_full_timestamp_seconds", "Unix time of the last whole-tree pass.", |r| timestamp(&r.last_full)),
    ("rrr_mirror_last_verify_timestamp_seconds", "Unix time of the last --verify-every run.", |r| {
        r.last_verify.as_ref().map(|v| v.time.to_f64())
    }),
    ("rrr_mirror_verify_differences", "Paths the last --verify-every run found missing, different or unknown.", |r| {
        r.last_verify.as_ref().map(|v| (v.missing + v.different + v.unknown) as f64)
    }),
    ("rrr_mirror_complete", "1 once the mirror has been complete at least once, else 0.", |r| {
        Some(if r.last_complete.is_some() { 1.0 } else { 0.0 })
    }),
    ("rrr_mirror_running_bytes", "Bytes received so far by the running whole-tree pass (0: none runs).", |r| {
        Some(r.running.as_ref().map_or(0.0, |x| x.bytes as f64))
    }),
    ("rrr_mirror_pending_deletes", "Delete events waiting to be applied.", |r| Some(r.pending_deletes as f64)),
    ("rrr_mirror_held_deletes", "Deletes the mass-delete guard held in the last pass.", |r| {
        Some(r.held_deletes as f64)
    }),
    ("rrr_mirror_failing_paths", "Paths the origin could not send, retried every pass.", |r| {
        Some(r.failing.len() as f64)
    }),
    ("rrr_mirror_quarantined_paths", "Paths rsync cannot carry, left out of whole-tree passes.", |r| {
        Some(r.quarantined.len() as f64)
    }),
    (
        "rrr_mirror_tampered_paths",
        "Paths whose bytes did not match their signed event (--trust-key): not installed, retried every pass.",
        |r| Some(r.tampered.len() as f64),
    ),
    (
        "rrr_mirror_missing_upstream_paths",
        "Paths new events list that the origin has not had for the grace period (the mirror is not complete).",
        |r| Some(r.missing_upstream.len() as f64),
    ),
    ("rrr_mirror_future_events", "Events of the last pass more than an hour ahead of the clock.", |r| {
        Some(r.future_events as f64)
    }),
];

/// The counters with one sample per mirror.
const COUNTERS: [Metric; 6] = [
    ("rrr_mirror_attempts_total", "Attempts at a pass, failed and interrupted ones too.", |r| Some(r.attempts as f64)),
    ("rrr_mirror_passes_total", "Passes run.", |r| Some(r.passes as f64)),
    ("rrr_mirror_files_total", "Files rsync transferred.", |r| Some(r.files as f64)),
    ("rrr_mirror_bytes_total", "Bytes rsync transferred.", |r| Some(r.bytes as f64)),
    ("rrr_mirror_deletes_total", "Deletes applied.", |r| Some(r.deletes as f64)),
    ("rrr_mirror_refused_total", "Hostile events refused.", |r| Some(r.refused as f64)),
];

/// The node-exporter textfile format (one file may hold several mirrors).
/// Instants are `*_timestamp_seconds` (Unix time), never ages frozen at
/// write time: an alert computes `time() - …` itself. Labels: the
/// localroot (absolute) and the remote.
pub(crate) fn prometheus(reports: &[Report]) -> String {
    let mut out = String::new();
    for (kind, metrics) in [("gauge", &GAUGES[..]), ("counter", &COUNTERS[..])] {
        for (name, help, value) in metrics {
            let rows: Vec<(String, f64)> =
                reports.iter().filter_map(|r| value(r).map(|v| (mirror_labels(r), v))).collect();
            prometheus_metric(&mut out, name, kind, help, &rows);
        }
    }
    prometheus_metric(&mut out, "rrr_mirror_errors_total", "counter", "Failures by class.", &error_rows(reports));
    prometheus_metric(
        &mut out,
        "rrr_mirror_last_outcome",
        "gauge",
        "1 for how the last attempt ended (all 0: never tried, or the first attempt runs).",
        &outcome_rows(reports),
    );
    prometheus_metric(
        &mut out,
        "rrr_mirror_last_error_info",
        "gauge",
        "The last failed attempt's error (first line) as a label, while no success followed.",
        &last_error_rows(reports),
    );
    let upstreams = upstream_rows(reports);
    if !upstreams.is_empty() {
        prometheus_metric(
            &mut out,
            "rrr_mirror_upstream_info",
            "gauge",
            "Several upstreams: 1 per upstream, with its last result and whether the last pass used it.",
            &upstreams,
        );
    }
    out
}

/// `rrr_mirror_errors_total`: every class of [`ERROR_CLASSES`] per mirror
/// (0 until it happens), then any other class the state counted.
fn error_rows(reports: &[Report]) -> Vec<(String, f64)> {
    reports
        .iter()
        .flat_map(|r| {
            let mut classes: Vec<&str> = ERROR_CLASSES.to_vec();
            classes.extend(r.errors.keys().map(String::as_str).filter(|c| !ERROR_CLASSES.contains(c)));
            classes.into_iter().map(move |c| {
                let n = r.errors.get(c).copied().unwrap_or(0);
                (format!("{},class=\"{}\"", mirror_labels(r), label_value(c)), n as f64)
            })
        })
        .collect()
}

/// `rrr_mirror_last_outcome`: one sample per outcome and mirror, 1 for
/// the last attempt's (an alert matches on the label, always present).
fn outcome_rows(reports: &[Report]) -> Vec<(String, f64)> {
    reports
        .iter()
        .flat_map(|r| {
            OUTCOMES.iter().map(move |o| {
                (format!("{},outcome=\"{o}\"", mirror_labels(r)), if r.last_outcome == Some(*o) { 1.0 } else { 0.0 })
            })
        })
        .collect()
}

/// `rrr_mirror_upstream_info`: each upstream of a tree that has several,
/// its last result (`fresh`, `stale`, `behind`, `foreign`, `unreachable`,
/// `none` before it was asked) and `used="1"` for the last pass's.
fn upstream_rows(reports: &[Report]) -> Vec<(String, f64)> {
    let mut rows = Vec::new();
    for r in reports {
        for u in &r.upstreams {
            let used = r.upstream.as_deref() == Some(u.remote.as_str());
            let result = u.result.map_or("none", crate::mirror::upstreams::Verdict::as_str);
            rows.push((
                format!(
                    "{},upstream=\"{}\",result=\"{result}\",used=\"{}\"",
                    mirror_labels(r),
                    label_value(&u.remote),
                    u8::from(used)
                ),
                1.0,
            ));
        }
    }
    rows
}

/// `rrr_mirror_last_error_info`: the last error's first line, cut to
/// [`MAX_ERROR_LABEL`] characters, while no success followed it.
fn last_error_rows(reports: &[Report]) -> Vec<(String, f64)> {
    reports
        .iter()
        .filter_map(|r| {
            let e = first_line(r.last_error.as_deref()?);
            let e: String = e.chars().take(MAX_ERROR_LABEL).collect();
            Some((format!("{},error=\"{}\"", mirror_labels(r), label_value(&e)), 1.0))
        })
        .collect()
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
    if !r.upstreams.is_empty() {
        let _ = writeln!(out, "upstream         {} (the last pass's)", r.upstream.as_deref().unwrap_or("-"));
        for u in &r.upstreams {
            let result = u.result.map_or("not asked yet", crate::mirror::upstreams::Verdict::as_str);
            let mut line = format!("  {}  {result}", u.remote);
            if let Some(n) = &u.newest {
                line.push_str(&format!(", index ends {}", when(&Some(n.as_str().to_string()))));
            }
            if u.next_try.is_some() {
                line.push_str(&format!(
                    ", backing off until {}",
                    when(&u.next_try.as_ref().map(|e| e.as_str().to_string()))
                ));
            }
            if let Some(m) = &u.message {
                line.push_str(&format!(": {m}"));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(line) = attempt_line(r, &when) {
        let _ = writeln!(out, "state            {line}");
    }
    let _ = writeln!(out, "lag              {}", secs(r.lag_seconds));
    if let Some(t) = &r.origin_time {
        let from =
            r.origin.as_deref().map_or(String::new(), |o| format!(" ({o}'s beacon of {})", when(&Some(t.clone()))));
        let _ = writeln!(out, "origin lag       {}{from}", secs(r.origin_lag_seconds));
    }
    let _ = writeln!(out, "heartbeat        {}", when(&r.heartbeat));
    if let Some(run) = &r.running {
        let since = run.started.as_ref().map(|e| when(&Some(e.as_str().to_string()))).unwrap_or_default();
        let _ = writeln!(out, "running          {} since {since}: {}", run.phase, run.words());
    }
    let _ = writeln!(out, "started          {}", when(&r.started));
    let outcome = match (r.attempt_running, r.last_outcome) {
        (true, Some(o)) => format!(", running (the one before: {o})"),
        (true, None) => ", running".to_string(),
        (false, o) => o.map_or(String::new(), |o| format!(", {o}")),
    };
    let _ = writeln!(out, "last attempt     {}{outcome}", when(&r.last_attempt));
    let _ = writeln!(out, "last success     {}", when(&r.last_success));
    if r.consecutive_failures > 0 {
        let _ = writeln!(out, "failures         {} in a row", human::count(r.consecutive_failures));
    }
    let _ = writeln!(out, "last complete    {}", when(&r.last_complete));
    let _ = writeln!(out, "last full pass   {}", when(&r.last_full));
    if let Some(v) = &r.last_verify {
        let found = match &v.error {
            Some(e) => format!("failed: {e}"),
            None => format!("{} missing, {} different, {} unknown", v.missing, v.different, v.unknown),
        };
        let _ = writeln!(out, "last verify      {}: {found}", when(&Some(v.time.as_str().to_string())));
    }
    let _ = writeln!(out, "newest applied   {}", when(&r.newest_applied));
    if let Some(s) = &r.signature {
        let how = match (&s.error, s.stale) {
            (Some(e), _) => format!("REFUSED: {}", first_line(e)),
            (None, true) => "STALE (nothing is deleted)".to_string(),
            (None, false) => "verified".to_string(),
        };
        let by = match (&s.origin, &s.key) {
            (Some(o), Some(k)) => format!(", origin {o}, key {k}, signed {}", when(&s.signed)),
            _ => String::new(),
        };
        let _ = writeln!(out, "signature        {how}{by}");
    }
    let _ = writeln!(out, "pending deletes  {}", r.pending_deletes);
    if r.held_deletes > 0 {
        let _ = writeln!(
            out,
            "held deletes     {} (a mass delete: --accept-deletes or --max-delete N lets them go)",
            human::count(r.held_deletes)
        );
    }
    let _ = writeln!(
        out,
        "counters         {}, {}, {}, {}, {}, {} refused",
        plural(r.attempts, "attempt", "attempts"),
        plural(r.passes, "pass", "passes"),
        plural(r.files, "file", "files"),
        human::size(r.bytes),
        plural(r.deletes, "delete", "deletes"),
        human::count(r.refused)
    );
    if !r.errors.is_empty() {
        let e: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "errors           {}", e.join(", "));
    }
    if let Some(e) = &r.last_error {
        let at = r.last_error_time.as_ref().map_or(String::new(), |_| format!("{}: ", when(&r.last_error_time)));
        let _ = writeln!(out, "last error       {at}{}", first_line(e));
    }
    if r.future_events > 0 {
        let _ = writeln!(
            out,
            "future events    {} (more than an hour ahead; taken when due)",
            human::count(r.future_events)
        );
    }
    let _ = writeln!(out, "failing          {}", r.failing.len());
    for f in &r.failing {
        let _ = writeln!(
            out,
            "  {}  {} since {}: {}",
            crate::recentfile::shown_path(&f.path),
            plural(f.attempts, "attempt", "attempts"),
            human::time(f.first.to_f64()),
            f.message
        );
    }
    if !r.quarantined.is_empty() {
        let _ = writeln!(out, "quarantined      {}", r.quarantined.len());
        for q in &r.quarantined {
            let _ = writeln!(out, "  {}  since {}: {}", shortened(&q.path), human::time(q.first.to_f64()), q.message);
        }
    }
    if !r.tampered.is_empty() {
        let _ = writeln!(out, "tampered         {} (not installed; bytes kept in .rrr/quarantine/)", r.tampered.len());
        for t in &r.tampered {
            let _ = writeln!(
                out,
                "  {}  {} since {}: received {}, signed {}{}",
                shortened(&t.path),
                plural(t.attempts, "attempt", "attempts"),
                human::time(t.first.to_f64()),
                t.received,
                t.expected.size.map_or("any size".to_string(), |s| format!("{s} bytes")),
                t.kept.as_deref().map_or(String::new(), |k| format!(" (kept as {k})"))
            );
        }
    }
    if !r.missing_upstream.is_empty() || r.missing_in_grace > 0 {
        let grace = if r.missing_in_grace > 0 {
            format!(" ({} more within the grace, awaiting a delete event)", human::count(r.missing_in_grace as u64))
        } else {
            String::new()
        };
        let _ = writeln!(out, "missing upstream {}{grace}", r.missing_upstream.len());
        for m in &r.missing_upstream {
            let _ = writeln!(
                out,
                "  {}  listed since {}, not at the origin ({})",
                crate::recentfile::shown_path(&m.path),
                human::time(m.first.to_f64()),
                plural(m.attempts, "attempt", "attempts"),
            );
        }
    }
    out
}

/// How long without a heartbeat before `status` says a running record
/// may be a dead run's (heartbeats come every 10 s while rsync runs).
const STALE_RUNNING: f64 = 120.0;

/// The `state` line of plain `status` for a tree that never completed or
/// runs an attempt now: "first attempt running since T (age): fetching
/// the recentfiles of SRC, attempt 2 of 3, last error: …"; `None` for a
/// complete tree between passes.
fn attempt_line(r: &Report, when: &dyn Fn(&Option<String>) -> String) -> Option<String> {
    let never = r.last_complete.is_none();
    let run = r.running.as_ref().filter(|_| r.attempt_running);
    let Some(run) = run else {
        return never.then(|| "never complete".to_string());
    };
    let which = match (run.attempt, never) {
        (1, _) => "first attempt".to_string(),
        (n, true) => format!("attempt {n} (never complete)"),
        (n, false) => format!("attempt {n}"),
    };
    let mut line = format!("{which} running since {}", when(&r.last_attempt));
    let doing = run.call_words();
    if !doing.is_empty() {
        line.push_str(&format!(": {doing}"));
    }
    if let Some(h) = r.heartbeat_age_seconds.filter(|h| *h >= STALE_RUNNING) {
        line.push_str(&format!(
            " (but no heartbeat for {}: the run may have ended without saving)",
            human::duration(h)
        ));
    }
    Some(line)
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
            expect: None,
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
        let started = Epoch::parse("1700000090.5").unwrap();
        let mut stopped = first.clone();
        stopped.record_attempt(&started, Outcome::Interrupted, None, &started);
        let (level, line) = at(&stopped, 1_700_000_200.5);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("first pass interrupted"), "{line}");
        assert_eq!(at(&stopped, 1_700_009_000.5).0, Level::Critical, "an old interruption");
        first.record_attempt(&started, Outcome::Failed, Some("rsync failed with code 5: …\nmore"), &started);
        first.record_attempt(&started, Outcome::Failed, Some("rsync failed with code 5: …\nmore"), &started);
        let (level, line) = at(&first, 1_700_000_200.5);
        assert_eq!(level, Level::Critical);
        assert!(line.contains("never complete; 2 failed attempts in a row: rsync failed with code 5: … |"), "{line}");
        assert!(line.contains("'consecutive_failures /m'=2"), "{line}");
    }

    #[test]
    fn a_running_first_attempt_is_shown_and_judged_by_its_age() {
        let t0 = Epoch::parse("1700000000.5").unwrap();
        let mut st = State::fresh("rsync://h/m/RECENT.recent", &t0);
        st.heartbeat = Some(Epoch::parse("1700000095.5").unwrap());
        st.running = Some(crate::mirror::pass_progress::Running {
            phase: "recentfiles".into(),
            started: Some(t0.clone()),
            attempt: 1,
            attempt_started: Some(t0.clone()),
            call: "fetching the recentfiles of rsync://h/m".into(),
            call_attempt: 2,
            call_attempts: 3,
            last_error: Some("rsync failed with code 10: Connection refused".into()),
            ..Default::default()
        });
        let r = report("/m", &st, 1_700_000_100.5);
        assert_eq!((r.attempts, r.attempt_running, r.attempt_age_seconds), (1, true, Some(100.0)));
        assert_eq!(r.last_attempt.as_deref(), Some("1700000000.5"));
        let text = plain(&r, 1_700_000_100.5);
        let line = "state            first attempt running since 2023-11-14T22:13:20Z (1 min 40 s ago): fetching the \
                    recentfiles of rsync://h/m, attempt 2 of 3, last error: rsync failed with code 10: Connection refused\n";
        assert!(text.contains(line), "{text}");
        assert!(text.contains("last attempt     2023-11-14T22:13:20Z (1 min 40 s ago), running\n"), "{text}");
        let (level, line) = check("/m", Some(&r), 60.0, 3600.0);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("first pass running: recentfiles 0 B received; fetching the recentfiles"), "{line}");
        let (level, line) = check("/m", Some(&r), 60.0, 90.0);
        assert_eq!(level, Level::Critical, "{line}");
        assert!(line.contains("never complete; first attempt running for 1 min 40 s: recentfiles"), "{line}");
        // A record the run never cleared: the heartbeat says it may be dead.
        let text = plain(&report("/m", &st, 1_700_000_400.5), 1_700_000_400.5);
        assert!(text.contains("(but no heartbeat for 5 min 05 s: the run may have ended without saving)"), "{text}");
        // Once the attempt is recorded as finished, it no longer runs.
        st.counters.attempts = 1;
        assert!(!report("/m", &st, 1_700_000_100.5).attempt_running);
    }

    #[test]
    fn an_old_success_held_back_deletes_and_an_owed_pass() {
        let mut st = state();
        let r = |s: &State| check("/m", Some(&report("/m", s, 1_700_000_400.5)), 600.0, 3600.0);
        st.pending_deletes.push(crate::mirror::state::PendingDelete {
            epoch: Epoch::parse("1700000000.5").unwrap(),
            path: "a".into(),
        });
        let (level, line) = r(&st);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("1 pending delete;") && line.contains("1 delete held back (--max-delete)"), "{line}");
        st.pending_deletes.clear();
        st.resync = true;
        assert_eq!(r(&st).0, Level::Warning, "{}", r(&st).1);
        st.resync = false;
        // Complete recently, but the last success is older than --crit.
        st.last_success = Some(Epoch::parse("1699990000.5").unwrap());
        let (level, line) = r(&st);
        assert_eq!(level, Level::Critical, "{line}");
        assert!(line.contains("last success 2 h 53 min ago"), "{line}");
    }

    #[test]
    fn quarantined_and_missing_upstream_paths_warn() {
        let mut st = state();
        let first = Epoch::parse("1700000000.5").unwrap();
        let deep: crate::recentfile::RelPath = format!("{}/deep.txt", "d".repeat(5000)).into();
        st.quarantined.push(Failing {
            path: deep,
            epoch: None,
            message: "filename overflows max-path len by 154".into(),
            first: first.clone(),
            last: first.clone(),
            attempts: 1,
            expect: None,
        });
        let (level, line) = check("/m", Some(&report("/m", &st, 1_700_000_400.5)), 600.0, 3600.0);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("1 quarantined path (e.g. dddd") && line.contains("… (5009 bytes)"), "{line}");
        assert!(line.len() < 600, "a 5 KiB path is cut: {line}");
        st.quarantined.clear();
        // Missing: quiet within the grace (two attempts and 10 minutes), then WARNING.
        st.missing.push(Failing {
            path: "ghost".into(),
            epoch: Some(first.clone()),
            message: String::new(),
            first: first.clone(),
            last: first.clone(),
            attempts: 2,
            expect: None,
        });
        let at = |st: &State, t: f64| check("/m", Some(&report("/m", st, t)), 1e6, 2e6);
        assert_eq!(at(&st, 1_700_000_500.5).0, Level::Ok, "{}", at(&st, 1_700_000_500.5).1);
        let (level, line) = at(&st, 1_700_000_600.5);
        assert_eq!(level, Level::Warning, "{line}");
        assert!(line.contains("1 path missing upstream (e.g. ghost, listed since 2023-11-14T22:13:20Z)"), "{line}");
        st.missing[0].attempts = 1;
        assert_eq!(at(&st, 1_700_009_000.5).0, Level::Ok, "one attempt is not enough");
    }

    #[test]
    fn several_levels_worst_first() {
        let mut by: Vec<Level> = vec![Level::Ok, Level::Unknown, Level::Critical, Level::Warning];
        by.sort_by_key(|l| std::cmp::Reverse(l.severity()));
        assert_eq!(by, [Level::Critical, Level::Warning, Level::Unknown, Level::Ok]);
        assert_eq!(
            (plural(1, "pass", "passes"), plural(2, "pass", "passes"), plural(0, "file", "files")),
            ("1 pass".into(), "2 passes".into(), "0 files".into())
        );
    }

    #[test]
    fn plain_status_is_for_people() {
        let mut st = state();
        st.counters.bytes = 9_669_840;
        st.running = Some(crate::mirror::pass_progress::Running {
            phase: "bootstrap".into(),
            started: Some(Epoch::parse("1700000300.5").unwrap()),
            bytes: 1 << 30,
            percent: 45,
            rate: "12.00MB/s".into(),
            eta: "0:01:02".into(),
            files: 1204,
            listing: false,
            from_rsync: true,
            ..Default::default()
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
        assert!(text.contains(&format!("rrr_mirror_consecutive_failures{l} 0\n")), "{text}");
        let outcome = "{localroot=\"/m\",remote=\"rsync://h/m/RECENT.recent\",outcome=\"failed\"} 0\n";
        assert!(text.contains(&format!("rrr_mirror_last_outcome{outcome}")), "{text}");
        assert!(!text.contains("rrr_mirror_last_error_info{"), "no error, no sample: {text}");
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
