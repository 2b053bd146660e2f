//! The one channel for what rrr tells the operator (ripgrep's messages.rs,
//! cargo's Shell): every warning, notice and summary of the library is a
//! `tracing` event, and [`init`] installs the one subscriber that writes
//! them on stderr, set up once from the global flags (`-v`/`-q`,
//! `RUST_LOG`, `--log-format`).
//!
//! Every line has an RFC 3339 UTC timestamp (the real clock, never
//! `--now`), a level and, for mirror and watch work, the tree: the
//! `rmirror` and `watch` spans carry `localroot`/`remote` and `root`, and
//! every event inside them is shown with them, at every level (`-q`
//! filters events, never the spans that name the tree).
//!
//! Text (the default):
//!
//! ```text
//! 2023-11-14T22:13:20.123Z  INFO rmirror /srv/CPAN/authors: pass: 3 transferred (1.2 MiB), 0 deleted; read 1h; 0.41 s; complete
//! 2023-11-14T22:13:21.002Z  WARN watch /srv/CPAN: cannot index "a\nb": control character
//! ```
//!
//! JSON (`--log-format json`; `watch --json-log`): one object per line,
//! flat, with `kind` (what happened: `pass`, `batch`, …; `warning`,
//! `error` or `message` for plain notices), `time` (the epoch as a string),
//! `timestamp` (RFC 3339), `level`, the span fields (`localroot` and
//! `remote`, or `root`), the event's own fields, and `message` (the text
//! line's words). README.mirror documents each kind.
//!
//! A message of several lines (a failed rsync's command and stderr at
//! `-v`) is written as that many text lines, each with the time, level
//! and tree, so that a line of rsync's never appears without its tree.
//!
//! Under systemd's journal (`JOURNAL_STREAM` names our stderr), each line
//! starts with its syslog priority (`<3>` error, `<4>` warning, `<6>`
//! info, `<7>` debug and trace), which journald takes and strips:
//! `journalctl -p warning` then shows warnings and errors only.
//!
//! A log stream that cannot be written any more (the reader of a pipe went
//! away) sets `closed`: the long-running commands look at it at safe
//! points, save their state and exit 1 so that a supervisor restarts them.

use crate::epoch::Epoch;
use serde_json::{Map, Value};
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Lines for people: time, level, where (spans), message.
    #[default]
    Text,
    /// One JSON object per line (`--log-format json`), for log collectors.
    Json,
}

/// The global flags that shape the log.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings {
    /// `-v` counts up (debug, trace), `-q` down (warnings, errors only).
    pub verbosity: i8,
    /// Text or JSON lines.
    pub format: Format,
}

/// The level `verbosity` selects: info by default.
pub(crate) fn level_of(verbosity: i8) -> Level {
    match verbosity {
        i8::MIN..=-2 => Level::ERROR,
        -1 => Level::WARN,
        0 => Level::INFO,
        1 => Level::DEBUG,
        _ => Level::TRACE,
    }
}

/// Set when a log line could not be written (the stream is closed).
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether the log stream has closed (see the module docs).
pub(crate) fn closed() -> bool {
    CLOSED.load(Ordering::SeqCst)
}

/// Set when stderr is systemd's journal ([`to_journal`]): each line gets
/// its syslog priority.
static JOURNAL: AtomicBool = AtomicBool::new(false);

/// Whether stderr is the journal stream systemd connected: `JOURNAL_STREAM`
/// holds the `device:inode` of that stream, and it must be our stderr
/// (a child whose stderr went elsewhere inherits the variable).
fn to_journal() -> bool {
    use std::os::fd::AsFd;
    let Some(v) = std::env::var_os("JOURNAL_STREAM") else { return false };
    let Some((dev, ino)) = v.to_str().and_then(|v| v.split_once(':')) else { return false };
    let Ok(st) = nix::sys::stat::fstat(std::io::stderr().as_fd()) else { return false };
    dev.parse::<u64>().ok() == Some(st.st_dev) && ino.parse::<u64>().ok() == Some(st.st_ino)
}

/// The syslog priority of a level, as journald reads it from `<N>`.
fn priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// Install the subscriber (once; a second call changes nothing). A
/// non-empty `RUST_LOG` takes precedence over `-v`/`-q`.
pub fn init(s: &Settings) {
    JOURNAL.store(to_journal(), Ordering::SeqCst);
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => EnvFilter::try_new(&v).unwrap_or_else(|e| {
            eprintln!("rrr: ignoring RUST_LOG={v:?}: {e}");
            EnvFilter::new(level_of(s.verbosity).as_str())
        }),
        _ => EnvFilter::new(level_of(s.verbosity).as_str()),
    };
    let sub = tracing_subscriber::registry().with(Lines { format: s.format }.with_filter(SpansAlways(filter)));
    let _ = tracing::subscriber::set_global_default(sub);
}

/// The level filter for events only: every span is kept whatever the
/// level, because a line names its tree from its span (`-q` lines too).
struct SpansAlways(EnvFilter);

impl<S> tracing_subscriber::layer::Filter<S> for SpansAlways
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn enabled(&self, meta: &tracing::Metadata<'_>, cx: &Context<'_, S>) -> bool {
        meta.is_span() || tracing_subscriber::layer::Filter::<S>::enabled(&self.0, meta, cx)
    }

    fn callsite_enabled(&self, meta: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        if meta.is_span() {
            tracing::subscriber::Interest::always()
        } else {
            tracing_subscriber::layer::Filter::<S>::callsite_enabled(&self.0, meta)
        }
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        // Spans of any level must reach the subscriber.
        None
    }

    fn on_new_span(&self, attrs: &tracing::span::Attributes<'_>, id: &tracing::span::Id, cx: Context<'_, S>) {
        tracing_subscriber::layer::Filter::<S>::on_new_span(&self.0, attrs, id, cx);
    }

    fn on_record(&self, id: &tracing::span::Id, values: &tracing::span::Record<'_>, cx: Context<'_, S>) {
        tracing_subscriber::layer::Filter::<S>::on_record(&self.0, id, values, cx);
    }

    fn on_enter(&self, id: &tracing::span::Id, cx: Context<'_, S>) {
        tracing_subscriber::layer::Filter::<S>::on_enter(&self.0, id, cx);
    }

    fn on_exit(&self, id: &tracing::span::Id, cx: Context<'_, S>) {
        tracing_subscriber::layer::Filter::<S>::on_exit(&self.0, id, cx);
    }

    fn on_close(&self, id: tracing::span::Id, cx: Context<'_, S>) {
        tracing_subscriber::layer::Filter::<S>::on_close(&self.0, id, cx);
    }
}

/// An event with structured fields beyond the message (JSON: flattened
/// into the object; text: only `message` shows): `kind` names it.
/// `fields` must be a JSON object.
pub(crate) fn emit(level: Level, kind: &str, fields: &Value, message: &str) {
    let fields = fields.to_string();
    match level {
        Level::ERROR => tracing::error!(kind, fields, "{message}"),
        Level::WARN => tracing::warn!(kind, fields, "{message}"),
        Level::INFO => tracing::info!(kind, fields, "{message}"),
        Level::DEBUG => tracing::debug!(kind, fields, "{message}"),
        _ => tracing::trace!(kind, fields, "{message}"),
    }
}

/// Text whose form another tool dictates (the Perl `rrr-update`'s
/// `Found file:` dump), written as is on the same stream.
pub(crate) fn verbatim(text: &str) {
    write_line(Level::INFO, text);
}

/// The fields of a span or an event, in order.
#[derive(Default)]
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push((field.name().to_string(), Value::String(format!("{value:?}"))));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_string(), Value::String(value.to_string())));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.push((field.name().to_string(), value.into()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name().to_string(), value.into()));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.push((field.name().to_string(), value.into()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.push((field.name().to_string(), value.into()));
    }
}

/// The layer that writes each event as one line on stderr.
struct Lines {
    format: Format,
}

impl<S> Layer<S> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &tracing::span::Attributes<'_>, id: &tracing::span::Id, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(f);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let mut scope: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        if let Some(spans) = ctx.event_scope(event) {
            for span in spans.from_root() {
                let fields = span.extensions().get::<Fields>().map(|f| f.0.clone()).unwrap_or_default();
                scope.push((span.name().to_string(), fields));
            }
        }
        let now = crate::sys::clock::Clock::system().now_f64();
        let level = *event.metadata().level();
        let text = match self.format {
            Format::Text => text_line(now, level, &scope, &f),
            Format::Json => json_line(now, level, &scope, &f).to_string(),
        };
        write_line(level, &text);
    }
}

/// Write `text` on stderr (around a progress bar), each of its lines with
/// the journal's priority prefix when stderr is the journal; or note the
/// stream closed.
fn write_line(level: Level, text: &str) {
    let prefix = if JOURNAL.load(Ordering::SeqCst) { format!("<{}>", priority(level)) } else { String::new() };
    let mut bytes = Vec::with_capacity(text.len() + 8);
    for line in text.split('\n') {
        bytes.extend_from_slice(prefix.as_bytes());
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    crate::output::progress::suspend(|| {
        let mut err = std::io::stderr().lock();
        let ok = err.write_all(&bytes).and_then(|()| err.flush());
        if ok.is_err() {
            CLOSED.store(true, Ordering::SeqCst);
        }
    });
}

/// The words of a field value (strings without their quotes).
fn words(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// `2023-11-14T22:13:20.123Z  WARN rmirror /srv/a: message`: the span
/// names and field values, innermost last, or `rrr` outside any span. A
/// message of several lines gives as many lines, each with that head.
fn text_line(now: f64, level: Level, scope: &[(String, Vec<(String, Value)>)], f: &Fields) -> String {
    let mut who: Vec<String> = Vec::new();
    for (name, fields) in scope {
        who.push(name.clone());
        // The tree is what tells two lines apart; the remote is in the JSON.
        who.extend(fields.iter().filter(|(k, _)| k != "remote").map(|(_, v)| words(v)));
    }
    let who = if who.is_empty() { "rrr".to_string() } else { who.join(" ") };
    let msg = f.get("message").map(words).unwrap_or_default();
    let kind = f.get("kind").map(words).filter(|k| !matches!(k.as_str(), "message" | "warning" | "error"));
    let msg = match kind {
        Some(k) if !msg.starts_with(&k) => format!("{k}: {msg}"),
        _ => msg,
    };
    let head = format!("{} {:>5} {who}:", crate::output::human::time_millis(now), level.as_str());
    let lines: Vec<String> = msg.trim_end_matches('\n').split('\n').map(|l| format!("{head} {l}")).collect();
    lines.join("\n")
}

/// The flat JSON object of one event (module docs).
fn json_line(now: f64, level: Level, scope: &[(String, Vec<(String, Value)>)], f: &Fields) -> Value {
    let default_kind = match level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        _ => "message",
    };
    let mut o = Map::new();
    o.insert("kind".into(), f.get("kind").cloned().unwrap_or_else(|| default_kind.into()));
    o.insert("time".into(), Epoch::from_clock(now).as_str().into());
    o.insert("timestamp".into(), crate::output::human::time_millis(now).into());
    o.insert("level".into(), level.as_str().to_ascii_lowercase().into());
    for (_, fields) in scope {
        for (k, v) in fields {
            o.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in &f.0 {
        match k.as_str() {
            "kind" | "message" => {}
            "fields" => {
                if let Some(Value::Object(extra)) = v.as_str().and_then(|s| serde_json::from_str(s).ok()) {
                    o.extend(extra);
                }
            }
            _ => {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(m) = f.get("message") {
        o.insert("message".into(), m.clone());
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: &[(&str, Value)]) -> Fields {
        Fields(v.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    #[test]
    fn text_lines_name_time_level_and_tree() {
        let scope = vec![(
            "rmirror".to_string(),
            vec![("localroot".to_string(), json!("/srv/a")), ("remote".to_string(), json!("h::m/RECENT.recent"))],
        )];
        let f = fields(&[("kind", json!("pass")), ("message", json!("3 transferred"))]);
        assert_eq!(
            text_line(1_700_000_000.5, Level::INFO, &scope, &f),
            "2023-11-14T22:13:20.500Z  INFO rmirror /srv/a: pass: 3 transferred"
        );
        let f = fields(&[("message", json!("cannot read x"))]);
        assert_eq!(
            text_line(1_700_000_000.0, Level::ERROR, &[], &f),
            "2023-11-14T22:13:20.000Z ERROR rrr: cannot read x"
        );
    }

    #[test]
    fn every_line_of_a_message_names_its_tree() {
        let scope = vec![("rmirror".to_string(), vec![("localroot".to_string(), json!("/srv/a"))])];
        let f = fields(&[("message", json!("fetching: rsync -lt …\nrsync: [sender] change_dir \"x\" failed"))]);
        assert_eq!(
            text_line(1_700_000_000.5, Level::DEBUG, &scope, &f),
            "2023-11-14T22:13:20.500Z DEBUG rmirror /srv/a: fetching: rsync -lt …\n\
             2023-11-14T22:13:20.500Z DEBUG rmirror /srv/a: rsync: [sender] change_dir \"x\" failed"
        );
        assert_eq!([Level::ERROR, Level::WARN, Level::INFO, Level::DEBUG, Level::TRACE].map(priority), [3, 4, 6, 7, 7]);
    }

    #[test]
    fn json_objects_are_flat() {
        let scope = vec![("watch".to_string(), vec![("root".to_string(), json!("/srv/CPAN"))])];
        let f = fields(&[
            ("kind", json!("aggregate")),
            ("fields", json!(r#"{"written":["6h","1h"],"merges":2}"#)),
            ("message", json!("2 merges")),
        ]);
        let o = json_line(1_700_000_000.25, Level::INFO, &scope, &f);
        assert_eq!(
            o,
            json!({"kind": "aggregate", "time": "1700000000.25", "timestamp": "2023-11-14T22:13:20.250Z",
                   "level": "info", "root": "/srv/CPAN", "written": ["6h", "1h"], "merges": 2, "message": "2 merges"})
        );
        let w = json_line(1_700_000_000.0, Level::WARN, &[], &fields(&[("message", json!("m"))]));
        assert_eq!((w["kind"].as_str(), w["level"].as_str()), (Some("warning"), Some("warn")));
    }

    #[test]
    fn levels() {
        assert_eq!(level_of(0), Level::INFO);
        assert_eq!(level_of(-1), Level::WARN);
        assert_eq!(level_of(-5), Level::ERROR);
        assert_eq!(level_of(1), Level::DEBUG);
        assert_eq!(level_of(3), Level::TRACE);
    }
}
