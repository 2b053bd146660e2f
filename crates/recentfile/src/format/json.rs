//! JSON recentfiles (protocol.md 6.2): one line, no trailing newline.
//!
//! The reference writes clock epochs as JSON numbers and mtime or bumped
//! epochs as strings, in one file. rrr reads both and keeps a number's
//! source text (serde_json's `arbitrary_precision`); it writes every epoch
//! as a string (docs/decisions.md#format), which the Perl reader accepts.
//!
//! Paths are byte strings, and the Perl tools (`Data::Serializer::JSON`:
//! `JSON->new->utf8`) give JSON each byte of a name as the character of
//! that number: `é` (bytes C3 A9) is written `"Ã©"`, the byte FF as `"ÿ"`.
//! rrr writes paths the same way ([`path_to_json`]), so a name means the
//! same file to both. abh/rrrgo's encoding/json writes names as UTF-8 text
//! instead (`"café"`), so the reader decides per file which convention its
//! writer used, from evidence in the file ([`names_are_text`], protocol.md
//! 6.2), and reads each path accordingly ([`path_from_json`]).

use super::read::{not_utf8_path, RawDoc, RawEvent, RawMeta, ReadError, Text, TextMap};
use super::{Merged, Producer, Recentfile};
use serde_json::{json, Map, Value};

/// The JSON text of `rf`.
pub(crate) fn emit(rf: &Recentfile, producer: &Producer) -> String {
    let m = &rf.meta;
    let mut meta = Map::new();
    // Sorted: `Hash` before `Producers`, as JSON::PP's canonical order puts it.
    if let Some(h) = &m.hash {
        meta.insert("Hash".into(), json!(h));
    }
    meta.insert(
        "Producers".into(),
        json!({"$0": producer.program, "rrr": env!("CARGO_PKG_VERSION"), "time": producer.time.as_str()}),
    );
    if !m.aggregator.is_empty() {
        meta.insert("aggregator".into(), json!(m.aggregator));
    }
    let mut put = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            meta.insert(k.into(), Value::String(v.to_string()));
        }
    };
    put("canonize", m.canonize.as_deref());
    put("comment", m.comment.as_deref());
    put("dirtymark", m.dirtymark.as_ref().map(|e| e.as_str()));
    put("filenameroot", m.filenameroot.as_deref());
    put("interval", m.interval.as_deref());
    match &m.merged {
        Merged::Absent => {}
        Merged::Reset => {
            meta.insert("merged".into(), json!({}));
        }
        Merged::Into { epoch, into_interval, time } => {
            let mut mm = Map::new();
            if let Some(e) = epoch {
                mm.insert("epoch".into(), json!(e.as_str()));
            }
            if let Some(i) = into_interval {
                mm.insert("into_interval".into(), json!(i));
            }
            if let Some(t) = time {
                mm.insert("time".into(), json!(t));
            }
            meta.insert("merged".into(), Value::Object(mm));
        }
    }
    if let Some(mm) = &m.minmax {
        let mut o = Map::new();
        o.insert("max".into(), mm.max.as_ref().map_or(Value::Null, |e| json!(e.as_str())));
        o.insert("min".into(), mm.min.as_ref().map_or(Value::Null, |e| json!(e.as_str())));
        if let Some(t) = &mm.mtime {
            o.insert("mtime".into(), number_or_string(t));
        }
        meta.insert("minmax".into(), Value::Object(o));
    }
    if let Some(p) = &m.protocol {
        meta.insert("protocol".into(), number_or_string(p));
    }
    if let Some(s) = &m.serializer_suffix {
        meta.insert("serializer_suffix".into(), json!(s));
    }
    let recent: Vec<Value> = rf
        .events
        .iter()
        .map(|e| {
            // Sorted keys (JSON::PP's canonical order; the map keeps
            // insertion order), a size as a Perl integer, a sha256 as a string.
            let mut o = Map::new();
            o.insert("epoch".into(), json!(e.epoch.as_str()));
            o.insert("path".into(), json!(path_to_json(e.path.as_bytes())));
            if let Some(sha256) = &e.sha256 {
                o.insert("sha256".into(), json!(sha256.as_str()));
            }
            if let Some(size) = e.size {
                o.insert("size".into(), json!(size));
            }
            o.insert("type".into(), json!(e.kind.as_str()));
            Value::Object(o)
        })
        .collect();
    let doc = json!({"meta": Value::Object(meta), "recent": recent});
    serde_json::to_string(&doc).expect("JSON of strings cannot fail")
}

/// A path as the Perl tools' JSON writer gives it: one character per byte.
fn path_to_json(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// The bytes of a JSON path: its UTF-8 where the file's names are text
/// (`text`, see [`names_are_text`]); else the bytes the Perl tools take
/// it for, one byte per character when every character is below U+0100,
/// or (a wide string) the UTF-8 of the whole string, as Perl's `open`
/// would name the file.
fn path_from_json(path: &str, text: bool) -> Vec<u8> {
    if text {
        return path.as_bytes().to_vec();
    }
    perl_bytes(path).unwrap_or_else(|| path.as_bytes().to_vec())
}

/// One byte per character, if every character is below U+0100.
fn perl_bytes(path: &str) -> Option<Vec<u8>> {
    path.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
}

/// Whether a JSON recentfile's writer put names in as UTF-8 text (abh/rrrgo's
/// encoding/json) rather than one character per byte (the Perl tools,
/// rrr), decided once per file from the evidence in it, by the first rule
/// that applies (protocol.md 6.2):
/// 1. `Producers` names `github.com/abh/rrrgo`: text;
/// 2. `Producers` names `File::Rsync::Mirror::Recentfile` (the Perl
///    tools) or `rrr`: one character per byte;
/// 3. a path holds a character above U+00FF, which is no byte: text;
/// 4. the JSON spans several lines (`text` holds a newline, which JSON
///    allows only between tokens): text. rrrgo indents every file it
///    writes (encoding/json's `MarshalIndent`) and writes `Producers` only
///    into the principal; the Perl tools (`JSON->new->utf8`) and rrr write
///    one line;
/// 5. otherwise one character per byte (a file of ASCII names reads the
///    same either way).
fn names_are_text(text: &str, meta: Option<&Value>, events: &[Value]) -> bool {
    if let Some(producers) = meta.and_then(|m| m.get("Producers")).and_then(Value::as_object) {
        if producers.contains_key("github.com/abh/rrrgo") {
            return true;
        }
        if producers.contains_key("File::Rsync::Mirror::Recentfile") || producers.contains_key("rrr") {
            return false;
        }
    }
    let wide = |p: &str| !p.is_ascii() && perl_bytes(p).is_none();
    events.iter().filter_map(|e| e.get("path")?.as_str()).any(wide) || text.trim().contains('\n')
}

/// Integers stay numbers (as the reference writes `protocol` and `mtime`).
fn number_or_string(t: &str) -> Value {
    if !t.is_empty() && t.len() < 19 && t.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = t.parse::<u64>() {
            return json!(n);
        }
    }
    json!(t)
}

/// The exact text of a scalar value; `None` for null, arrays and objects.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<Text> {
    v.and_then(scalar_text).map(Text)
}

fn text_map(v: Option<&Value>) -> Option<TextMap> {
    let Value::Object(o) = v? else { return None };
    Some(TextMap(o.iter().map(|(k, v)| (k.clone(), scalar_text(v))).collect()))
}

/// Parse JSON text into raw fields.
pub(crate) fn parse(text_in: &str) -> Result<RawDoc, ReadError> {
    let top: Value =
        serde_json::from_str(text_in).map_err(|e| ReadError::at(e.line(), format!("not valid JSON: {e}")))?;
    let (meta, events) = match top {
        Value::Object(mut o) => {
            let events = match o.remove("recent") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a,
                Some(_) => return Err(ReadError::general("`recent` is not a list".into())),
            };
            (Some(o.remove("meta").unwrap_or(Value::Null)), events)
        }
        Value::Array(a) => (None, a),
        _ => return Err(ReadError::general("not a recentfile document: expected a mapping or a list".into())),
    };
    let text_names = names_are_text(text_in, meta.as_ref(), &events);
    let meta = meta.map(|m| {
        let g = |k: &str| m.get(k);
        RawMeta {
            producers: text_map(g("Producers")),
            aggregator: g("aggregator")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(scalar_text).map(Text).collect()),
            canonize: text(g("canonize")),
            comment: text(g("comment")),
            dirtymark: text(g("dirtymark")),
            filenameroot: text(g("filenameroot")),
            interval: text(g("interval")),
            merged: text_map(g("merged")),
            minmax: text_map(g("minmax")),
            protocol: text(g("protocol")),
            serializer_suffix: text(g("serializer_suffix")),
            hash: text(g("Hash")),
        }
    });
    let events = events
        .into_iter()
        .map(|e| RawEvent {
            line: None,
            epoch: e.get("epoch").and_then(scalar_text),
            path: e.get("path").and_then(scalar_text).map(|p| not_utf8_path(&path_from_json(&p, text_names))),
            kind: e.get("type").and_then(scalar_text),
            sha256: e.get("sha256").and_then(scalar_text),
            size: e.get("size").and_then(scalar_text),
            problem: None,
        })
        .collect();
    Ok(RawDoc { meta, events })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_bytes_as_the_perl_json_writer_gives_them() {
        // What JSON::PP->new->utf8 writes for these Perl byte strings.
        for (bytes, json) in [
            (&b"a/b"[..], &b"a/b"[..]),
            (b"\xc3\xa9", b"\xc3\x83\xc2\xa9"),
            (b"\xff/\x80", b"\xc3\xbf/\xc2\x80"),
            (b"t\tn\n", b"t\tn\n"),
        ] {
            assert_eq!(path_to_json(bytes).as_bytes(), json);
            assert_eq!(path_from_json(&path_to_json(bytes), false), bytes);
        }
        // A wide character: Perl names the file by the string's UTF-8.
        assert_eq!(path_from_json("\u{e9}\u{263a}", false), "\u{e9}\u{263a}".as_bytes());
        // Names as text: their UTF-8.
        assert_eq!(path_from_json("caf\u{e9}", true), "caf\u{e9}".as_bytes());
        assert_eq!(path_from_json("caf\u{c3}\u{a9}", true), "caf\u{c3}\u{a9}".as_bytes());
    }

    /// Which convention a file's names are read in, rule by rule
    /// (protocol.md 6.2), and what a name then means.
    #[test]
    fn the_name_convention_is_decided_per_file_from_its_evidence() {
        let doc = |producers: &str, paths: &[&str]| {
            let recent: Vec<String> = paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    format!(r#"{{"epoch":"{}.5","path":{},"type":"new"}}"#, 100 - i, serde_json::to_string(p).unwrap())
                })
                .collect();
            format!(r#"{{"meta":{{"Producers":{{{producers}}}}},"recent":[{}]}}"#, recent.join(","))
        };
        let read = |json: &str| -> Vec<Vec<u8>> {
            super::super::parse_bytes(json.as_bytes(), super::super::Format::Json)
                .unwrap()
                .events
                .iter()
                .map(|e| e.path.as_bytes().to_vec())
                .collect()
        };
        let rrrgo = r#""$0":"/usr/local/bin/rrr-server","github.com/abh/rrrgo":"v0.1""#;
        let perl = r#""$0":"rrr-server","File::Rsync::Mirror::Recentfile":"0.4.3","time":"1.5""#;
        let ours = r#""$0":"rrr","rrr":"0.1.0","time":"1.5""#;
        let cafe = "caf\u{e9}";
        let cafe_perl = "caf\u{c3}\u{a9}";
        let utf8 = "caf\u{e9}".as_bytes().to_vec();
        let latin1 = b"caf\xe9".to_vec();
        for (producers, paths, want) in [
            // 1. rrrgo says so: text, whatever the names.
            (rrrgo, vec![cafe], vec![utf8.clone()]),
            (rrrgo, vec![cafe_perl], vec![cafe_perl.as_bytes().to_vec()]),
            // 2. the Perl tools or rrr say so: one character per byte.
            (perl, vec![cafe], vec![latin1.clone()]),
            (perl, vec![cafe_perl, "\u{263a}"], vec![utf8.clone(), "\u{263a}".as_bytes().to_vec()]),
            (ours, vec![cafe, cafe_perl], vec![latin1.clone(), utf8.clone()]),
            // 3. no such Producers: a character above U+00FF makes the whole file text.
            ("", vec![cafe_perl, "\u{65e5}"], vec![cafe_perl.as_bytes().to_vec(), "\u{65e5}".as_bytes().to_vec()]),
            (r#""$0":"x""#, vec![cafe, "\u{65e5}"], vec![utf8.clone(), "\u{65e5}".as_bytes().to_vec()]),
            // 5. otherwise one character per byte (a file on one line).
            ("", vec![cafe_perl, cafe], vec![utf8.clone(), latin1.clone()]),
            (r#""$0":"x""#, vec![cafe], vec![latin1.clone()]),
            ("", vec!["a/b"], vec![b"a/b".to_vec()]),
        ] {
            let json = doc(producers, &paths);
            assert_eq!(read(&json), want, "{producers} {paths:?}");
            // 4. the same file indented over several lines, as encoding/json's
            // MarshalIndent writes it: text unless Producers (rule 2) says otherwise.
            let indented = json.replace(r#","recent":["#, ",\n  \"recent\": [\n    ");
            let text: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
            let rule2 = producers == perl || producers == ours;
            assert_eq!(read(&indented), if rule2 { want } else { text }, "indented: {producers} {paths:?}");
        }
        // A bare list (protocol 0) has no meta: the names and layout decide.
        let bare = format!(r#"[{{"epoch":"1.5","path":"{cafe}","type":"new"}}]"#);
        assert_eq!(read(&bare), [latin1]);
        assert_eq!(read(&bare.replace('{', "\n{")), [utf8]);
    }
}
