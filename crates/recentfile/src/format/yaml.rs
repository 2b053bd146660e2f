//! YAML recentfiles: the YAML::Syck 1.34 emitter and a fast reader.
//!
//! Writing follows protocol.md 6.1 byte for byte (see [`super::syck`] for scalars):
//! `--- ` header, sorted keys, two-space indentation, `- ` on its own line
//! before a list item that is a map, `{}`/`[]` followed by an empty line.
//!
//! Reading has three paths, and takes every block layout a known writer
//! produces: YAML::Syck's, the 2008 PAUSE style, and gopkg.in/yaml.v3's
//! (abh/rrrgo: no `---`, compact items at indent 4, `Producers` last,
//! epochs as `1.79624748999797e+09`, block scalars, `!!binary`). A Z file
//! holds a million events, so the `recent` list is never given to YAML
//! machinery when it has one of those layouts:
//! - [`parse_syck`], the strict path: exactly one layout's item blocks
//!   (Syck's `  - ` / `    epoch: ` / `    path: ` / `    type: `, or
//!   compact `    - epoch: ` / `      path: ` / `      type: ` at the first
//!   item's indentation), in that key order, values on one line,
//!   validated as it goes straight into [`Event`]s. It gives up (`None`) on
//!   anything else, including every kind of bad input, so that errors are
//!   always reported by the paths below;
//! - [`parse`], the line reader: any indentation and key order, compact
//!   or not, one-line scalars and block scalars (`|`, `>`, chomping and
//!   indentation indicators), into raw text that [`super::read::validate`]
//!   checks with line numbers;
//! - a full serde-saphyr parse of the whole document for anything else
//!   (flow style, anchors, comments, multi-line flow scalars), whose budget
//!   stops alias bombs and grows with the file; and when that fails, the
//!   same structure found line by line with each item parsed alone
//!   (`itemwise_parse`), so that one unreadable event is one skipped event.
//!
//! Double-quoted scalars are read in the file's `Dialect`: YAML::Syck's
//! `\xHH` is a byte, libyaml's (yaml.v3's) a code point.
//!
//! A path that is not UTF-8 (raw bytes, `\xHH` escapes that spell no
//! character, or `!!binary`) is decoded to its bytes (carried through the
//! text readers with the `NOT_UTF8` mark), never to the Latin-1 text they
//! also spell.
//!
//! `meta` is small and always goes through serde-saphyr. [`outline`] reads
//! only what `overview` needs (meta, count, newest, oldest) from a stream,
//! checking the layout of every item without keeping any.

use super::read::{meta_from_raw, not_utf8_path, path_of_decoded, Outline, RawDoc, RawEvent, RawMeta, ReadError, Text};
use super::syck::scalar;
use super::{Event, EventKind, Merged, Producer, Recentfile};
use crate::beacon::Sha256Hex;
use crate::epoch::{cmp_epochs, Epoch};
use serde::Deserialize;
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::io::Read;

/// The YAML bytes of `rf`, as YAML::Syck 1.34 would write them (a path
/// that is not UTF-8 keeps its bytes, so this is not always text).
pub fn emit(rf: &Recentfile, producer: &Producer) -> Vec<u8> {
    let body: usize = rf.events.iter().map(|e| e.epoch.as_str().len() + e.path.len() + 48).sum();
    let mut out = Vec::with_capacity(1024 + body);
    emit_to(rf, producer, &mut out).expect("writing to a Vec cannot fail");
    out
}

/// [`emit`] into a writer, in pieces of about `WRITE_PIECE` bytes (a Z
/// file is never held in memory as text).
pub fn emit_to(rf: &Recentfile, producer: &Producer, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let m = &rf.meta;
    let mut out = String::with_capacity(WRITE_PIECE + 8192);
    out.push_str("--- \nmeta: \n");
    // Syck sorts the keys: `Hash` (rrr's, protocol.md 4.1) before `Producers`.
    opt(&mut out, 2, "Hash", m.hash.as_deref());
    out.push_str("  Producers: \n");
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
    let mut out = out.into_bytes();
    if rf.events.is_empty() {
        out.extend_from_slice(b"recent: []\n\n");
    } else {
        out.extend_from_slice(b"recent: \n");
        for e in &rf.events {
            out.extend_from_slice(b"  - \n    epoch: ");
            push_epoch(&mut out, e.epoch.as_str());
            out.extend_from_slice(b"\n    path: ");
            push_path(&mut out, e.path.as_bytes());
            if let Some(sha256) = &e.sha256 {
                out.extend_from_slice(b"\n    sha256: ");
                out.extend_from_slice(scalar(sha256.as_str()).as_bytes());
            }
            if let Some(size) = e.size {
                // YAML::Syck dumps a Perl integer as it dumps its decimal
                // string: plain up to 9 characters, else single-quoted.
                out.extend_from_slice(b"\n    size: ");
                out.extend_from_slice(scalar(&size.to_string()).as_bytes());
            }
            out.extend_from_slice(b"\n    type: ");
            out.extend_from_slice(e.kind.as_str().as_bytes());
            out.push(b'\n');
            if out.len() >= WRITE_PIECE {
                w.write_all(&out)?;
                out.clear();
            }
        }
    }
    w.write_all(&out)
}

/// How much [`emit_to`] gathers before each write.
const WRITE_PIECE: usize = 1 << 18;

/// `scalar(epoch)` without allocating: a dotted decimal (`1700000000.5`)
/// is a float to a YAML reader, so Syck single-quotes it; anything else
/// (a dot-less epoch may stay plain) goes through [`scalar`].
fn push_epoch(out: &mut Vec<u8>, epoch: &str) {
    if is_dotted_decimal(epoch) {
        out.push(b'\'');
        out.extend_from_slice(epoch.as_bytes());
        out.push(b'\'');
    } else {
        out.extend_from_slice(scalar(epoch).as_bytes());
    }
}

/// `digits.digits`, both sides non-empty.
fn is_dotted_decimal(s: &str) -> bool {
    dotted_decimal_dot(s).is_some()
}

/// The index of the dot of a `digits.digits` string.
#[inline]
fn dotted_decimal_dot(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut dot = None;
    for (i, &c) in b.iter().enumerate() {
        if c == b'.' {
            if dot.is_some() {
                return None;
            }
            dot = Some(i);
        } else if !c.is_ascii_digit() {
            return None;
        }
    }
    dot.filter(|&d| d > 0 && d + 1 < b.len())
}

/// `a < b` by [`cmp_epochs`], for epochs whose dots are at `da` and `db`
/// (`None`: not known to be dotted decimals). With the dots at the same
/// index the reference order is byte order (see [`cmp_epochs`]), and
/// neighbouring epochs nearly always differ in their first eight bytes.
#[inline]
fn epoch_lt(a: &str, da: Option<usize>, b: &str, db: Option<usize>) -> bool {
    if da.is_some() && da == db && a.len() >= 8 && b.len() >= 8 {
        let word = |s: &str| u64::from_be_bytes(s.as_bytes()[..8].try_into().expect("8 bytes"));
        let (x, y) = (word(a), word(b));
        if x != y {
            return x < y;
        }
    }
    cmp_epochs(a, b) == Ordering::Less
}

/// `scalar(path)` without its searches for the common path: one that
/// starts with a letter or digit, has a `/` (so Perl takes it for no
/// number and YAML for no bool or null), no space, control character or
/// DEL, does not end in `:` (so nothing calls for double quotes), and
/// does not start with a YAML bool or null word that a non-ASCII byte
/// ends (`Null\u{a0}x/y`, single-quoted). Such a path is written plain.
fn push_path(out: &mut Vec<u8>, path: &[u8]) {
    if is_plain_path(path) {
        out.extend_from_slice(path);
    } else {
        out.extend_from_slice(&super::syck::scalar_bytes(path));
    }
}

fn is_plain_path(b: &[u8]) -> bool {
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|&c| c > b' ' && c != 0x7f)
        && b.contains(&b'/')
        && b[b.len() - 1] != b':'
        && !(b"nNyYtTfFoO".contains(&b[0]) && super::syck::is_bool_or_null(b))
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

/// Which writer's escapes a file's double-quoted scalars use (protocol.md
/// 6.1, "Reading"). The two disagree on `\xHH`: YAML::Syck is handed Perl
/// byte strings and writes each byte of a non-ASCII character as its own
/// `\xHH` (`"\xC3\xA4"` is `ä`); libyaml and its ports (gopkg.in/yaml.v3,
/// which abh/rrrgo uses) write code points, `\x80` for U+0080 (UTF-8 C2
/// 80), with `\uHHHH`, `\UHHHHHHHH`, `\N`, `\_`, `\L` and `\P` beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// YAML::Syck 1.34 (the Perl tools, rrr, PAUSE in 2008): `\xHH` is a byte.
    Syck,
    /// libyaml's family (gopkg.in/yaml.v3 in rrrgo, PyYAML): escapes are
    /// code points, and a name that is not UTF-8 is `!!binary` base64.
    Libyaml,
}

impl Dialect {
    /// The dialect of a document from the text before its `recent:` line,
    /// the first rule that applies (protocol.md 6.1, "Reading"):
    /// 1. libyaml's where `Producers` names `github.com/abh/rrrgo` (the key
    ///    rrrgo writes its version under, in the principal);
    /// 2. Syck's where `Producers` names `File::Rsync::Mirror::Recentfile`
    ///    (the Perl tools) or `rrr`;
    /// 3. Syck's where the document starts with `---` (YAML::Syck always
    ///    writes `--- `);
    /// 4. libyaml's otherwise (yaml.v3 writes no header, and rrrgo writes
    ///    no `Producers` into the files it aggregates into; nor do PyYAML
    ///    and the like).
    pub(crate) fn of(head: &str) -> Dialect {
        let key = |k: &str| head.lines().any(|l| l.trim_start().starts_with(k));
        if key("github.com/abh/rrrgo:") {
            return Dialect::Libyaml;
        }
        let header = head
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('%'))
            .is_some_and(|l| l.starts_with("---"));
        if header || key("File::Rsync::Mirror::Recentfile:") || key("rrr:") {
            Dialect::Syck
        } else {
            Dialect::Libyaml
        }
    }
}

/// The shape of the item blocks the strict path reads, found once per
/// file from its first item: YAML::Syck's `  - ` line with the keys under
/// it, or the compact items of yaml.v3 and others (`    - epoch: …` with
/// the other keys two columns right of the dash) at any indentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// What starts an item, up to the epoch's value: `  - \n    epoch: `
    /// (Syck) or `<indent>- epoch: ` (compact).
    item: Box<[u8]>,
    /// The path's line up to its value: `    path: ` (Syck), `<indent + 2>path: `.
    path: Box<[u8]>,
    /// The type's line up to its value.
    kind: Box<[u8]>,
    /// The optional sha256 line up to its value.
    sha256: Box<[u8]>,
    /// The optional size line up to its value.
    size: Box<[u8]>,
    /// How double-quoted values are decoded.
    dialect: Dialect,
}

/// The deepest compact layout the strict path takes (deeper is read by the line reader).
const MAX_LAYOUT_INDENT: usize = 32;

impl Layout {
    /// YAML::Syck's items: `  - ` on its own line, keys at 4.
    pub(crate) fn syck(dialect: Dialect) -> Layout {
        Layout {
            item: (*b"  - \n    epoch: ").into(),
            path: (*b"    path: ").into(),
            kind: (*b"    type: ").into(),
            sha256: (*b"    sha256: ").into(),
            size: (*b"    size: ").into(),
            dialect,
        }
    }

    /// Compact items whose dash is at `indent` (yaml.v3: 4, or its
    /// `SetIndent`), keys two columns right of the dash.
    pub(crate) fn compact(indent: usize, dialect: Dialect) -> Layout {
        let at = |n: usize, key: &str| [" ".repeat(n).as_bytes(), key.as_bytes()].concat().into_boxed_slice();
        Layout {
            item: at(indent, "- epoch: "),
            path: at(indent + 2, "path: "),
            kind: at(indent + 2, "type: "),
            sha256: at(indent + 2, "sha256: "),
            size: at(indent + 2, "size: "),
            dialect,
        }
    }

    /// The layout of the items of `body` (what follows the `recent:`
    /// line), from its first line; Syck's when that is neither (the strict
    /// path then declines the file).
    pub(crate) fn of(body: &[u8], dialect: Dialect) -> Layout {
        let indent = body.iter().take_while(|&&c| c == b' ').count();
        if indent <= MAX_LAYOUT_INDENT && body[indent..].starts_with(b"- epoch: ") {
            Layout::compact(indent, dialect)
        } else {
            Layout::syck(dialect)
        }
    }

    /// What an item starts with at the start of a line, with the newline
    /// before it: where [`split_scan`] may cut. No other line of a file
    /// the strict path takes begins so (values are one line there).
    fn mark(&self) -> Vec<u8> {
        [&b"\n"[..], &self.item].concat()
    }
}

/// Lines longer than this are refused: no recentfile line is legitimately
/// this long, and a hostile one must not reach the YAML machinery.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Parse a YAML recentfile into raw text fields.
pub fn parse(text: &str) -> Result<RawDoc, ReadError> {
    match fast_parse(text)? {
        Some(doc) => Ok(doc),
        None => match itemwise_parse(text) {
            // Items that each parse alone, or nothing (no anchor or alias)
            // that the whole document could read better: the general
            // parse of a Z file costs seconds.
            Some(doc)
                if doc.events.iter().all(|e| e.problem.is_none()) || !(text.contains('&') || text.contains('*')) =>
            {
                Ok(doc)
            }
            Some(doc) => general_parse(text).or(Ok(doc)),
            None => general_parse(text),
        },
    }
}

/// The strict path (see the module docs): a recentfile exactly in Syck's
/// layout or in the compact one (yaml.v3's), validated, or `None` when
/// anything differs or would be an error or a skipped event; the caller
/// then uses [`parse`] and [`super::read::validate`], which report the
/// problem with its line.
pub fn parse_syck(text: &str) -> Option<Recentfile> {
    read_syck(text.as_bytes()).ok().flatten()
}

/// [`parse_syck`] from a stream, through one small buffer (a Z file is
/// never held in memory as text). `Ok(None)`: not for the strict path.
pub fn read_syck(r: impl Read) -> std::io::Result<Option<Recentfile>> {
    let Some((mut items, meta)) = Items::open(r)? else { return Ok(None) };
    let mut rf = Recentfile { meta, ..Recentfile::default() };
    let complete = strict_events(&mut items, &mut rf.events)?;
    Ok(complete.then_some(rf))
}

/// Files at least this big are read by [`read_syck_file`] on two threads.
const SPLIT_MIN_BYTES: u64 = 4 << 20;

/// [`read_syck`] of a whole file. A big file (a Z file is 100 MB) is cut
/// at an item boundary near its middle and the halves are parsed on two
/// threads, which halves the time on two cores. The result is the
/// sequential one: the first half must end with a complete item exactly
/// at the cut and the epochs must decrease across it, else the file is
/// read sequentially.
pub fn read_syck_file(file: &std::fs::File) -> std::io::Result<Option<Recentfile>> {
    read_syck_split(file, SPLIT_MIN_BYTES)
}

/// [`read_syck_file`], splitting files of at least `split_min` bytes.
fn read_syck_split(file: &std::fs::File, split_min: u64) -> std::io::Result<Option<Recentfile>> {
    split_scan(
        file,
        split_min,
        read_syck,
        |r, layout| {
            let mut items = Items::body(r, layout)?;
            let mut rest = Recentfile::default();
            Ok(strict_events(&mut items, &mut rest.events)?.then_some(rest))
        },
        |mut first, rest| {
            match (first.events.last(), rest.events.first()) {
                (Some(a), Some(b)) if b.epoch < a.epoch => {}
                _ => return None,
            }
            first.events.extend(rest.events);
            Some(first)
        },
    )
}

/// A scan of a file in a strict layout, on two threads when the file has at
/// least `split_min` bytes: it is cut at an item boundary near its middle,
/// `head` reads up to the cut (meta and the first items), `body` the items
/// after it (in the layout the file's head shows), and `join` puts the
/// halves together, or says they do not fit
/// (epochs not decreasing across the cut). The result is the sequential
/// one, `head` of the whole file, which is what runs whenever the halves
/// do not both succeed: `head` must end with a complete item exactly at
/// the cut (it sees the end of its input there), so the cut is where the
/// sequential scan would be between two items.
fn split_scan<'f, T: Send>(
    file: &'f std::fs::File,
    split_min: u64,
    head: impl Fn(ReadAt<'f>) -> std::io::Result<Option<T>>,
    body: impl FnOnce(ReadAt<'f>, Layout) -> std::io::Result<Option<T>> + Send,
    join: impl FnOnce(T, T) -> Option<T>,
) -> std::io::Result<Option<T>> {
    let len = file.metadata()?.len();
    let whole = || head(ReadAt { file, pos: 0, end: len });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if len < split_min || cores < 2 {
        return whole();
    }
    let Some(layout) = Items::open(ReadAt { file, pos: 0, end: len })?.map(|(items, _)| items.layout) else {
        return whole();
    };
    let Some(cut) = item_start_after(file, len / 2, &layout.mark())? else { return whole() };
    let halves = std::thread::scope(|scope| {
        let second =
            std::thread::Builder::new().spawn_scoped(scope, || body(ReadAt { file, pos: cut, end: len }, layout));
        let Ok(second) = second else { return None };
        let first = head(ReadAt { file, pos: 0, end: cut });
        Some((first, second.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
    });
    // Whatever goes wrong with the halves (no thread, a half declined or
    // failed, no fit), the sequential scan decides, errors included.
    match halves {
        Some((Ok(Some(a)), Ok(Some(b)))) => match join(a, b) {
            Some(t) => Ok(Some(t)),
            None => whole(),
        },
        _ => whole(),
    }
}

/// The offset of the first item block (after the newline of `mark`:
/// `\n  - \n    epoch: ` in Syck's layout, see [`Layout::mark`]) that
/// starts after `from`, looked for in the next 64 KiB (an item is at most
/// a few KiB). In Syck's layout no other line is exactly `  - `.
fn item_start_after(file: &std::fs::File, from: u64, mark: &[u8]) -> std::io::Result<Option<u64>> {
    let mut window = vec![0u8; 64 << 10];
    let mut r = ReadAt { file, pos: from, end: from + window.len() as u64 };
    let mut n = 0;
    while n < window.len() {
        match r.read(&mut window[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(window[..n].windows(mark.len()).position(|w| w == mark).map(|i| from + i as u64 + 1))
}

/// Reads `file[pos..end]` with `pread`, so two threads can share one file.
struct ReadAt<'a> {
    file: &'a std::fs::File,
    pos: u64,
    end: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = (self.end.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        let got = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += got as u64;
        Ok(got)
    }
}

/// The strict path's events of `items`, checked as they come (decimal
/// epochs, strictly decreasing, sane paths). `Ok(false)`: not for the
/// strict path.
fn strict_events<R: Read>(items: &mut Items<R>, events: &mut Vec<Event>) -> std::io::Result<bool> {
    let mut prev_dot = None;
    let dialect = items.layout.dialect;
    items.scan(|it| {
        let Some(Ok(epoch)) = unquote_epoch(it.epoch).map(Epoch::read) else { return false };
        let dot = dotted_decimal_dot(epoch.as_str());
        if events.last().is_some_and(|prev| !epoch_lt(epoch.as_str(), dot, prev.epoch.as_str(), prev_dot)) {
            return false;
        }
        prev_dot = dot;
        let Some(path) = decode_path(it.path, it.path_special, dialect).map(path_of_decoded) else { return false };
        if path.len() > MAX_PATH {
            return false;
        }
        let sha256 = match it.sha256.map(Sha256Hex::parse) {
            None => None,
            Some(Ok(h)) => Some(h),
            Some(Err(_)) => return false,
        };
        events.push(Event { epoch, path, kind: it.kind, size: it.size, sha256 });
        true
    })
}

/// Longest path the reader accepts (as [`super::read::validate`]).
const MAX_PATH: usize = 4096;

/// Split at the top-level `recent:` line: (meta text, what follows
/// `recent:` on its line, the rest). `None` without such a line or
/// without a `meta:` line before it.
fn split_head(text: &str) -> Option<(&str, &str, &str)> {
    let mut offset = 0;
    loop {
        let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
        let line = &text[offset..line_end];
        if let Some(rest) = line.strip_prefix("recent:") {
            let head = &text[..offset];
            if !head.lines().any(|l| l.starts_with("meta:")) {
                return None;
            }
            let body = &text[(line_end + 1).min(text.len())..];
            return Some((head, rest.trim(), body));
        }
        if line_end >= text.len() || offset > MAX_HEAD {
            return None;
        }
        offset = line_end + 1;
    }
}

/// How far [`split_head`] looks for `recent:`.
const MAX_HEAD: usize = CHUNK;

fn parse_meta(head: &str, dialect: Dialect) -> Option<super::Meta> {
    meta_from_raw(meta_only(head, dialect)?).ok()
}

/// `meta` of the text before `recent:`, its double-quoted scalars read in `dialect`.
fn meta_only(head: &str, dialect: Dialect) -> Option<RawMeta> {
    let meta: MetaOnly = match dialect {
        Dialect::Syck => serde_saphyr::from_str(&resolve_byte_escapes(head)),
        Dialect::Libyaml => serde_saphyr::from_str(head),
    }
    .ok()?;
    Some(meta.meta)
}

/// One item block, `  - ` / `    epoch: ` / `    path: ` / (`    sha256: ` /
/// `    size: ` /) `    type: ` in Syck's layout (byte ranges of the values).
struct Item {
    epoch: std::ops::Range<usize>,
    path: std::ops::Range<usize>,
    /// Whether the path holds a `:` or `#`.
    path_special: bool,
    kind: EventKind,
    /// The sha256's 64 hex digits (checked), when the item has one.
    sha256: Option<std::ops::Range<usize>>,
    /// The size (checked), when the item has one.
    size: Option<u64>,
    next: usize,
}

enum Scan {
    Item(Item),
    /// The block is cut off at the end of the buffer (only when not at EOF).
    More,
    /// Not Syck's layout.
    Bad,
}

/// Whether the line at `p` starts with `key`: `Err(Scan::More)` when the
/// buffer ends in what may be its start (and not at EOF).
#[inline(always)]
fn key_at(b: &[u8], p: usize, eof: bool, key: &[u8]) -> Result<bool, Scan> {
    if b.len() - p < key.len() {
        return if eof || !key.starts_with(&b[p..]) { Ok(false) } else { Err(Scan::More) };
    }
    Ok(has_at(b, p, key))
}

/// The value of an optional `sha256:`/`size:` line whose key ends at
/// `start`: its range without Syck's single quotes (which it puts around
/// a value Perl takes for a number), and where the next line starts.
/// `Err(Scan::More)` when the line is cut off.
#[inline]
fn hash_line(b: &[u8], start: usize, eof: bool) -> Result<(std::ops::Range<usize>, usize), Scan> {
    let end = match find_nl(b, start) {
        Some(nl) => nl,
        None if eof => b.len(),
        None => return Err(Scan::More),
    };
    let v = &b[start..end];
    let quoted = v.len() >= 2 && v[0] == b'\'' && v[v.len() - 1] == b'\'';
    let value = if quoted { start + 1..end - 1 } else { start..end };
    Ok((value, (end + 1).min(b.len())))
}

/// The item block at `p`, in `layout`. At `eof` the last line may lack its newline.
#[inline]
fn next_item(b: &[u8], mut p: usize, eof: bool, layout: &Layout) -> Scan {
    // Syck's: `  - ` and the first key are one 16-byte string, the other keys 10 bytes.
    let keys: [&[u8]; 2] = [&layout.item, &layout.path];
    let mut values = [0..0, 0..0];
    let mut path_special = false;
    for (k, (key, value)) in keys.iter().zip(values.iter_mut()).enumerate() {
        match key_at(b, p, eof, key) {
            Ok(true) => {}
            Ok(false) => return Scan::Bad,
            Err(more) => return more,
        }
        let start = p + key.len();
        let (nl, special) = if k == 1 { find_nl_flag(b, start) } else { (find_nl(b, start), false) };
        let end = match nl {
            Some(nl) => nl,
            None if eof => b.len(),
            None => return Scan::More,
        };
        if k == 1 {
            // Without a newline the type line is missing: the item is Bad
            // whatever the path holds.
            path_special = special;
        }
        *value = start..end;
        p = (end + 1).min(b.len());
    }
    // The optional `sha256` and `size` lines (sorted keys: between path
    // and type), only when the type line does not follow the path at once
    // (the common case stays one compare). Anything irregular is Bad: the
    // line reader then reads the item and names what is wrong.
    let (mut sha256, mut size) = (None, None);
    match key_at(b, p, eof, &layout.kind) {
        Ok(true) => {}
        Err(more) => return more,
        Ok(false) => {
            match key_at(b, p, eof, &layout.sha256) {
                Ok(true) => match hash_line(b, p + layout.sha256.len(), eof) {
                    Ok((v, next)) => {
                        if v.len() != 64 || !b[v.clone()].iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
                            return Scan::Bad;
                        }
                        sha256 = Some(v);
                        p = next;
                    }
                    Err(more) => return more,
                },
                Ok(false) => {}
                Err(more) => return more,
            }
            match key_at(b, p, eof, &layout.size) {
                Ok(true) => match hash_line(b, p + layout.size.len(), eof) {
                    Ok((v, next)) => {
                        let digits = &b[v];
                        let canonical = !digits.is_empty()
                            && digits.len() <= 20
                            && digits.iter().all(u8::is_ascii_digit)
                            && (digits == b"0" || digits[0] != b'0');
                        // At most 20 ASCII digits: the parse is of text, and fails only above u64::MAX.
                        let n = canonical.then(|| std::str::from_utf8(digits).ok()?.parse::<u64>().ok()).flatten();
                        let Some(n) = n else { return Scan::Bad };
                        size = Some(n);
                        p = next;
                    }
                    Err(more) => return more,
                },
                Ok(false) => {}
                Err(more) => return more,
            }
            match key_at(b, p, eof, &layout.kind) {
                Ok(true) => {}
                Ok(false) => return Scan::Bad,
                Err(more) => return more,
            }
        }
    }
    let start = p + layout.kind.len();
    // The type line is `new` or `delete`, nearly always with its newline.
    let rest = &b[start..];
    let (kind, next) = if rest.starts_with(b"new\n") {
        (EventKind::New, start + 4)
    } else if rest.starts_with(b"delete\n") {
        (EventKind::Delete, start + 7)
    } else {
        let end = match find_nl(b, start) {
            Some(nl) => nl,
            None if eof => b.len(),
            None => return Scan::More,
        };
        let kind = match &b[start..end] {
            b"new" => EventKind::New,
            b"delete" => EventKind::Delete,
            _ => return Scan::Bad,
        };
        (kind, (end + 1).min(b.len()))
    };
    if kind != EventKind::New && (sha256.is_some() || size.is_some()) {
        return Scan::Bad;
    }
    let [epoch, path] = values;
    Scan::Item(Item { epoch, path, path_special, kind, sha256, size, next })
}

/// `b[p..]` starts with `key` (at least 8 bytes long, and `b` has room):
/// for keys of up to 16 bytes (every layout's but deep ones), two
/// overlapping 8-byte compares instead of a `memcmp` call.
#[inline(always)]
fn has_at(b: &[u8], p: usize, key: &[u8]) -> bool {
    let n = key.len();
    debug_assert!(n >= 8 && p + n <= b.len());
    if n > 16 {
        return b[p..p + n] == *key;
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    word(b, p) == word(key, 0) && word(b, p + n - 8) == word(key, n - 8)
}

/// The first `\n` at or after `from`, eight bytes at a time.
#[inline]
fn find_nl(b: &[u8], from: usize) -> Option<usize> {
    const NL: u64 = u64::from_le_bytes([b'\n'; 8]);
    const LOW: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let mut i = from;
    while i + 8 <= b.len() {
        let v = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes")) ^ NL;
        // The lowest set bit marks the first zero byte of v, the first '\n'.
        let zero = v.wrapping_sub(LOW) & !v & HIGH;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == b'\n').map(|k| i + k)
}

/// [`find_nl`], and whether a `:` or `#` comes before the newline (or
/// the end), in the same pass.
#[inline]
fn find_nl_flag(b: &[u8], from: usize) -> (Option<usize>, bool) {
    const NL: u64 = u64::from_le_bytes([b'\n'; 8]);
    const COLON: u64 = u64::from_le_bytes([b':'; 8]);
    const HASH: u64 = u64::from_le_bytes([b'#'; 8]);
    const LOW: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    // High bit set in the bytes of v that are zero; spurious bits only
    // above a true zero byte, so the lowest bit, and any bit below a true
    // match of another search, is exact.
    let zero = |v: u64| v.wrapping_sub(LOW) & !v & HIGH;
    let mut special = false;
    let mut i = from;
    while i + 8 <= b.len() {
        let v = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let nl = zero(v ^ NL);
        let sp = zero(v ^ COLON) | zero(v ^ HASH);
        if nl != 0 {
            let below = (nl & nl.wrapping_neg()) - 1;
            return (Some(i + (nl.trailing_zeros() / 8) as usize), special || sp & below != 0);
        }
        special |= sp != 0;
        i += 8;
    }
    for (k, &c) in b[i..].iter().enumerate() {
        match c {
            b'\n' => return (Some(i + k), special),
            b':' | b'#' => special = true,
            _ => {}
        }
    }
    (None, special)
}

/// An epoch value: `'digits.digits'` (1.34) or plain digits (2008, and
/// yaml.v3's `1.79624748999797e+09`, which [`Epoch::read`] takes).
fn unquote_epoch(v: &str) -> Option<&str> {
    let b = v.as_bytes();
    let inner = match b.first()? {
        b'\'' if b.len() >= 2 && b[b.len() - 1] == b'\'' => &v[1..v.len() - 1],
        c if c.is_ascii_digit() => v,
        _ => return None,
    };
    (!inner.bytes().any(|c| c == b'\'')).then_some(inner)
}

/// A plain path value the line reader reads as is (so the strict path
/// may too), given whether it holds a `:` or `#`: it starts with a
/// letter, digit, non-ASCII character, `.` or `_`, and has no `: `, ` #`,
/// trailing space or CR; or it is text without control characters that
/// YAML::Syck itself writes plain (`-a`, `+5`, `~x`, `<<`).
#[inline]
fn plain_path_ok_with(v: &str, colon_or_hash: bool) -> bool {
    let b = v.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else { return false };
    if !(first.is_ascii_alphanumeric() || first >= 0x80 || first == b'.' || first == b'_') {
        return b.iter().all(|&c| c >= b' ' && c != 0x7f) && super::syck::is_plain(v);
    }
    if last == b' ' || last == b'\r' {
        return false;
    }
    if colon_or_hash {
        for (i, &c) in b.iter().enumerate() {
            match c {
                b':' if b.get(i + 1) == Some(&b' ') => return false,
                b'#' if i > 0 && b[i - 1] == b' ' => return false,
                _ => {}
            }
        }
    }
    v != "null"
}

/// A path value decoded as the line reader decodes it (a name that is
/// not UTF-8 as its `NOT_UTF8` carrier), or `None`.
fn decode_path(v: &str, colon_or_hash: bool, dialect: Dialect) -> Option<String> {
    if plain_path_ok_with(v, colon_or_hash) {
        return Some(v.to_string());
    }
    match v.as_bytes().first()? {
        b'\'' | b'"' | b'!' => fast_scalar(v, dialect),
        _ => None,
    }
}

/// Whether [`decode_path`] would succeed, without allocating in the common cases.
fn path_ok(v: &str, colon_or_hash: bool, dialect: Dialect) -> bool {
    if plain_path_ok_with(v, colon_or_hash) {
        return true;
    }
    match v.as_bytes().first() {
        Some(b'\'') if v.len() >= 2 && v.ends_with('\'') && !v[1..v.len() - 1].contains('\'') => true,
        Some(b'\'' | b'"' | b'!') => fast_scalar(v, dialect).is_some(),
        _ => false,
    }
}

/// Size of the buffer the strict path reads through; a head or an item
/// block longer than this goes to the line reader.
const CHUNK: usize = 1 << 20;

/// What `overview` needs of a YAML recentfile (meta, number of events,
/// newest and oldest epoch), read in chunks without keeping the events.
/// Every item is checked as the strict path would check it (layout, known
/// type, decimal epochs in strictly decreasing order, decodable path,
/// UTF-8), so the answer is the full read's; `Ok(None)` when the strict
/// path would give up, and the caller then reads the file in full.
pub fn outline(r: impl Read) -> std::io::Result<Option<Outline>> {
    let Some((mut items, meta)) = Items::open(r)? else { return Ok(None) };
    let mut out = Outline { meta, count: 0, newest: None, oldest: None };
    Ok(outline_items(&mut items, &mut out)?.then_some(out))
}

/// [`outline`] of a whole file, on two threads when it is big (see
/// `split_scan`): overview of a 1M-event collection is mostly this scan of Z.
pub fn outline_file(file: &std::fs::File) -> std::io::Result<Option<Outline>> {
    outline_split(file, SPLIT_MIN_BYTES)
}

/// [`outline_file`], splitting files of at least `split_min` bytes.
fn outline_split(file: &std::fs::File, split_min: u64) -> std::io::Result<Option<Outline>> {
    split_scan(
        file,
        split_min,
        outline,
        |r, layout| {
            let mut items = Items::body(r, layout)?;
            let mut rest = Outline { meta: super::Meta::default(), count: 0, newest: None, oldest: None };
            Ok(outline_items(&mut items, &mut rest)?.then_some(rest))
        },
        |mut first, rest| {
            match (&first.oldest, &rest.newest) {
                (Some(a), Some(b)) if b < a => {}
                _ => return None,
            }
            first.count += rest.count;
            first.oldest = rest.oldest;
            Some(first)
        },
    )
}

/// Count and check the items of `items` into `out` (newest, oldest).
/// `Ok(false)`: not for the strict path.
fn outline_items<R: Read>(items: &mut Items<R>, out: &mut Outline) -> std::io::Result<bool> {
    // The previous epoch's text (the buffer moves on).
    let mut prev = String::new();
    let mut prev_dot = None;
    let dialect = items.layout.dialect;
    let complete = items.scan(|it| {
        // The common case, `'digits.digits'`, in one pass: a dotted decimal
        // of at most 64 characters is a valid epoch. Anything else the long
        // way (the exponent form as its decimal).
        let quoted = it.epoch.len() > 2 && it.epoch.starts_with('\'') && it.epoch.ends_with('\'');
        let inner = if quoted { &it.epoch[1..it.epoch.len() - 1] } else { it.epoch };
        let (read, mut buf);
        let (epoch, dot) = match dotted_decimal_dot(inner).filter(|_| inner.len() <= 64) {
            Some(dot) => (inner, Some(dot)),
            None => {
                buf = [0; 64];
                // yaml.v3's `1.79624748999797e+09` in a few copies.
                match crate::epoch::g_form_decimal(it.epoch.as_bytes(), &mut buf) {
                    Some((decimal, dot)) => (decimal, Some(dot)),
                    None => match unquote_epoch(it.epoch).map(Epoch::read) {
                        Some(Ok(e)) => {
                            read = e;
                            (read.as_str(), dotted_decimal_dot(read.as_str()))
                        }
                        _ => return false,
                    },
                }
            }
        };
        if out.count > 0 && !epoch_lt(epoch, dot, &prev, prev_dot) {
            return false;
        }
        prev_dot = dot;
        if it.path.len() > MAX_PATH || !path_ok(it.path, it.path_special, dialect) {
            return false;
        }
        if out.count == 0 {
            out.newest = Epoch::parse(epoch).ok();
        }
        prev.clear();
        prev.push_str(epoch);
        out.count += 1;
        true
    })?;
    if complete && out.count > 0 {
        out.oldest = Epoch::parse(&prev).ok();
    }
    Ok(complete)
}

/// Item blocks in one strict layout read from a stream through one buffer.
struct Items<R> {
    r: R,
    buf: Vec<u8>,
    filled: usize,
    p: usize,
    eof: bool,
    layout: Layout,
}

/// The value texts of one item block.
struct ItemText<'a> {
    epoch: &'a str,
    path: &'a str,
    /// Whether the path holds a `:` or `#`.
    path_special: bool,
    kind: EventKind,
    /// The sha256's hex digits (checked), if any.
    sha256: Option<&'a str>,
    /// The size, if any.
    size: Option<u64>,
}

impl<R: Read> Items<R> {
    /// Read up to the `recent:` line (it must lie in the first chunk),
    /// parse meta and find the items' layout (from the first item in the
    /// chunk). `None` when that is not a strict layout.
    fn open(r: R) -> std::io::Result<Option<(Items<R>, super::Meta)>> {
        let layout = Layout::syck(Dialect::Syck);
        let mut it = Items { r, buf: vec![0u8; CHUNK], filled: 0, p: 0, eof: false, layout };
        it.fill()?;
        let Some(text) = utf8_prefix(&it.buf[..it.filled]) else { return Ok(None) };
        // Only lines known to be complete count: the last one may be cut.
        let complete = if it.eof { text } else { &text[..text.rfind('\n').map_or(0, |i| i + 1)] };
        let Some((head, rest, body)) = split_head(complete) else { return Ok(None) };
        let dialect = Dialect::of(head);
        let Some(meta) = parse_meta(head, dialect) else { return Ok(None) };
        it.p = complete.len() - body.len();
        it.layout = Layout::of(&it.buf[it.p..it.filled], dialect);
        match rest {
            "" => Ok(Some((it, meta))),
            "[]" => {
                // Nothing but blank space may follow, to the end of the file.
                loop {
                    if !it.buf[it.p..it.filled].iter().all(u8::is_ascii_whitespace) {
                        return Ok(None);
                    }
                    if it.eof {
                        it.p = it.filled;
                        return Ok(Some((it, meta)));
                    }
                    it.p = 0;
                    it.filled = 0;
                    it.fill()?;
                }
            }
            _ => Ok(None),
        }
    }

    /// Item blocks in `layout` from the first byte of `r` on (the second
    /// half of a file cut by [`read_syck_file`]).
    fn body(r: R, layout: Layout) -> std::io::Result<Items<R>> {
        let mut it = Items { r, buf: vec![0u8; CHUNK], filled: 0, p: 0, eof: false, layout };
        it.fill()?;
        Ok(it)
    }

    /// Read until the buffer is full or the stream ends.
    fn fill(&mut self) -> std::io::Result<()> {
        while self.filled < self.buf.len() {
            let n = match self.r.read(&mut self.buf[self.filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                break;
            }
            self.filled += n;
        }
        Ok(())
    }

    /// Call `each` with every item block, in order. `Ok(false)` when a
    /// block is not in the strict layout (or not UTF-8, or longer than the
    /// buffer), or `each` said no.
    fn scan(&mut self, mut each: impl FnMut(ItemText<'_>) -> bool) -> std::io::Result<bool> {
        loop {
            // Validate what is in the buffer once; a character cut at its end waits for the next fill.
            let Some(text) = utf8_prefix(&self.buf[self.p..self.filled]) else { return Ok(false) };
            let eof = self.eof && text.len() == self.filled - self.p;
            let b = text.as_bytes();
            let mut p = 0;
            while p < b.len() {
                match next_item(b, p, eof, &self.layout) {
                    Scan::Item(item) => {
                        let it = ItemText {
                            epoch: &text[item.epoch],
                            path: &text[item.path],
                            path_special: item.path_special,
                            kind: item.kind,
                            sha256: item.sha256.map(|r| &text[r]),
                            size: item.size,
                        };
                        if !each(it) {
                            return Ok(false);
                        }
                        p = item.next;
                    }
                    Scan::Bad => return Ok(false),
                    Scan::More => break,
                }
            }
            self.p += p;
            if self.eof && self.p >= self.filled {
                return Ok(true);
            }
            if self.p == 0 {
                // A block longer than the whole buffer.
                return Ok(false);
            }
            self.buf.copy_within(self.p..self.filled, 0);
            self.filled -= self.p;
            self.p = 0;
            self.fill()?;
        }
    }
}

/// The longest valid UTF-8 prefix, if what follows could be a cut character.
fn utf8_prefix(b: &[u8]) -> Option<&str> {
    match std::str::from_utf8(b) {
        Ok(s) => Some(s),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&b[..e.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// The line-oriented reader for every block layout a real writer uses
/// (YAML::Syck's, yaml.v3's compact items at any indentation, hand-made
/// compact ones). `Ok(None)` means "not recognised, use the general
/// parser"; errors are real errors (e.g. an over-long line).
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
    let crlf = text.split('\n').next().is_some_and(|l| l.ends_with('\r'));
    let head = &text[..recent_off];
    if !head.lines().any(|l| l.starts_with("meta:")) {
        return Ok(None);
    }
    let dialect = Dialect::of(head);
    let Some(meta) = meta_only(head, dialect) else { return Ok(None) };
    let body = &text[recent_off..];
    let body = &body[body.find('\n').map_or(body.len(), |i| i + 1)..];
    let mut events = Vec::new();
    if rest == "[]" {
        if body.lines().any(|l| !l.trim().is_empty()) {
            return Ok(None);
        }
    } else if !rest.is_empty() || !fast_events(body, recent_line, crlf, dialect, &mut events)? {
        return Ok(None);
    }
    Ok(Some(RawDoc { meta: Some(meta), events }))
}

#[derive(Deserialize)]
struct MetaOnly {
    meta: RawMeta,
}

/// One line of `raw` (a piece of `split_inclusive('\n')`, line `line_no`)
/// without its newline, and without the CR before it in a CRLF file; an
/// over-long line is an error.
fn one_line(raw: &str, line_no: usize, crlf: bool) -> Result<&str, ReadError> {
    let line = raw.strip_suffix('\n').unwrap_or(raw);
    if line.len() > MAX_LINE {
        return Err(ReadError::at(line_no, format!("line is {} bytes long (limit {MAX_LINE})", line.len())));
    }
    // A CR before the newline is part of the value (Syck writes a
    // path ending in CR plain), unless the file has CRLF line ends.
    Ok(if crlf { line.strip_suffix('\r').unwrap_or(line) } else { line })
}

/// Read the items of a block sequence (what follows the `recent:` line) at
/// any indentation: Syck's `  - ` with the keys under it, or compact
/// `    - epoch: …` items (yaml.v3) with the other keys at the first key's
/// column; keys `epoch`, `path`, `type` (and `sha256`, `size`) in any order, each value a scalar
/// on its line or a block scalar (`|`, `>`, chomping and indentation
/// indicators, `!!binary`). Double-quoted values are read in `dialect`.
/// Returns false when the layout differs.
fn fast_events(
    body: &str,
    mut line_no: usize,
    crlf: bool,
    dialect: Dialect,
    events: &mut Vec<RawEvent>,
) -> Result<bool, ReadError> {
    let mut cur: Option<RawEvent> = None;
    // The column of the items' dashes (from the first item), and of the
    // current item's keys (from its first key).
    let mut dash: Option<usize> = None;
    let mut keys: Option<usize> = None;
    let mut lines = body.split_inclusive('\n').peekable();
    while let Some(raw) = lines.next() {
        line_no += 1;
        let line = one_line(raw, line_no, crlf)?;
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.bytes().take_while(|&c| c == b' ').count();
        let rest = &line[indent..];
        let is_item = rest.starts_with('-')
            && matches!(rest.as_bytes().get(1), None | Some(b' '))
            && dash.is_none_or(|d| d == indent);
        let (col, kv_text) = if is_item {
            dash = Some(indent);
            if let Some(ev) = cur.take() {
                if !push_complete(ev, events) {
                    return Ok(false);
                }
            }
            cur = Some(RawEvent { line: Some(line_no), ..RawEvent::default() });
            let kv = rest[1..].trim_start_matches(' ');
            if kv.trim_end_matches(' ').is_empty() {
                keys = None;
                continue;
            }
            (line.len() - kv.len(), kv)
        } else if cur.is_some() && dash.is_some_and(|d| indent > d) && keys.is_none_or(|k| k == indent) {
            (indent, rest)
        } else {
            return Ok(false);
        };
        keys = Some(col);
        let Some(ev) = cur.as_mut() else { return Ok(false) };
        let Some((key, value)) = kv_text.split_once(": ").or_else(|| kv_text.strip_suffix(':').map(|k| (k, ""))) else {
            return Ok(false);
        };
        let Some(value) = item_value(key, value, col, &mut lines, &mut line_no, crlf, dialect)? else {
            return Ok(false);
        };
        let slot = match key {
            "epoch" => &mut ev.epoch,
            "path" => &mut ev.path,
            "type" => &mut ev.kind,
            "sha256" => &mut ev.sha256,
            "size" => &mut ev.size,
            _ => return Ok(false),
        };
        if slot.is_some() {
            return Ok(false);
        }
        *slot = value;
    }
    if let Some(ev) = cur.take() {
        if !push_complete(ev, events) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The value of `key`, written `value` on its line at column `col` (a
/// block scalar's content follows in `lines`): `Some(None)` for a path or
/// type that YAML::Syck loads as undef (`path: ~`: Perl writes back a
/// path of "\r" so; one event to skip), `None` where the line reader
/// declines.
fn item_value<'a>(
    key: &str,
    value: &str,
    col: usize,
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
    line_no: &mut usize,
    crlf: bool,
    dialect: Dialect,
) -> Result<Option<Option<String>>, ReadError> {
    if let Some((header, binary)) = block_header(value) {
        let Some(text) = block_scalar(lines, line_no, crlf, col, header)? else { return Ok(None) };
        return Ok(match binary {
            false => Some(Some(text)),
            true => base64_decode(&text).map(|bytes| Some(not_utf8_path(&bytes))),
        });
    }
    Ok(match fast_scalar(value, dialect) {
        Some(v) => Some(Some(v)),
        None if key != "epoch" && matches!(value.trim_end_matches(' '), "" | "~" | "null") => Some(None),
        None => None,
    })
}

/// Keep an item that has an epoch (one without a path or type is skipped
/// by [`super::read::validate`]).
fn push_complete(ev: RawEvent, events: &mut Vec<RawEvent>) -> bool {
    if ev.epoch.is_none() {
        return false;
    }
    events.push(ev);
    true
}

/// How a block scalar ends (its chomping indicator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chomp {
    /// `-`: no final line break.
    Strip,
    /// No indicator: one final line break.
    Clip,
    /// `+`: every final line break.
    Keep,
}

/// A block scalar's header: `|` (literal) or `>` (folded), then at most
/// one indentation indicator (`1`–`9`) and one chomping indicator, in
/// either order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BlockHeader {
    folded: bool,
    chomp: Chomp,
    indent: Option<usize>,
}

/// The header of a block scalar value (`|-`, `>`, `|2+`, `!!binary |`),
/// and whether it is tagged `!!binary` (yaml.v3 writes a name that is not
/// UTF-8 so); `None` for any other value (a comment after the header
/// included: the general parser reads that).
fn block_header(v: &str) -> Option<(BlockHeader, bool)> {
    let v = v.trim_end_matches(' ');
    let (binary, v) = match v.strip_prefix("!!binary ") {
        Some(rest) => (true, rest.trim_start_matches(' ')),
        None => (false, v),
    };
    let mut bytes = v.bytes();
    let folded = match bytes.next()? {
        b'|' => false,
        b'>' => true,
        _ => return None,
    };
    let (mut chomp, mut indent) = (None, None);
    for c in bytes {
        match c {
            b'-' if chomp.is_none() => chomp = Some(Chomp::Strip),
            b'+' if chomp.is_none() => chomp = Some(Chomp::Keep),
            b'1'..=b'9' if indent.is_none() => indent = Some(usize::from(c - b'0')),
            _ => return None,
        }
    }
    Some((BlockHeader { folded, chomp: chomp.unwrap_or(Chomp::Clip), indent }, binary))
}

/// The content of a block scalar from the lines that follow its header
/// (consumed up to the first line that is less indented and not blank),
/// the value of a key at column `parent`, as libyaml's scanner reads it:
/// the content indentation is `parent` plus the indicator, or that of the
/// first non-blank line (at least `parent + 1`); folding joins two
/// adjacent lines that do not start with a blank by a space; chomping
/// strips, clips or keeps the final line breaks. `None` where this reader
/// is unsure of YAML's reading (a tab in the indentation, a CR inside a
/// line): the general parser then reads the file.
fn block_scalar<'a>(
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
    line_no: &mut usize,
    crlf: bool,
    parent: usize,
    header: BlockHeader,
) -> Result<Option<String>, ReadError> {
    let mut indent = header.indent.map_or(0, |i| parent + i);
    let mut out = String::new();
    let mut trailing_breaks = 0;
    // The first breaks, and the indentation where no indicator gives it.
    let Some(max_indent) = block_breaks(lines, line_no, crlf, indent, &mut trailing_breaks)? else { return Ok(None) };
    if indent == 0 {
        indent = max_indent.max(parent + 1);
    }
    let (mut leading_break, mut leading_blank) = (false, false);
    while let Some(&raw) = lines.peek() {
        let line = one_line(raw, *line_no + 1, crlf)?;
        if line.bytes().take_while(|&c| c == b' ').count() < indent {
            break;
        }
        let content = &line[indent..];
        if content.contains('\r') {
            return Ok(None);
        }
        let trailing_blank = content.starts_with([' ', '\t']);
        if header.folded && leading_break && !leading_blank && !trailing_blank {
            if trailing_breaks == 0 {
                out.push(' ');
            }
        } else if leading_break {
            out.push('\n');
        }
        out.extend(std::iter::repeat_n('\n', trailing_breaks));
        trailing_breaks = 0;
        leading_blank = trailing_blank;
        out.push_str(content);
        lines.next();
        *line_no += 1;
        // The last line of the file may have no break.
        leading_break = raw.ends_with('\n');
        if block_breaks(lines, line_no, crlf, indent, &mut trailing_breaks)?.is_none() {
            return Ok(None);
        }
    }
    if header.chomp != Chomp::Strip && leading_break {
        out.push('\n');
    }
    if header.chomp == Chomp::Keep {
        out.extend(std::iter::repeat_n('\n', trailing_breaks));
    }
    Ok(Some(out))
}

/// Consume the blank lines that follow in a block scalar whose content is
/// at column `indent` (0: not known yet), counting them into `breaks`;
/// the deepest indentation seen, or `None` for a tab where indentation is
/// expected. A line of more than `indent` spaces is content, not blank.
fn block_breaks<'a>(
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
    line_no: &mut usize,
    crlf: bool,
    indent: usize,
    breaks: &mut usize,
) -> Result<Option<usize>, ReadError> {
    let mut max_indent = 0;
    while let Some(&raw) = lines.peek() {
        let line = one_line(raw, *line_no + 1, crlf)?;
        let spaces = line.bytes().take_while(|&c| c == b' ').count();
        let eaten = if indent == 0 { spaces } else { spaces.min(indent) };
        max_indent = max_indent.max(eaten);
        if (indent == 0 || eaten < indent) && line[eaten..].starts_with('\t') {
            return Ok(None);
        }
        // A blank line ends with its break; the file's last piece has none.
        if eaten < line.len() || !raw.ends_with('\n') {
            break;
        }
        *breaks += 1;
        lines.next();
        *line_no += 1;
    }
    Ok(Some(max_indent))
}

/// The bytes of standard base64 text (`!!binary`), whitespace ignored;
/// `None` for anything else (other characters, a bad length or padding).
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(4) {
        return None;
    }
    let pad = digits.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(digits.len() / 4 * 3);
    for (k, quad) in digits.chunks(4).enumerate() {
        let last = k + 1 == digits.len() / 4;
        let used = if last { 4 - pad } else { 4 };
        let mut n = 0u32;
        for (i, &c) in quad.iter().enumerate() {
            n = (n << 6) | if i < used { value(c)? } else { 0 };
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..used - 1]);
    }
    Some(out)
}

/// One flow scalar on one line: plain, single- or double-quoted (the
/// escapes read in `dialect`), or `!!binary` base64. `None` for anything
/// else (the general parser will decide).
fn fast_scalar(v: &str, dialect: Dialect) -> Option<String> {
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
            // A name that is not UTF-8 (Syck's bytes) is carried as its bytes (see `NOT_UTF8`).
            Some(not_utf8_path(&decode_double_quoted(inner.as_bytes(), dialect)?))
        }
        b'!' => {
            let base64 = v.strip_prefix("!!binary ")?;
            Some(not_utf8_path(&base64_decode(base64).filter(|_| !base64.trim().is_empty())?))
        }
        b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'|' | b'>' | b'%' | b'@' | b'`' | b'#' => None,
        _ => {
            if v.contains(" #") || v.contains(": ") || v == "~" || v == "null" {
                return None;
            }
            Some(v.to_string())
        }
    }
}

/// The inside of a double-quoted scalar on one line, decoded to bytes in
/// `dialect` (protocol.md 6.1). Both write YAML's one-character escapes.
/// To YAML::Syck `\xHH` is a byte: it writes each byte of a non-ASCII
/// character as its own `\xHH` (`ä` is `\xC3\xA4`), and a name that is
/// not UTF-8 the same way. To libyaml (and so yaml.v3) `\xHH`, `\uHHHH`
/// and `\UHHHHHHHH` are code points (`\x80` is U+0080, UTF-8 C2 80), and it
/// also writes `\N`, `\_`, `\L`, `\P` (U+0085, U+00A0, U+2028, U+2029),
/// `\'` and a backslash before a tab. `None` for an unescaped quote, an
/// escape the dialect does not write, or a code point that is no character.
fn decode_double_quoted(inner: &[u8], dialect: Dialect) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter().copied();
    let hex = |n: usize, bytes: &mut std::iter::Copied<std::slice::Iter<u8>>| {
        (0..n).try_fold(0u32, |v, _| Some(v * 16 + char::from(bytes.next()?).to_digit(16)?))
    };
    while let Some(c) = bytes.next() {
        match c {
            b'"' => return None,
            b'\\' => {
                let one = match bytes.next()? {
                    b'\\' => b'\\',
                    b'"' => b'"',
                    b'/' => b'/',
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'0' => 0,
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'e' => 0x1b,
                    b'f' => 0x0c,
                    b'v' => 0x0b,
                    b' ' => b' ',
                    b'x' if dialect == Dialect::Syck => hex(2, &mut bytes)? as u8,
                    e if dialect == Dialect::Libyaml => {
                        let c = match e {
                            b'x' => char::from_u32(hex(2, &mut bytes)?)?,
                            b'u' => char::from_u32(hex(4, &mut bytes)?)?,
                            b'U' => char::from_u32(hex(8, &mut bytes)?)?,
                            b'N' => '\u{85}',
                            b'_' => '\u{a0}',
                            b'L' => '\u{2028}',
                            b'P' => '\u{2029}',
                            b'\'' => '\'',
                            b'\t' => '\t',
                            _ => return None,
                        };
                        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                        continue;
                    }
                    _ => return None,
                };
                out.push(one);
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// The bytes of a one-line scalar `v` that may hold bytes that are not
/// UTF-8: double-quoted (escapes decoded), single-quoted (`''` is a
/// quote), or plain (trailing spaces dropped; a trailing CR is kept, as
/// the line reader keeps it: Syck writes a name ending in CR plain, and
/// rrr reads it back exactly). `None` when it is none of these.
pub(crate) fn scalar_bytes(v: &[u8]) -> Option<Vec<u8>> {
    match v.first()? {
        b'"' => decode_double_quoted(v.trim_ascii_end().strip_prefix(b"\"")?.strip_suffix(b"\"")?, Dialect::Syck),
        b'\'' => {
            let inner = v.trim_ascii_end().strip_prefix(b"'")?.strip_suffix(b"'")?;
            let mut out = Vec::with_capacity(inner.len());
            let mut i = 0;
            while i < inner.len() {
                if inner[i] == b'\'' {
                    if inner.get(i + 1) != Some(&b'\'') {
                        return None;
                    }
                    i += 1;
                }
                out.push(inner[i]);
                i += 1;
            }
            Some(out)
        }
        b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'#' => None,
        _ => {
            let mut end = v.len();
            while end > 0 && v[end - 1] == b' ' {
                end -= 1;
            }
            let v = &v[..end];
            let has = |n: &[u8]| v.windows(n.len()).any(|w| w == n);
            (!has(b" #") && !has(b": ")).then(|| v.to_vec())
        }
    }
}

/// YAML::Syck writes each byte of a non-ASCII character in a double-quoted
/// scalar as its own `\xHH` (Perl hands it bytes): `"\xC3\xA4: b"` is
/// `ä: b`. A YAML reader takes `\xC3` for the character U+00C3, so before
/// text goes to serde-saphyr every run of such escapes that spells UTF-8
/// is replaced by its characters, which YAML allows raw in double quotes.
/// Escapes inside single-quoted or plain scalars are text and stay.
fn resolve_byte_escapes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("\\x") {
        return std::borrow::Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Where a quoted scalar may start: after a space, a flow indicator or
    // at the start of a line (after its indentation).
    let mut token_start = true;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' if token_start => {
                i = copy_double_quoted(text, i, &mut out);
                token_start = false;
            }
            b'\'' if token_start => {
                let end = single_quoted_end(b, i);
                out.push_str(&text[i..end]);
                i = end;
                token_start = false;
            }
            _ => {
                let end = (i + 1..=b.len()).find(|&e| text.is_char_boundary(e)).unwrap_or(b.len());
                out.push_str(&text[i..end]);
                token_start = matches!(c, b' ' | b'\n' | b'\t' | b'[' | b'{' | b',');
                i = end;
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Copies the double-quoted scalar that starts at `text[start]` into
/// `out` with its UTF-8 `\xHH` runs resolved (see
/// [`resolve_byte_escapes`]); returns where the copy stopped.
fn copy_double_quoted(text: &str, start: usize, out: &mut String) -> usize {
    let b = text.as_bytes();
    // A scalar whose bytes are no UTF-8 text is carried whole as its
    // bytes (`NOT_UTF8`), never read as the Latin-1 characters its bytes
    // also spell.
    if let Some((end, bytes)) = double_quoted_at(b, start) {
        if std::str::from_utf8(&bytes).is_err() {
            out.push('"');
            out.push_str(&not_utf8_path(&bytes).replace('\0', "\\x00"));
            out.push('"');
            return end;
        }
    }
    out.push('"');
    let mut i = start + 1;
    let mut run: Vec<u8> = Vec::new();
    let flush = |run: &mut Vec<u8>, out: &mut String| {
        match std::str::from_utf8(run) {
            Ok(s) => out.push_str(s),
            // Not a character (only in a scalar with an escape Syck never
            // writes): marked, never read as Latin-1.
            Err(_) => {
                out.push_str("\\0\\0");
                out.push_str(&String::from_utf8_lossy(run));
            }
        }
        run.clear();
    };
    while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
        let hex = |k: usize| b.get(k).and_then(|&h| (h as char).to_digit(16));
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            if let (Some(hi), Some(lo)) = (hex(i + 2), hex(i + 3)) {
                let byte = (hi * 16 + lo) as u8;
                if byte >= 0x80 {
                    run.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        flush(&mut run, out);
        let n = if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] != b'\n' { 2 } else { 1 };
        // Whole characters: an escape's second byte is ASCII or starts a
        // character, as does every `i` here.
        let end = (i + n..=b.len()).find(|&e| text.is_char_boundary(e)).unwrap_or(b.len());
        out.push_str(&text[i..end]);
        i = end;
    }
    flush(&mut run, out);
    i
}

/// The end of the single-quoted scalar that starts at `b[start]`, copied
/// as it is (`''` is a quote; it ends at the line's end at the latest).
fn single_quoted_end(b: &[u8], start: usize) -> usize {
    let mut end = start + 1;
    while end < b.len() && b[end] != b'\n' {
        if b[end] == b'\'' {
            if b.get(end + 1) == Some(&b'\'') {
                end += 2;
                continue;
            }
            return end + 1;
        }
        end += 1;
    }
    end
}

/// The end (after the closing quote) and decoded bytes of the
/// double-quoted scalar on one line that starts at `b[start]`.
fn double_quoted_at(b: &[u8], start: usize) -> Option<(usize, Vec<u8>)> {
    let mut k = start + 1;
    while k < b.len() && b[k] != b'\n' {
        match b[k] {
            b'\\' => k += 2,
            b'"' => return Some((k + 1, decode_double_quoted(&b[start + 1..k], Dialect::Syck)?)),
            _ => k += 1,
        }
    }
    None
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
    let options = general_options(text.len());
    let text = &*match Dialect::of(head_of(text)) {
        Dialect::Syck => resolve_byte_escapes(text),
        Dialect::Libyaml => std::borrow::Cow::Borrowed(text),
    };
    let yaml_err = |e: serde_saphyr::Error| ReadError::general(format!("not a valid recentfile: {e}"));
    if first.starts_with('-') || first.starts_with('[') {
        let events: Vec<GeneralEvent> = serde_saphyr::from_str_with_options(text, options).map_err(yaml_err)?;
        return Ok(RawDoc { meta: None, events: events.into_iter().map(GeneralEvent::into_raw).collect() });
    }
    if first.is_empty() {
        return Err(ReadError::general("empty document".into()));
    }
    let doc: GeneralDoc = serde_saphyr::from_str_with_options(text, options).map_err(yaml_err)?;
    Ok(RawDoc {
        meta: Some(doc.meta.unwrap_or_default()),
        events: doc.recent.unwrap_or_default().into_iter().map(GeneralEvent::into_raw).collect(),
    })
}

/// The text before the first line that starts with `recent:` (all of it
/// when there is none): where [`Dialect::of`] looks.
fn head_of(text: &str) -> &str {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("recent:") {
            return &text[..offset];
        }
        offset += line.len();
    }
    text
}

/// serde-saphyr's options for a document of `len` bytes: its budget
/// against alias bombs, with room for as many nodes, events and scalar
/// bytes as the text itself has bytes (a valid recentfile the size of
/// CPAN's Z, a million events, has about 4 million nodes in 100 MB), so
/// that no valid file is refused for its size while expansion stays
/// linear in the input.
fn general_options(len: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = budget.max_nodes.max(len);
    budget.max_events = budget.max_events.max(len);
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(len);
    budget.max_reader_input_bytes = budget.max_reader_input_bytes.map(|b| b.max(len));
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// The last resort for a document that does not parse as a whole: its
/// structure (a `meta:` mapping, then `recent:` and its items, each
/// starting with a line `-` at the first item's indentation) is found line by
/// line, and each item is parsed alone, so that one unreadable event is one
/// skipped event ([`RawEvent::problem`]). `None` when the structure itself
/// is broken or an unreadable item has no readable `epoch:` line.
fn itemwise_parse(text: &str) -> Option<RawDoc> {
    if text.split('\n').any(|l| l.len() > MAX_LINE) {
        return None;
    }
    let (head, rest, body) = split_head(text)?;
    if !rest.is_empty() {
        return None;
    }
    let dialect = Dialect::of(head);
    let meta = meta_only(head, dialect)?;
    let first_line = head.split('\n').count() + 1;
    // The items' indentation: that of the first line that is not blank.
    let dash = body.split('\n').find(|l| !l.trim().is_empty()).map_or(0, |l| l.len() - l.trim_start_matches(' ').len());
    // (first line number, lines) of each item.
    let mut items: Vec<(usize, Vec<&str>)> = Vec::new();
    for (n, line) in body.split('\n').enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent == dash && line[indent..].starts_with('-') {
            items.push((first_line + n, vec![line]));
        } else if line.trim().is_empty() {
            // Inside an item it may be part of a block scalar.
            if let Some(item) = items.last_mut() {
                item.1.push(line);
            }
        } else if indent > dash {
            items.last_mut()?.1.push(line);
        } else {
            return None;
        }
    }
    let mut events = Vec::with_capacity(items.len());
    let crlf = text.split('\n').next().is_some_and(|l| l.ends_with('\r'));
    for (line, lines) in items {
        // Nearly every item is in a layout the line reader takes.
        let mut one = Vec::with_capacity(1);
        let text = lines.join("\n") + "\n";
        if let (Ok(true), 1) = (fast_events(&text, line - 1, crlf, dialect, &mut one), one.len()) {
            events.append(&mut one);
            continue;
        }
        let block: String = lines.iter().map(|l| format!("{}\n", l.get(dash..).unwrap_or(""))).collect();
        let parsed: Result<Vec<GeneralEvent>, _> = match dialect {
            Dialect::Syck => serde_saphyr::from_str(&resolve_byte_escapes(&block)),
            Dialect::Libyaml => serde_saphyr::from_str(&block),
        };
        let problem = match parsed {
            Ok(mut one) if one.len() == 1 => {
                events.push(RawEvent { line: Some(line), ..one.remove(0).into_raw() });
                continue;
            }
            Ok(_) => "not one event".to_string(),
            Err(e) => e.to_string().lines().next().unwrap_or_default().to_string(),
        };
        let epoch = lines.iter().find_map(|l| {
            let kv = l.trim_start_matches([' ', '-']);
            fast_scalar(kv.strip_prefix("epoch:")?.trim(), dialect)
        })?;
        events.push(RawEvent {
            line: Some(line),
            epoch: Some(epoch),
            problem: Some(format!("the event cannot be read: {problem}")),
            ..RawEvent::default()
        });
    }
    Some(RawDoc { meta: Some(meta), events })
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
    sha256: Option<Text>,
    size: Option<Text>,
}

impl GeneralEvent {
    fn into_raw(self) -> RawEvent {
        RawEvent {
            line: None,
            epoch: self.epoch.map(|t| t.0),
            path: self.path.map(|t| t.0),
            kind: self.kind.map(|t| t.0),
            sha256: self.sha256.map(|t| t.0),
            size: self.size.map(|t| t.0),
            problem: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_escapes_become_characters_for_serde_saphyr() {
        for (text, want) in [
            ("a: \"\\xC3\\xA4: b\"\n", "a: \"ä: b\"\n"),
            // A byte that is no character: the scalar is carried as its bytes (`NOT_UTF8`).
            ("- \"x\\x7F\\xE2\\x82\\xAC\\\"\\xC3\"\n", "- \"\\x00\\x00787fe282ac22c3\"\n"),
            ("a: '\\xC3\\xA4'\nb: c\\xC3\\xA4\n", "a: '\\xC3\\xA4'\nb: c\\xC3\\xA4\n"),
            ("a: \"\\\\xC3\\xA4\"\n", "a: \"\\x00\\x005c784333a4\"\n"),
            ("ä: \"ü\\xC3\\xA4\"", "ä: \"üä\""),
        ] {
            assert_eq!(resolve_byte_escapes(text), want, "{text:?}");
        }
        let meta = parse_meta("meta: \n  comment: \"\\xC3\\xA4: b\"\n", Dialect::Syck).unwrap();
        assert_eq!(meta.comment.as_deref(), Some("ä: b"));
    }

    #[test]
    fn fast_scalars() {
        assert_eq!(fast_scalar("'1700000000.5'", Dialect::Syck).as_deref(), Some("1700000000.5"));
        assert_eq!(fast_scalar("'it''s'", Dialect::Syck).as_deref(), Some("it's"));
        assert_eq!(fast_scalar("'a'b'", Dialect::Syck), None);
        assert_eq!(fast_scalar("\"a: b\"", Dialect::Syck).as_deref(), Some("a: b"));
        assert_eq!(fast_scalar("\"\\x7F\\0\\n\"", Dialect::Syck).as_deref(), Some("\x7f\0\n"));
        assert_eq!(fast_scalar("\"\\xC3\\xA4: b\"", Dialect::Syck).as_deref(), Some("ä: b"));
        assert_eq!(fast_scalar("\"\\xC3: b\"", Dialect::Syck).as_deref(), Some("\0\0c33a2062"), "not UTF-8: its bytes");
        assert_eq!(fast_scalar("id/A/x.tar.gz", Dialect::Syck).as_deref(), Some("id/A/x.tar.gz"));
        assert_eq!(fast_scalar("a #comment", Dialect::Syck), None);
        assert_eq!(fast_scalar("&anchor x", Dialect::Syck), None);
    }

    /// What the line reader and the validator make of `text`.
    fn slow(text: &str) -> Result<Recentfile, ReadError> {
        super::super::read::validate(parse(text)?)
    }

    fn outline_of(text: &str) -> Option<Outline> {
        outline(text.as_bytes()).unwrap()
    }

    const HEAD: &str = "--- \nmeta: \n  dirtymark: '1700000000.5'\n  interval: 1h\n  protocol: 1\nrecent: \n";

    fn item(epoch: &str, path: &str, kind: &str) -> String {
        format!("  - \n    epoch: {epoch}\n    path: {path}\n    type: {kind}\n")
    }

    fn every_fixture() -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "yaml") {
                    out.push(p);
                }
            }
        }
        out
    }

    #[test]
    fn strict_path_agrees_with_line_reader_on_every_fixture() {
        let files = every_fixture();
        assert!(files.len() > 50);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let strict = parse_syck(&text).unwrap_or_else(|| panic!("{}: not taken by the strict path", f.display()));
            assert_eq!(strict, slow(&text).unwrap(), "{}", f.display());
            assert_eq!(outline_of(&text), Some(Outline::of(&strict)), "{}", f.display());
        }
    }

    #[test]
    fn strict_path_takes_both_syck_styles_and_quoted_paths() {
        for body in [
            item("'1700000002.5'", "id/A/AB/ABC/Foo-1.0.tar.gz", "new") + &item("'1700000001.0'", "b", "delete"),
            item("1225000000.94011", "authors/id/A/x", "new") + &item("1225000000", "y", "new"),
            item("'1700000002.5'", "\"a: b\"", "new") + &item("'1700000001.5'", "'it''s'", "new"),
            item("'1700000002.5'", "\"x\\x7F\\ty\"", "new") + &item("'1700000001.5'", "'123'", "new"),
            item("'1700000002.5'", "ünïcödé/päth", "new"),
            // Compact items (yaml.v3's layout at indent 2 and 4, and deeper).
            "  - epoch: '1700000002.5'\n    path: a\n    type: new\n  - epoch: 1.7e+09\n    path: b\n    type: new\n"
                .into(),
            "    - epoch: 1.7e+09\n      path: a\n      type: new\n".into(),
            format!("{0}- epoch: 1.7e+09\n{0}  path: a\n{0}  type: new\n", " ".repeat(20)),
            String::new(),
        ] {
            let text = format!("{HEAD}{body}");
            let strict = parse_syck(&text).unwrap_or_else(|| panic!("not taken: {text}"));
            assert_eq!(strict, slow(&text).unwrap(), "{text}");
            assert_eq!(outline_of(&text), Some(Outline::of(&strict)), "{text}");
        }
        let empty = HEAD.replace("recent: \n", "recent: []\n\n");
        assert_eq!(parse_syck(&empty), Some(slow(&empty).unwrap()));
        assert_eq!(outline_of(&empty).unwrap().count, 0);
    }

    #[test]
    fn strict_path_leaves_everything_else_to_the_other_readers() {
        let ok = item("'1700000002.5'", "a", "new");
        for body in [
            ok.replace('\n', "\r\n"),                                                      // CRLF
            ok.clone() + "# comment\n",                                                    // comment
            "  - epoch: '1700000002.5'\n    path: a\n    path: b\n    type: new\n".into(), // key twice
            ok.replace("    type: new\n", "    type: new\n    extra: 1\n"),                // extra key
            ok.replace("new", "brandnew"),                                                 // skipped type
            ok.clone() + &item("'1700000003.5'", "b", "new"),                              // unsorted
            ok.clone() + &item("'1700000002.5'", "b", "new"),                              // duplicate
            item("'17000x'", "a", "new"),                                                  // bad epoch
            item("'1700000002.5'", " a", "new"),                                           // leading space
            item("'1700000002.5'", "a ", "new"),                                           // trailing space
            item("'1700000002.5'", "a #c", "new"),                                         // comment
            item("'1700000002.5'", "~", "new"),                                            // null
            item("'1700000002.5'", &"x".repeat(5000), "new"),                              // long path
            ok[..ok.len() - 5].to_string(),                                                // truncated
            ok.clone() + "\n",                                                             // blank line
        ] {
            let text = format!("{HEAD}{body}");
            assert_eq!(parse_syck(&text), None, "{text:?}");
            assert_eq!(outline_of(&text), None, "{text:?}");
        }
        let trailing = HEAD.replace("recent: \n", "recent: []\n") + &ok;
        assert_eq!(parse_syck(&trailing), None);
        assert_eq!(outline_of(&trailing), None);
        assert_eq!(parse_syck("[1, 2]"), None);
        assert_eq!(outline_of("- epoch: 1\n"), None);
    }

    #[test]
    fn chunk_boundaries_do_not_matter() {
        // Over three buffers of items, some with two-byte characters, so
        // that blocks and characters are cut at the buffer's end.
        let mut text = HEAD.to_string();
        let mut n = 0;
        while text.len() < 3 * CHUNK + 1000 {
            let path = if n % 3 == 0 { format!("id/ü/{n}ä") } else { format!("id/A/{n}.tar.gz") };
            text.push_str(&item(&format!("'{}.5'", 1_800_000_000 - n), &path, "new"));
            n += 1;
        }
        for cut in 0..7 {
            let t = &text[..text.len() - cut];
            let Some(strict) = parse_syck(t) else {
                assert!(slow(t).is_err() || cut > 0, "cut {cut}");
                continue;
            };
            assert_eq!(strict, slow(t).unwrap(), "cut {cut}");
            assert_eq!(outline_of(t), Some(Outline::of(&strict)), "cut {cut}");
        }
        assert_eq!(parse_syck(&text).unwrap().events.len(), n as usize);
        assert_eq!(outline_of(&text).unwrap().count, n as usize);
    }

    /// A file of `n` strict items (epochs down from 1.8e9) in a temp file.
    fn strict_file(n: u64, edit: impl Fn(u64, String) -> String) -> tempfile::NamedTempFile {
        let mut text = HEAD.to_string();
        for i in 0..n {
            text.push_str(&edit(i, item(&format!("'{}.5'", 1_800_000_000 - i), &format!("id/A/{i}ü.tar.gz"), "new")));
        }
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn two_thread_scans_are_the_sequential_scans() {
        let f = strict_file(3000, |_, it| it);
        let split = read_syck_split(f.as_file(), 1).unwrap().unwrap();
        assert_eq!(split.events.len(), 3000);
        let outline = outline_split(f.as_file(), 1).unwrap();
        assert_eq!(outline, Some(Outline::of(&split)));
        assert_eq!(Some(split), read_syck(std::fs::File::open(f.path()).unwrap()).unwrap());
        // Epochs that do not decrease (around the cut, so one case is the
        // first item after it), or a bad item in the second half: the
        // strict path declines, as it does sequentially.
        for bad in (1490..1510).chain([2900]) {
            let f = strict_file(3000, |i, it| if i == bad { item("'1800000000.5'", "x", "new") } else { it });
            assert_eq!(read_syck_split(f.as_file(), 1).unwrap(), None, "item {bad}");
            assert_eq!(outline_split(f.as_file(), 1).unwrap(), None, "item {bad}");
            let f = strict_file(3000, |i, it| if i == bad { it.replace("type: new", "type: brandnew") } else { it });
            assert_eq!(read_syck_split(f.as_file(), 1).unwrap(), None, "item {bad}");
            assert_eq!(outline_split(f.as_file(), 1).unwrap(), None, "item {bad}");
        }
    }

    #[test]
    fn emitter_shortcuts_match_syck_scalars() {
        for s in ["1700000000.5", "0.5", "1700000000", "5", "007.5", "1.", ".5", "1.5.5", "12345678901"] {
            let mut out = Vec::new();
            push_epoch(&mut out, s);
            assert_eq!(out, scalar(s).as_bytes(), "{s}");
        }
        for s in [
            "id/A/AB/Foo-1.tar.gz",
            "a/b: c",
            "a/ #b",
            "-/x",
            "y",
            "1/2",
            "a/\u{7f}",
            "ä/b",
            "0x/1e5",
            "a b/c",
            "dir/Foo-1.0:",
            "a/b:c",
            "nan/1",
            "Null\u{a0}x/y",
            "off\u{2028}/y",
            "offx/y",
        ] {
            let mut out = Vec::new();
            push_path(&mut out, s.as_bytes());
            assert_eq!(out, scalar(s).as_bytes(), "{s}");
        }
    }
}

#[cfg(test)]
mod pins_hashes;
#[cfg(test)]
mod pins_layouts;
#[cfg(test)]
mod pins_scalars;
#[cfg(test)]
mod pins_strict;
