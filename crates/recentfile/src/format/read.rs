//! From bytes to a validated [`Recentfile`]: format dispatch, raw text
//! fields, and the checks every recentfile from upstream must pass.
//!
//! Both serializers first produce a [`RawDoc`] of exact texts; the checks
//! (decimal epochs, strictly decreasing unique list, known types, sane
//! paths, size limits) live here once. Errors carry the line where the
//! reader knows it; callers add the file name ([`ReadError::in_file`]).

use super::{Event, EventKind, Format, Merged, Meta, MinMax, Recentfile, RelPath, Skipped};
use crate::beacon::Sha256Hex;
use crate::epoch::Epoch;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Longest event path: a longer one is skipped (see [`validate`]).
pub const MAX_PATH_BYTES: usize = 4096;

/// Largest recentfile rrr will read (a 1M-event Z file is about 100 MB).
pub const MAX_FILE_BYTES: u64 = 2 << 30;

/// A recentfile that cannot be read, with where and what. An I/O failure
/// keeps its [`std::io::Error`] as the [`source`](std::error::Error::source)
/// (shared, so that the error stays `Clone`), so its kind is not lost.
#[derive(Debug, Clone)]
pub struct ReadError {
    /// The file, once the caller has named it ([`ReadError::in_file`]).
    pub file: Option<PathBuf>,
    /// The 1-based line, where the reader knows it (YAML).
    pub line: Option<usize>,
    /// What is wrong (empty for an I/O failure: its source says it).
    pub message: String,
    io: Option<Arc<std::io::Error>>,
}

impl ReadError {
    pub(crate) fn at(line: usize, message: String) -> ReadError {
        ReadError { file: None, line: Some(line), message, io: None }
    }
    /// A failure without a line (a limit, a JSON error, an I/O step).
    pub fn general(message: String) -> ReadError {
        ReadError { file: None, line: None, message, io: None }
    }
    /// Reading failed at the I/O level (`message` empty: the source says it).
    pub fn io(e: std::io::Error) -> ReadError {
        ReadError { file: None, line: None, message: String::new(), io: Some(Arc::new(e)) }
    }
    /// The same error, naming the file it concerns.
    pub fn in_file(mut self, file: &Path) -> ReadError {
        self.file = Some(file.to_path_buf());
        self
    }
    /// The I/O error's kind, when reading failed at the I/O level.
    pub(crate) fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io.as_ref().map(|e| e.kind())
    }
}

/// Equal when they say the same (the I/O source compared by kind).
impl PartialEq for ReadError {
    fn eq(&self, other: &ReadError) -> bool {
        (&self.file, self.line, &self.message, self.io_kind())
            == (&other.file, other.line, &other.message, other.io_kind())
    }
}

impl Eq for ReadError {}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot read recentfile")?;
        if let Some(file) = &self.file {
            write!(f, " {}", file.display())?;
        }
        if let Some(line) = self.line {
            write!(f, ": line {line}")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A scalar kept as its exact source text (numbers included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scalar")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
        Ok(Text(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
        Ok(Text(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
        Ok(Text(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
        Ok(Text(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
        Ok(Text(v.to_string()))
    }
}

/// A mapping of scalars (or nulls) in source order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TextMap(pub Vec<(String, Option<String>)>);

impl<'de> Deserialize<'de> for TextMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TextMap, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of scalars")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextMap, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Text>()? {
                    let v: Option<Text> = map.next_value()?;
                    out.push((k.0, v.map(|t| t.0)));
                }
                Ok(TextMap(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl TextMap {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.as_deref())
    }
}

/// `meta` as read, every value its exact text.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RawMeta {
    #[serde(rename = "Producers")]
    pub producers: Option<TextMap>,
    pub aggregator: Option<Vec<Text>>,
    pub canonize: Option<Text>,
    pub comment: Option<Text>,
    pub dirtymark: Option<Text>,
    pub filenameroot: Option<Text>,
    pub interval: Option<Text>,
    pub merged: Option<TextMap>,
    pub minmax: Option<TextMap>,
    pub protocol: Option<Text>,
    pub serializer_suffix: Option<Text>,
    #[serde(rename = "Hash")]
    pub hash: Option<Text>,
}

/// One event as read.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawEvent {
    pub line: Option<usize>,
    pub epoch: Option<String>,
    pub path: Option<String>,
    pub kind: Option<String>,
    /// The `sha256` value's text, unchecked.
    pub sha256: Option<String>,
    /// The `size` value's text, unchecked.
    pub size: Option<String>,
    /// Why the event could not be read, when only its epoch could: it is
    /// skipped, not fatal (see [`validate`]).
    pub problem: Option<String>,
}

/// Starts a decoded path whose bytes are not UTF-8, followed by the hex of
/// all its bytes: the readers decode scalars into text, and this carries a
/// byte string through them losslessly ([`path_of_decoded`] turns it back).
/// No real path starts with it (NUL is never part of a name).
pub(crate) const NOT_UTF8: &str = "\0\0";

/// The decoded text that stands for the path `bytes` (itself when UTF-8).
pub(crate) fn not_utf8_path(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => format!("{NOT_UTF8}{}", crate::path::hex(bytes)),
    }
}

/// The path a decoded scalar stands for (see [`NOT_UTF8`]).
pub(crate) fn path_of_decoded(text: String) -> RelPath {
    match text.strip_prefix(NOT_UTF8).and_then(crate::path::unhex) {
        Some(bytes) => RelPath::from(bytes),
        None => RelPath::from(text),
    }
}

/// A document before validation. `meta: None` is protocol 0 (a bare list).
#[derive(Debug, Clone, Default)]
pub struct RawDoc {
    pub(crate) meta: Option<RawMeta>,
    pub(crate) events: Vec<RawEvent>,
}

/// What `overview` needs of a recentfile: its meta, the number of events
/// and the newest and oldest epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outline {
    /// The whole `meta` mapping.
    pub meta: Meta,
    /// How many events `recent` lists.
    pub count: usize,
    /// The first event's epoch.
    pub newest: Option<Epoch>,
    /// The last event's epoch.
    pub oldest: Option<Epoch>,
}

impl Outline {
    /// The outline of a file read in full.
    pub fn of(rf: &Recentfile) -> Outline {
        Outline {
            meta: rf.meta.clone(),
            count: rf.events.len(),
            newest: rf.newest().map(|e| e.epoch.clone()),
            oldest: rf.oldest().map(|e| e.epoch.clone()),
        }
    }
}

/// Parse and validate a recentfile's bytes.
///
/// The bytes are hostile until this returns: epochs must be decimal and
/// strictly decreasing (protocol.md 7.4), paths at most 4096 bytes
/// (protocol.md 14; the other path rules are the mirror's), the size
/// within [`MAX_FILE_BYTES`]. An event that cannot be used (an
/// unknown type, no path or type, a path that is too long,
/// an item no YAML reader takes) is skipped, not fatal, and listed in
/// [`Recentfile::skipped`] (protocol.md 4.2); an event without a readable epoch
/// breaks the list and so the file. A bare
/// list is read as protocol 0. Errors carry the line where known; add the
/// file name with [`ReadError::in_file`].
///
/// ```
/// use recentfile::{parse_bytes, EventKind, Format};
///
/// let json = br#"{"meta":{"interval":"6h","protocol":1},"recent":[
///   {"epoch":"1700000400.5","path":"id/A/AB/ABC/X-1.tar.gz","type":"new"},
///   {"epoch":"1700000300","path":"id/A/AB/ABC/X-0.tar.gz","type":"brandnew"}]}"#;
/// let rf = parse_bytes(json, Format::Json)?;
/// assert_eq!(rf.meta.interval.as_deref(), Some("6h"));
/// assert_eq!(rf.events.len(), 1);
/// assert_eq!(rf.events[0].kind, EventKind::New);
/// assert_eq!(rf.skipped[0].path, "id/A/AB/ABC/X-0.tar.gz");
///
/// // Epochs out of order: the whole file is refused, saying why.
/// let yaml = b"---\nrecent:\n  - epoch: 1\n    path: a\n    type: new\n  - epoch: 2\n    path: b\n    type: new\n";
/// let err = parse_bytes(yaml, Format::Yaml).unwrap_err();
/// assert!(err.to_string().contains("strictly decreasing"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_bytes(bytes: &[u8], format: Format) -> Result<Recentfile, ReadError> {
    check_size(bytes.len() as u64)?;
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(e) if format == Format::Yaml => std::borrow::Cow::Owned(mark_non_utf8_paths(bytes, e)?),
        Err(e) => {
            let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(ReadError::at(line, "not valid UTF-8".into()));
        }
    };
    if format == Format::Yaml {
        if let Some(rf) = super::yaml::parse_syck(&text) {
            return Ok(rf);
        }
    }
    let raw = match format {
        Format::Yaml => super::yaml::parse(&text)?,
        Format::Json => super::json::parse(&text)?,
    };
    validate(raw)
}

/// Refuses a file over [`MAX_FILE_BYTES`] before anything reads it (a
/// function of the length alone, so that its bound can be tested without
/// a 2 GiB file).
pub(super) fn check_size(len: u64) -> Result<(), ReadError> {
    if len > MAX_FILE_BYTES {
        return Err(ReadError::general(format!("file is {len} bytes (limit {MAX_FILE_BYTES})")));
    }
    Ok(())
}

/// The text of a YAML file that is not UTF-8 throughout, where every
/// event `path:` line that is not UTF-8 has become a double-quoted
/// [`NOT_UTF8`] carrier of the bytes YAML::Syck loads from it: a Perl
/// origin writes a file name's bytes as they are. Any other line that is
/// not UTF-8 is an error.
fn mark_non_utf8_paths(bytes: &[u8], first: std::str::Utf8Error) -> Result<String, ReadError> {
    let mut out = String::with_capacity(bytes.len() + 64);
    // Lines before the first bad one are UTF-8.
    let start = bytes[..first.valid_up_to()].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    out.push_str(std::str::from_utf8(&bytes[..start]).expect("valid up to here"));
    let mut line_no = bytes[..start].iter().filter(|&&b| b == b'\n').count();
    for line in bytes[start..].split_inclusive(|&b| b == b'\n') {
        line_no += 1;
        if let Ok(l) = std::str::from_utf8(line) {
            out.push_str(l);
            continue;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let indent = body.iter().position(|&b| b != b' ' && b != b'-').unwrap_or(body.len());
        let (lead, rest) = body.split_at(indent);
        let Some(value) = rest.strip_prefix(b"path: ") else {
            return Err(ReadError::at(line_no, "not valid UTF-8 (only an event's path may be)".into()));
        };
        let Some(decoded) = super::yaml::scalar_bytes(value) else {
            return Err(ReadError::at(line_no, "a path that is not UTF-8 and no YAML scalar".into()));
        };
        out.push_str(std::str::from_utf8(lead).expect("ASCII"));
        out.push_str("path: \"");
        // The carrier is ASCII but for its NULs, which are escaped.
        out.push_str(&not_utf8_path(&decoded).replace('\0', "\\x00"));
        out.push_str("\"\n");
    }
    if !bytes.ends_with(b"\n") {
        out.pop();
    }
    Ok(out)
}

fn where_(ev: &RawEvent, index: usize) -> ReadError {
    match ev.line {
        Some(l) => ReadError::at(l, String::new()),
        None => ReadError::general(format!("event #{}: ", index + 1)),
    }
}

fn err_at(ev: &RawEvent, index: usize, msg: String) -> ReadError {
    let mut e = where_(ev, index);
    e.message.push_str(&msg);
    e
}

fn epoch_field(value: Option<String>, what: &str) -> Result<Option<Epoch>, ReadError> {
    value.map(|v| Epoch::read(&v).map_err(|e| ReadError::general(format!("meta {what}: {e}")))).transpose()
}

/// A meta value that is a time but not an epoch the protocol uses
/// (`Producers.time`, `merged.time`, `minmax.mtime`): in the exponent form
/// of a float64 writer (`1.79624749105427e+09`, protocol.md 7.1) it is
/// kept as its exact decimal, as epochs are, so that overview shows one
/// notation; anything else exactly as read.
fn time_text(value: String) -> String {
    // A decimal reads as itself; what is no number stays as it was.
    match Epoch::read(&value) {
        Ok(e) => e.into_string(),
        Err(_) => value,
    }
}

/// Turn raw text into the model, refusing what must not be trusted.
pub fn validate(raw: RawDoc) -> Result<Recentfile, ReadError> {
    let mut rf = Recentfile::default();
    if let Some(m) = raw.meta {
        rf.meta = meta_from_raw(m)?;
    }
    rf.events.reserve(raw.events.len());
    for (i, ev) in raw.events.into_iter().enumerate() {
        // Without a readable epoch an event cannot be ordered or marked
        // done: that breaks the list, not one event.
        let Some(epoch) = ev.epoch.as_deref() else {
            return Err(err_at(&ev, i, "event has no epoch".into()));
        };
        let epoch = Epoch::read(epoch).map_err(|e| err_at(&ev, i, format!("{e}")))?;
        // Anything else wrong is one hostile or unreadable event, not a
        // broken file: skipped with why (a mirror refuses it, news leaves
        // it out), so the rest of the file is still mirrored.
        let (path, kind) = match event_parts(&ev) {
            Ok(parts) => parts,
            Err((path, reason, keep)) => {
                let (line, epoch) = (ev.line, epoch.into_string());
                rf.skipped.push(Skipped { line, epoch, path, reason, keep_on_rewrite: keep });
                continue;
            }
        };
        if let Some(prev) = rf.events.last() {
            if epoch >= prev.epoch {
                let what = if epoch == prev.epoch { "duplicates" } else { "is newer than" };
                return Err(err_at(
                    &ev,
                    i,
                    format!(
                        "epoch {} {what} the previous event's {} (the list must be strictly decreasing)",
                        epoch, prev.epoch
                    ),
                ));
            }
        }
        let (size, sha256) = event_digest(&ev, kind).map_err(|msg| err_at(&ev, i, msg))?;
        rf.events.push(Event { epoch, path, kind, size, sha256 });
    }
    Ok(rf)
}

/// An event's `size` and `sha256` (protocol.md 4.2), checked as hostile
/// input: a size is a decimal without sign or leading zero that fits a
/// u64, a sha256 64 lowercase hex digits, and only a `new` event has
/// them. Anything else is an error of the file (a recorded hash that
/// cannot be read must not pass for an event without one).
pub(crate) fn event_digest(ev: &RawEvent, kind: EventKind) -> Result<(Option<u64>, Option<Sha256Hex>), String> {
    if ev.size.is_none() && ev.sha256.is_none() {
        return Ok((None, None));
    }
    if kind != EventKind::New {
        return Err(format!("a {kind} event with size or sha256 (only new events have them)"));
    }
    let size = ev.size.as_deref().map(parse_size).transpose()?;
    let sha256 = ev.sha256.as_deref().map(|s| Sha256Hex::parse(s).map_err(|e| format!("sha256: {e}"))).transpose()?;
    Ok((size, sha256))
}

/// An event's `size` text: a decimal without sign or leading zero that fits a u64.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    match canonical.then(|| s.parse::<u64>().ok()).flatten() {
        Some(n) => Ok(n),
        None => {
            let shown: String = s.chars().take(40).collect();
            Err(format!("size {shown:?} is not a byte count (a decimal integer from 0 to {})", u64::MAX))
        }
    }
}

/// The path and type of an event whose epoch was read, or (the path as
/// far as it is known, why the event is skipped, whether a rewrite must
/// keep it: [`Skipped::keep_on_rewrite`]).
fn event_parts(ev: &RawEvent) -> Result<(RelPath, EventKind), (RelPath, String, bool)> {
    let path = ev.path.clone().map(path_of_decoded).unwrap_or_default();
    let shown = || path.clone();
    if let Some(problem) = &ev.problem {
        let path = shown();
        return Err((path, problem.clone(), true));
    }
    if ev.path.is_none() {
        // YAML::Syck loads a path of "\r" as undef, and Perl writes it back as `~`.
        return Err((RelPath::default(), "the event has no path (`path: ~` or none)".into(), false));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err((shown(), format!("path is {} bytes long (limit {MAX_PATH_BYTES})", path.len()), false));
    }
    let Some(kind) = ev.kind.as_deref() else {
        return Err((shown(), "the event has no type".into(), true));
    };
    match EventKind::parse(kind) {
        Some(kind) => Ok((path, kind)),
        None => Err((shown(), format!("unknown event type {kind:?}"), false)),
    }
}

pub(crate) fn meta_from_raw(m: RawMeta) -> Result<Meta, ReadError> {
    let t = |x: Option<Text>| x.map(|t| t.0);
    let merged = match m.merged {
        None => Merged::Absent,
        Some(map) if map.0.is_empty() => Merged::Reset,
        Some(map) => Merged::Into {
            epoch: epoch_field(map.get("epoch").map(str::to_string), "merged.epoch")?,
            into_interval: map.get("into_interval").map(str::to_string),
            time: map.get("time").map(|t| time_text(t.to_string())),
        },
    };
    let minmax = match m.minmax {
        None => None,
        Some(map) => Some(MinMax {
            max: epoch_field(map.get("max").map(str::to_string), "minmax.max")?,
            min: epoch_field(map.get("min").map(str::to_string), "minmax.min")?,
            mtime: map.get("mtime").map(|t| time_text(t.to_string())),
        }),
    };
    Ok(Meta {
        producers: m
            .producers
            .map(|p| {
                let entry = |(k, v): (String, Option<String>)| {
                    let v = v.unwrap_or_default();
                    let v = if k == "time" { time_text(v) } else { v };
                    (k, v)
                };
                p.0.into_iter().map(entry).collect()
            })
            .unwrap_or_default(),
        aggregator: m.aggregator.unwrap_or_default().into_iter().map(|t| t.0).collect(),
        canonize: t(m.canonize),
        comment: t(m.comment),
        dirtymark: epoch_field(t(m.dirtymark), "dirtymark")?,
        filenameroot: t(m.filenameroot),
        interval: t(m.interval),
        merged,
        minmax,
        protocol: t(m.protocol),
        serializer_suffix: t(m.serializer_suffix),
        hash: t(m.hash),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] = b"--- \nmeta: \n  dirtymark: '1700000000.5'\n  interval: 1h\n  protocol: 1\nrecent: \n";

    fn item(epoch: &str, path: &[u8], kind: &str) -> Vec<u8> {
        [b"  - \n    epoch: '", epoch.as_bytes(), b"'\n    path: ", path, b"\n    type: ", kind.as_bytes(), b"\n"]
            .concat()
    }

    /// A file whose middle event is `bad`, between two good ones.
    fn around(bad: &[u8]) -> Vec<u8> {
        [HEAD, &item("1700000003.5", b"ok/one", "new"), bad, &item("1700000001.5", b"ok/two", "delete")].concat()
    }

    /// Each kind of unreadable event is one skipped event (with its line
    /// and why); the events around it are read.
    #[test]
    fn an_unreadable_event_is_one_skipped_event() {
        for (bad, reason) in [
            (item("1700000002.5", b"~", "new"), "no path"),
            (item("1700000002.5", b"", "new"), "no path"),
            (item("1700000002.5", b"\"unterminated", "new"), "cannot be read"),
            (item("1700000002.5", b"[a, {b", "new"), "cannot be read"),
            (item("1700000002.5", b"{a: b}", "new"), "cannot be read"),
            (item("1700000002.5", b"a: b", "new"), "cannot be read"),
            (item("1700000002.5", b"x/y", "brandnew"), "unknown event type \"brandnew\""),
            (item("1700000002.5", b"x/y", "~"), "no type"),
            (b"  - \n    epoch: '1700000002.5'\n    path: x/y\n".to_vec(), "no type"),
        ] {
            let shown = String::from_utf8_lossy(&bad).into_owned();
            let rf = parse_bytes(&around(&bad), Format::Yaml).unwrap_or_else(|e| panic!("{shown:?}: {e}"));
            let paths: Vec<&crate::RelPath> = rf.events.iter().map(|e| &e.path).collect();
            assert_eq!(paths, ["ok/one", "ok/two"], "{shown:?}");
            assert_eq!(rf.skipped.len(), 1, "{shown:?}");
            let s = &rf.skipped[0];
            assert_eq!((s.line, s.epoch.as_str()), (Some(11), "1700000002.5"), "{shown:?}");
            assert!(s.reason.contains(reason), "{shown:?}: {s:?}");
            assert!(!s.path.contains(b"\0"), "{s:?}");
        }
    }

    #[test]
    fn a_name_that_is_not_utf8_is_read_as_its_bytes() {
        // `\xE9` alone is not UTF-8; read as Latin-1 it would be `é`, a
        // different file that may exist. YAML::Syck loads these bytes.
        for (path, bytes) in [
            (&b"\"caf\\xE9\""[..], &b"caf\xe9"[..]),
            (b"caf\xe9", b"caf\xe9"),
            (b"'caf\xe9'", b"caf\xe9"),
            (b"\"caf\\xE9\\tx\"", b"caf\xe9\tx"),
            (b"'caf\xe9 x'", b"caf\xe9 x"),
            (b"'it''s \xff'", b"it's \xff"),
            (b"\xff\xc3\xa9/\xe2\x82", b"\xff\xc3\xa9/\xe2\x82"),
            (b"f\xff\r", b"f\xff\r"),
        ] {
            let rf = parse_bytes(&around(&item("1700000002.5", path, "new")), Format::Yaml).unwrap();
            let paths: Vec<&[u8]> = rf.events.iter().map(|e| e.path.as_bytes()).collect();
            assert_eq!(paths, [&b"ok/one"[..], bytes, b"ok/two"], "{}", String::from_utf8_lossy(path));
            assert!(rf.skipped.is_empty(), "{rf:?}");
        }
        // A non-UTF-8 line that is not a path still breaks the file.
        let bad_meta = [&HEAD[..12], b"  comment: caf\xe9\n", &HEAD[12..], &item("1700000003.5", b"a", "new")].concat();
        let err = parse_bytes(&bad_meta, Format::Yaml).unwrap_err();
        assert!(err.to_string().contains("line 3: not valid UTF-8"), "{err}");
    }

    #[test]
    fn a_broken_structure_still_refuses_the_file() {
        for (bad, says) in [
            (item("17000x", b"x", "new"), "line 11"),
            (b"  - \n    path: x/y\n    type: new\n".to_vec(), "no epoch"),
            (item("1700000009.5", b"x", "new"), "strictly decreasing"),
            (b"  - \n    epoch: [1\n    path: x/y\n    type: new\n".to_vec(), "not a valid recentfile"),
            (b"oops: 1\n".to_vec(), "not a valid recentfile"),
        ] {
            let err = parse_bytes(&around(&bad), Format::Yaml).unwrap_err();
            assert!(err.to_string().contains(says), "{}: {err}", String::from_utf8_lossy(&bad));
        }
    }

    /// Items are read one by one only where the whole document fails: an
    /// alias to another item's anchor is still read.
    #[test]
    fn a_valid_document_is_read_whole() {
        let doc = [
            HEAD,
            b"  - epoch: '3.5'\n    path: &p a/x\n    type: new\n  - epoch: '2.5'\n    path: *p\n    type: delete\n",
        ]
        .concat();
        let rf = parse_bytes(&doc, Format::Yaml).unwrap();
        let paths: Vec<&crate::RelPath> = rf.events.iter().map(|e| &e.path).collect();
        assert_eq!(paths, ["a/x", "a/x"]);
        assert_eq!(rf.skipped.len(), 0);
        // With a broken item beside them, the others are still read.
        let broken = [&doc[..], b"  - \n    epoch: '1.5'\n    path: [x\n    type: new\n"].concat();
        let rf = parse_bytes(&broken, Format::Yaml).unwrap();
        assert_eq!((rf.events.len(), rf.skipped.len()), (1, 2), "{rf:?}");
    }

    /// Epochs in the exponent form of a float64 writer (rrrgo) are read
    /// as their exact decimal, in events and in every meta epoch, and the
    /// meta times that are no epochs too; the list is ordered by value.
    #[test]
    fn exponent_epochs_read_as_their_decimal_everywhere() {
        let json = br#"{"meta":{"dirtymark":1.79624749105424e+09,"merged":{"epoch":"1.79624749105424E+09","time":1.79624749105427e+09},"minmax":{"max":1.7962474918942301e+09,"min":1.79624749e+09,"mtime":1.796247491e+09},"Producers":{"time":1.79624749105427e+09,"$0":"x"}},"recent":[{"epoch":1.7962474918942301e+09,"path":"a","type":"new"},{"epoch":1796247491.05424,"path":"b","type":"new"},{"epoch":1.79624749e+09,"path":"c","type":"new"}]}"#;
        let yaml = b"---\nmeta:\n  dirtymark: 1.79624749105424e+09\n  merged:\n    epoch: '1.79624749105424E+09'\n    time: 1.79624749105427e+09\n  minmax:\n    max: 1.7962474918942301e+09\n    min: 1.79624749e+09\n    mtime: 1.796247491e+09\n  Producers:\n    time: 1.79624749105427e+09\n    $0: x\nrecent:\n  - epoch: 1.7962474918942301e+09\n    path: a\n    type: new\n  - epoch: '1796247491.05424'\n    path: b\n    type: new\n  - epoch: 1.79624749e+09\n    path: c\n    type: new\n";
        for (bytes, format) in [(&json[..], Format::Json), (&yaml[..], Format::Yaml)] {
            let rf = parse_bytes(bytes, format).unwrap_or_else(|e| panic!("{format:?}: {e}"));
            let epochs: Vec<&str> = rf.events.iter().map(|e| e.epoch.as_str()).collect();
            assert_eq!(epochs, ["1796247491.8942301", "1796247491.05424", "1796247490"], "{format:?}");
            let m = &rf.meta;
            assert_eq!(m.dirtymark.as_ref().map(Epoch::as_str), Some("1796247491.05424"), "{format:?}");
            assert_eq!(m.merged.epoch().map(Epoch::as_str), Some("1796247491.05424"), "{format:?}");
            let Merged::Into { time, .. } = &m.merged else { panic!("{format:?}: {:?}", m.merged) };
            assert_eq!(time.as_deref(), Some("1796247491.05427"), "{format:?}");
            let mm = m.minmax.as_ref().unwrap();
            assert_eq!(mm.max.as_ref().map(Epoch::as_str), Some("1796247491.8942301"), "{format:?}");
            assert_eq!(mm.min.as_ref().map(Epoch::as_str), Some("1796247490"), "{format:?}");
            assert_eq!(mm.mtime.as_deref(), Some("1796247491"), "{format:?}");
            assert_eq!(m.produced(), Some("1796247491.05427"), "{format:?}");
            assert_eq!(m.producers[1], ("$0".to_string(), "x".to_string()), "{format:?}");
        }
        // More digits than a double holds: exact, never through a float.
        let yaml = b"---\nmeta:\n  dirtymark: 1.79624749105424123456e+09\nrecent:\n  - epoch: 1.79624749105424123456e+09\n    path: a\n    type: new\n";
        let rf = parse_bytes(yaml, Format::Yaml).unwrap();
        assert_eq!(rf.meta.dirtymark.as_ref().map(Epoch::as_str), Some("1796247491.05424123456"));
        assert_eq!(rf.events[0].epoch.as_str(), "1796247491.05424123456");
        // A time that is no number, or a decimal, stays exactly as written.
        for time in ["soon", "1e", "0123", "1223270942.18846", "1700000000"] {
            let json =
                format!(r#"{{"meta":{{"Producers":{{"time":"{time}"}},"merged":{{"time":"{time}"}}}},"recent":[]}}"#);
            let rf = parse_bytes(json.as_bytes(), Format::Json).unwrap();
            assert_eq!(rf.meta.produced(), Some(time));
            assert!(matches!(&rf.meta.merged, Merged::Into { time: Some(t), .. } if t == time), "{time}");
        }
        // One value, one epoch: the exponent form of a listed epoch is a duplicate.
        let dup = br#"{"recent":[{"epoch":"1796247491.5","path":"a","type":"new"},{"epoch":1.7962474915e+09,"path":"b","type":"new"}]}"#;
        let err = parse_bytes(dup, Format::Json).unwrap_err().to_string();
        assert!(err.contains("duplicates"), "{err}");
        // A hostile exponent is one clear error.
        let bomb = br#"{"recent":[{"epoch":"1e999999999","path":"a","type":"new"}]}"#;
        let err = parse_bytes(bomb, Format::Json).unwrap_err().to_string();
        assert!(err.contains("out of range: exponent 999999999"), "{err}");
        let bomb = br#"{"meta":{"dirtymark":"1e99999"},"recent":[]}"#;
        let err = parse_bytes(bomb, Format::Json).unwrap_err().to_string();
        assert!(err.contains("meta dirtymark: epoch \"1e99999\" is out of range"), "{err}");
    }

    #[test]
    fn json_events_without_a_path_or_type_are_skipped() {
        let json = br#"{"meta":{"interval":"1h"},"recent":[{"epoch":"3.5","path":"a","type":"new"},{"epoch":"2.5","path":null,"type":"new"},{"epoch":"1.5","path":{"x":1},"type":"new"},{"epoch":"1.2","path":"b"},{"epoch":"1.1","path":"c","type":"delete"}]}"#;
        let rf = parse_bytes(json, Format::Json).unwrap();
        let paths: Vec<&crate::RelPath> = rf.events.iter().map(|e| &e.path).collect();
        assert_eq!(paths, ["a", "c"]);
        let why: Vec<&str> = rf.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(
            why,
            ["the event has no path (`path: ~` or none)"; 2]
                .iter()
                .copied()
                .chain(["the event has no type"])
                .collect::<Vec<_>>()
        );
    }
}
