//! From bytes to a validated [`Recentfile`]: format dispatch, raw text
//! fields, and the checks every recentfile from upstream must pass.
//!
//! Both serializers first produce a [`RawDoc`] of exact texts; the checks
//! (decimal epochs, strictly decreasing unique list, known types, sane
//! paths, size limits) live here once. Errors carry the line where the
//! reader knows it; callers add the file name ([`ReadError::in_file`]).

use super::{Event, EventKind, Format, Merged, Meta, MinMax, Recentfile, Skipped};
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
}

/// One event as read.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawEvent {
    pub line: Option<usize>,
    pub epoch: Option<String>,
    pub path: Option<String>,
    pub kind: Option<String>,
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
/// strictly decreasing (spec 7.4), paths relative and sane (spec 14), the
/// size within [`MAX_FILE_BYTES`]. An event of an unknown type is skipped,
/// not fatal, and listed in [`Recentfile::skipped`] (spec 4.2). A bare
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
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::general(format!("file is {} bytes (limit {MAX_FILE_BYTES})", bytes.len())));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        ReadError::at(line, "not valid UTF-8 (paths must be UTF-8)".into())
    })?;
    if format == Format::Yaml {
        if let Some(rf) = super::yaml::parse_syck(text) {
            return Ok(rf);
        }
    }
    let raw = match format {
        Format::Yaml => super::yaml::parse(text)?,
        Format::Json => super::json::parse(text)?,
    };
    validate(raw)
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
    value.map(|v| Epoch::parse(&v).map_err(|e| ReadError::general(format!("meta {what}: {e}")))).transpose()
}

/// Turn raw text into the model, refusing what must not be trusted.
pub fn validate(raw: RawDoc) -> Result<Recentfile, ReadError> {
    let mut rf = Recentfile::default();
    if let Some(m) = raw.meta {
        rf.meta = meta_from_raw(m)?;
    }
    rf.events.reserve(raw.events.len());
    for (i, ev) in raw.events.into_iter().enumerate() {
        let (Some(epoch), Some(path), Some(kind)) = (ev.epoch.clone(), ev.path.clone(), ev.kind.clone()) else {
            return Err(err_at(&ev, i, "event lacks one of epoch, path, type".into()));
        };
        let epoch = Epoch::parse(&epoch).map_err(|e| err_at(&ev, i, format!("{e}")))?;
        if path.len() > MAX_PATH_BYTES {
            // One hostile event, not a broken file: skipped with why, as an
            // unknown type is (a mirror refuses it, news leaves it out).
            rf.skipped.push(Skipped {
                line: ev.line,
                epoch: epoch.into_string(),
                reason: format!("path is {} bytes long (limit {MAX_PATH_BYTES})", path.len()),
                path,
            });
            continue;
        }
        let Some(kind) = EventKind::parse(&kind) else {
            rf.skipped.push(Skipped {
                line: ev.line,
                epoch: epoch.into_string(),
                path,
                reason: format!("unknown event type {kind:?}"),
            });
            continue;
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
        rf.events.push(Event { epoch, path, kind });
    }
    Ok(rf)
}

pub(crate) fn meta_from_raw(m: RawMeta) -> Result<Meta, ReadError> {
    let t = |x: Option<Text>| x.map(|t| t.0);
    let merged = match m.merged {
        None => Merged::Absent,
        Some(map) if map.0.is_empty() => Merged::Reset,
        Some(map) => Merged::Into {
            epoch: epoch_field(map.get("epoch").map(str::to_string), "merged.epoch")?,
            into_interval: map.get("into_interval").map(str::to_string),
            time: map.get("time").map(str::to_string),
        },
    };
    let minmax = match m.minmax {
        None => None,
        Some(map) => Some(MinMax {
            max: epoch_field(map.get("max").map(str::to_string), "minmax.max")?,
            min: epoch_field(map.get("min").map(str::to_string), "minmax.min")?,
            mtime: map.get("mtime").map(str::to_string),
        }),
    };
    Ok(Meta {
        producers: m
            .producers
            .map(|p| p.0.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect())
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
    })
}
