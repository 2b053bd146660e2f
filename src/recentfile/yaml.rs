//! YAML recentfiles: the YAML::Syck 1.34 emitter and a fast reader.
//!
//! Writing follows spec 6.1 byte for byte (see [`super::syck`] for scalars):
//! `--- ` header, sorted keys, two-space indentation, `- ` on its own line
//! before a list item that is a map, `{}`/`[]` followed by an empty line.
//!
//! Reading has two paths. A Z file holds a million events, so the `recent`
//! list of a file in the Syck layout is read line by line (no YAML machinery),
//! while `meta` is small and goes through serde-saphyr. Anything the fast path
//! does not recognise (flow style, anchors, comments, other key orders,
//! multi-line scalars, 2008's unquoted epochs are fine) falls back to a full
//! serde-saphyr parse of the whole document, whose budget stops alias bombs.

use super::read::{RawDoc, RawEvent, RawMeta, ReadError, Text};
use super::syck::scalar;
use super::{Merged, Producer, Recentfile};
use serde::Deserialize;
use std::fmt::Write as _;

/// The YAML text of `rf`, as YAML::Syck 1.34 would write it.
pub fn emit(rf: &Recentfile, producer: &Producer) -> String {
    let m = &rf.meta;
    let mut out = String::with_capacity(256 + rf.events.len() * 96);
    out.push_str("--- \nmeta: \n  Producers: \n");
    kv(&mut out, 4, "$0", &producer.program);
    kv(&mut out, 4, "rrr", env!("CARGO_PKG_VERSION"));
    kv(&mut out, 4, "time", producer.time.as_str());
    if !m.aggregator.is_empty() {
        out.push_str("  aggregator: \n");
        for a in &m.aggregator {
            let _ = writeln!(out, "    - {}", scalar(a));
        }
    }
    opt(&mut out, 2, "canonize", m.canonize.as_deref());
    opt(&mut out, 2, "comment", m.comment.as_deref());
    opt(&mut out, 2, "dirtymark", m.dirtymark.as_ref().map(|e| e.as_str()));
    opt(&mut out, 2, "filenameroot", m.filenameroot.as_deref());
    opt(&mut out, 2, "interval", m.interval.as_deref());
    match &m.merged {
        Merged::Absent => {}
        Merged::Reset | Merged::Into { epoch: None, into_interval: None, time: None } => {
            out.push_str("  merged: {}\n\n")
        }
        Merged::Into { epoch, into_interval, time } => {
            out.push_str("  merged: \n");
            opt(&mut out, 4, "epoch", epoch.as_ref().map(|e| e.as_str()));
            opt(&mut out, 4, "into_interval", into_interval.as_deref());
            opt(&mut out, 4, "time", time.as_deref());
        }
    }
    if let Some(mm) = &m.minmax {
        out.push_str("  minmax: \n");
        kv(&mut out, 4, "max", mm.max.as_ref().map_or("~", |e| e.as_str()));
        kv(&mut out, 4, "min", mm.min.as_ref().map_or("~", |e| e.as_str()));
        opt(&mut out, 4, "mtime", mm.mtime.as_deref());
    }
    opt(&mut out, 2, "protocol", m.protocol.as_deref());
    opt(&mut out, 2, "serializer_suffix", m.serializer_suffix.as_deref());
    if rf.events.is_empty() {
        out.push_str("recent: []\n\n");
    } else {
        out.push_str("recent: \n");
        for e in &rf.events {
            out.push_str("  - \n    epoch: ");
            out.push_str(&scalar(e.epoch.as_str()));
            out.push_str("\n    path: ");
            out.push_str(&scalar(&e.path));
            out.push_str("\n    type: ");
            out.push_str(e.kind.as_str());
            out.push('\n');
        }
    }
    out
}

fn kv(out: &mut String, indent: usize, key: &str, value: &str) {
    let value = if value == "~" { "~".into() } else { scalar(value) };
    let _ = writeln!(out, "{:indent$}{}: {}", "", scalar(key), value);
}

fn opt(out: &mut String, indent: usize, key: &str, value: Option<&str>) {
    if let Some(v) = value {
        kv(out, indent, key, v);
    }
}

/// Lines longer than this are refused: no recentfile line is legitimately
/// this long, and a hostile one must not reach the YAML machinery.
pub const MAX_LINE: usize = 1 << 20;

/// Parse a YAML recentfile into raw text fields.
pub fn parse(text: &str) -> Result<RawDoc, ReadError> {
    match fast_parse(text)? {
        Some(doc) => Ok(doc),
        None => general_parse(text),
    }
}

/// The line-oriented reader for Syck's layout. `Ok(None)` means "not
/// recognised, use the general parser"; errors are real errors (e.g. an
/// over-long line).
fn fast_parse(text: &str) -> Result<Option<RawDoc>, ReadError> {
    // Find the top-level `recent:` line; everything before it is meta.
    let mut offset = 0;
    let mut line_no = 0;
    let mut recent_at = None;
    for line in text.split_inclusive('\n') {
        line_no += 1;
        if line.len() > MAX_LINE {
            return Err(ReadError::at(line_no, format!("line is {} bytes long (limit {MAX_LINE})", line.len())));
        }
        let l = line.trim_end_matches(['\n', '\r']);
        if let Some(rest) = l.strip_prefix("recent:") {
            recent_at = Some((offset, line_no, rest.trim().to_string()));
            break;
        }
        offset += line.len();
    }
    let Some((recent_off, recent_line, rest)) = recent_at else {
        return Ok(None);
    };
    let head = &text[..recent_off];
    if !head.lines().any(|l| l.starts_with("meta:")) {
        return Ok(None);
    }
    let meta: MetaOnly = match serde_saphyr::from_str(head) {
        Ok(m) => m,
        Err(_) => return Ok(None),
    };
    let body = &text[recent_off..];
    let body = &body[body.find('\n').map_or(body.len(), |i| i + 1)..];
    let mut events = Vec::new();
    if rest == "[]" {
        if body.lines().any(|l| !l.trim().is_empty()) {
            return Ok(None);
        }
    } else if !rest.is_empty() || !fast_events(body, recent_line, &mut events)? {
        return Ok(None);
    }
    Ok(Some(RawDoc { meta: Some(meta.meta), events }))
}

#[derive(Deserialize)]
struct MetaOnly {
    meta: RawMeta,
}

/// Read `  - ` items with `epoch`/`path`/`type` keys at indent 4 (or the
/// compact `  - key: value` form). Returns false when the layout differs.
fn fast_events(body: &str, mut line_no: usize, events: &mut Vec<RawEvent>) -> Result<bool, ReadError> {
    let mut cur: Option<RawEvent> = None;
    for line in body.split('\n') {
        line_no += 1;
        if line.len() > MAX_LINE {
            return Err(ReadError::at(line_no, format!("line is {} bytes long (limit {MAX_LINE})", line.len())));
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let kv_text = if let Some(item) = line.strip_prefix("  -") {
            if let Some(ev) = cur.take() {
                if !push_complete(ev, events) {
                    return Ok(false);
                }
            }
            cur = Some(RawEvent { line: Some(line_no), ..RawEvent::default() });
            let item = item.trim_end();
            if item.is_empty() {
                continue;
            }
            match item.strip_prefix(' ') {
                Some(kv) => kv,
                None => return Ok(false),
            }
        } else if let Some(kv) = line.strip_prefix("    ") {
            if kv.starts_with(' ') {
                return Ok(false);
            }
            kv
        } else if line.trim().is_empty() {
            continue;
        } else {
            return Ok(false);
        };
        let Some(ev) = cur.as_mut() else { return Ok(false) };
        let Some((key, value)) = kv_text.split_once(": ").or_else(|| kv_text.strip_suffix(':').map(|k| (k, ""))) else {
            return Ok(false);
        };
        let Some(value) = fast_scalar(value) else { return Ok(false) };
        let slot = match key {
            "epoch" => &mut ev.epoch,
            "path" => &mut ev.path,
            "type" => &mut ev.kind,
            _ => return Ok(false),
        };
        if slot.is_some() {
            return Ok(false);
        }
        *slot = Some(value);
    }
    if let Some(ev) = cur.take() {
        if !push_complete(ev, events) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn push_complete(ev: RawEvent, events: &mut Vec<RawEvent>) -> bool {
    if ev.epoch.is_none() || ev.path.is_none() || ev.kind.is_none() {
        return false;
    }
    events.push(ev);
    true
}

/// One flow scalar on one line: plain, single- or double-quoted. `None` for
/// anything else (the general parser will decide).
fn fast_scalar(v: &str) -> Option<String> {
    let v = v.trim_end_matches(' ');
    if v.is_empty() {
        return None;
    }
    let b = v.as_bytes();
    match b[0] {
        b'\'' => {
            let inner = v.strip_prefix('\'')?.strip_suffix('\'')?;
            // `''` is an escaped quote; a lone quote would have ended the scalar.
            if inner.split("''").any(|part| part.contains('\'')) {
                return None;
            }
            Some(inner.replace("''", "'"))
        }
        b'"' => {
            let inner = v.strip_prefix('"')?.strip_suffix('"')?;
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return None,
                    '\\' => match chars.next()? {
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        '/' => out.push('/'),
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'e' => out.push('\x1b'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        ' ' => out.push(' '),
                        'x' => {
                            let h: String = chars.by_ref().take(2).collect();
                            out.push(char::from_u32(u32::from_str_radix(&h, 16).ok()?)?);
                        }
                        _ => return None,
                    },
                    c => out.push(c),
                }
            }
            Some(out)
        }
        b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'#' => None,
        _ => {
            if v.contains(" #") || v.contains(": ") || v == "~" || v == "null" {
                return None;
            }
            Some(v.to_string())
        }
    }
}

/// Either a protocol 1 mapping or a protocol 0 bare list.
fn general_parse(text: &str) -> Result<RawDoc, ReadError> {
    if let Some((n, l)) = text.split('\n').enumerate().find(|(_, l)| l.len() > MAX_LINE) {
        return Err(ReadError::at(n + 1, format!("line is {} bytes long (limit {MAX_LINE})", l.len())));
    }
    let first = text
        .lines()
        .map(|l| {
            let l = l.trim();
            l.strip_prefix("---").map_or(l, str::trim_start)
        })
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('%'))
        .unwrap_or("");
    let yaml_err = |e: serde_saphyr::Error| ReadError::general(format!("not a valid recentfile: {e}"));
    if first.starts_with('-') || first.starts_with('[') {
        let events: Vec<GeneralEvent> = serde_saphyr::from_str(text).map_err(yaml_err)?;
        return Ok(RawDoc { meta: None, events: events.into_iter().map(GeneralEvent::into_raw).collect() });
    }
    if first.is_empty() {
        return Err(ReadError::general("empty document".into()));
    }
    let doc: GeneralDoc = serde_saphyr::from_str(text).map_err(yaml_err)?;
    Ok(RawDoc {
        meta: Some(doc.meta.unwrap_or_default()),
        events: doc.recent.unwrap_or_default().into_iter().map(GeneralEvent::into_raw).collect(),
    })
}

#[derive(Deserialize)]
struct GeneralDoc {
    meta: Option<RawMeta>,
    recent: Option<Vec<GeneralEvent>>,
}

#[derive(Deserialize)]
struct GeneralEvent {
    epoch: Option<Text>,
    path: Option<Text>,
    #[serde(rename = "type")]
    kind: Option<Text>,
}

impl GeneralEvent {
    fn into_raw(self) -> RawEvent {
        RawEvent {
            line: None,
            epoch: self.epoch.map(|t| t.0),
            path: self.path.map(|t| t.0),
            kind: self.kind.map(|t| t.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_scalars() {
        assert_eq!(fast_scalar("'1700000000.5'").as_deref(), Some("1700000000.5"));
        assert_eq!(fast_scalar("'it''s'").as_deref(), Some("it's"));
        assert_eq!(fast_scalar("'a'b'"), None);
        assert_eq!(fast_scalar("\"a: b\"").as_deref(), Some("a: b"));
        assert_eq!(fast_scalar("\"\\x7F\\0\\n\"").as_deref(), Some("\x7f\0\n"));
        assert_eq!(fast_scalar("id/A/x.tar.gz").as_deref(), Some("id/A/x.tar.gz"));
        assert_eq!(fast_scalar("a #comment"), None);
        assert_eq!(fast_scalar("&anchor x"), None);
    }
}
