//! The recentfile model: one index file of the collection (protocol.md 4).
//!
//! A recentfile is a mapping with `meta` and `recent`. `recent` lists events
//! `{epoch, path, type}` newest first, in strictly decreasing, unique epochs.
//! Every meta value is kept as the exact text that was read (epochs above all:
//! see [`crate::epoch`]), so that re-writing a file the Perl tools wrote gives
//! the same bytes except `Producers`.
//!
//! ```text
//! ---
//! meta:
//!   aggregator: [1h, 6h, 1d, 1W, 1M, 1Q, 1Y, Z]   # block style when written
//!   dirtymark: '1700000000.5'
//!   filenameroot: RECENT
//!   interval: 1h
//!   merged: {epoch: '1700000400.5', into_interval: 6h, time: '1700000500.5'}
//!   minmax: {max: '1700000400.5', min: '1699990300.0', mtime: '1700000400'}
//!   protocol: 1
//!   serializer_suffix: .yaml
//! recent:
//!   - epoch: '1700000400.5'
//!     path: id/T/TI/TICK/Tick-2.tar.gz
//!     type: new
//! ```
//!
//! History: protocol 0 was a bare list of events (no meta); it is still read.
//! Protocol 1 (this one) has been written since 2008.

pub(crate) mod json;
pub mod read;
pub mod syck;
pub mod yaml;

use crate::beacon::{FileDigest, Sha256Hex};
use crate::epoch::Epoch;
pub use crate::path::RelPath;
use std::fmt;

pub use read::{parse_bytes, ReadError};

/// A set of paths borrowed from events. foldhash is several times faster
/// than std's SipHash on such keys and still seeded per process, so paths
/// from a hostile upstream file cannot be chosen to collide.
pub(crate) type PathSet<'a> = foldhash::HashSet<&'a [u8]>;

/// An empty [`PathSet`] with room for `n` paths.
pub(crate) fn path_set<'a>(n: usize) -> PathSet<'a> {
    PathSet::with_capacity_and_hasher(n, Default::default())
}

/// For the events of `lists` taken in order (as if concatenated), whether
/// each is the first of its path. News and merges ask this of a million
/// events at once; a hash set of that size spends its time on cache
/// misses, so this sorts (hash, position) pairs instead and compares the
/// paths of equal hashes exactly. Linear in the duplicates of one path,
/// however many (a hostile file may list one path a million times).
pub(crate) fn first_of_each_path(lists: &[&[Event]]) -> Vec<bool> {
    use std::hash::BuildHasher;
    let all: Vec<&Event> = lists.iter().flat_map(|l| l.iter()).collect();
    let hasher = foldhash::fast::RandomState::default();
    let mut keyed: Vec<(u64, usize)> = all.iter().enumerate().map(|(i, e)| (hasher.hash_one(&e.path), i)).collect();
    // Equal hashes end up adjacent, in list order.
    keyed.sort_unstable();
    let mut first = vec![true; all.len()];
    // The distinct paths of the current run of equal hashes (one, unless
    // two paths collide), by position.
    let mut run_paths: Vec<usize> = Vec::new();
    for (k, &(hash, i)) in keyed.iter().enumerate() {
        if k == 0 || keyed[k - 1].0 != hash {
            run_paths.clear();
            run_paths.push(i);
        } else if run_paths.iter().any(|&j| all[j].path == all[i].path) {
            first[i] = false;
        } else {
            run_paths.push(i);
        }
    }
    first
}

/// `new` (created or changed) or `delete`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// The path was created or changed: a mirror fetches it.
    New,
    /// The path was removed: a mirror deletes it (if it owns it).
    Delete,
}

impl EventKind {
    /// The `type` value as written: `new` or `delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::New => "new",
            EventKind::Delete => "delete",
        }
    }
    /// Exactly `new` or `delete` (the reference's unanchored match let `brandnew` through).
    pub fn parse(s: &str) -> Option<EventKind> {
        match s {
            "new" => Some(EventKind::New),
            "delete" => Some(EventKind::Delete),
            _ => None,
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it happened; unique within a file (protocol.md 7.4).
    pub epoch: Epoch,
    /// Relative to the collection's root, `/`-separated, any bytes but NUL
    /// (protocol.md 4.2, 14).
    pub path: RelPath,
    /// The `type` key.
    pub kind: EventKind,
    /// The file's size in bytes as recorded (`size`, only on `new` events
    /// of a collection that hashes: protocol.md 4.2).
    pub size: Option<u64>,
    /// The file's sha256 as recorded (`sha256`, as `size`).
    pub sha256: Option<Sha256Hex>,
}

impl Event {
    /// An event from its three parts, without size or hash (the path is not
    /// checked here: see [`check_relative_path`]).
    pub fn new(epoch: Epoch, path: impl Into<RelPath>, kind: EventKind) -> Event {
        Event { epoch, path: path.into(), kind, size: None, sha256: None }
    }

    /// The same event recording `digest` (size and sha256), or neither.
    pub fn with_digest(mut self, digest: Option<FileDigest>) -> Event {
        (self.size, self.sha256) = match digest {
            Some(d) => (Some(d.size), Some(d.sha256)),
            None => (None, None),
        };
        self
    }

    /// The recorded size and sha256, when the event has both.
    pub fn digest(&self) -> Option<FileDigest> {
        Some(FileDigest { size: self.size?, sha256: self.sha256.clone()? })
    }
}

/// `meta.merged`: absent (never merged, and always on Z), reset (`{}`), or
/// the newest epoch of the target right after the last merge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Merged {
    /// No `merged` key: never merged, or the Z file.
    #[default]
    Absent,
    /// `merged: {}`: after a dirty insertion or straight after init.
    Reset,
    /// The last merge into the next larger file (protocol.md 4.1, 9).
    Into {
        /// The target's newest epoch right after the merge.
        epoch: Option<Epoch>,
        /// The target's interval spec (informational).
        into_interval: Option<String>,
        /// The clock at merge time, as text (informational).
        time: Option<String>,
    },
}

impl Merged {
    /// The only field the protocol uses.
    pub fn epoch(&self) -> Option<&Epoch> {
        match self {
            Merged::Into { epoch, .. } => epoch.as_ref(),
            _ => None,
        }
    }
}

/// `meta.minmax`, maintained as the reference does (protocol.md 8.5).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MinMax {
    /// The newest epoch of `recent` as the writer tracked it (`~` when empty).
    pub max: Option<Epoch>,
    /// The oldest epoch of `recent` as the writer tracked it (`~` when empty).
    pub min: Option<Epoch>,
    /// Integer seconds (as text) of the previous version's mtime.
    pub mtime: Option<String>,
}

/// The `meta` mapping. Unknown lower-case keys are dropped on read (rrr
/// never writes keys Perl readers do not know: they would make them die).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Provenance as read, in file order; rebuilt on every write.
    pub producers: Vec<(String, String)>,
    /// Interval specs as written, the principal's own first.
    pub aggregator: Vec<String>,
    /// Path-normalisation method name; only written if someone set it.
    pub canonize: Option<String>,
    /// Free text; only written if set.
    pub comment: Option<String>,
    /// Time of the last out-of-order insertion (protocol.md 8.4); a change tells
    /// mirrors to forget what they have of this collection (protocol.md 12.10).
    pub dirtymark: Option<Epoch>,
    /// The file names' stem, `RECENT` (protocol.md 2).
    pub filenameroot: Option<String>,
    /// This file's own window, as an interval spec (`1h`, …, `Z`).
    pub interval: Option<String>,
    /// The last merge into the next larger file.
    pub merged: Merged,
    /// Epoch bounds and previous mtime, as the writer maintains them.
    pub minmax: Option<MinMax>,
    /// Protocol number as text (`1`); `None` for protocol 0 files.
    pub protocol: Option<String>,
    /// `.yaml` or `.json`: the collection's serializer.
    pub serializer_suffix: Option<String>,
    /// `Hash`: the algorithm the collection's writers record in `new`
    /// events (`sha256`), rrr's own key (protocol.md 4.1): capitalised,
    /// so the Perl reader skips it as it skips `Producers`.
    pub hash: Option<String>,
}

impl Meta {
    /// `Producers.time`, shown by overview as "Produced".
    pub fn produced(&self) -> Option<&str> {
        self.producers.iter().find(|(k, _)| k == "time").map(|(_, v)| v.as_str())
    }
}

/// A diagnostic about one event that the reader skipped (unknown type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The event's line in a YAML file (`None` for JSON).
    pub line: Option<usize>,
    /// Its epoch, as written.
    pub epoch: String,
    /// Its path, as read (empty when it had none).
    pub path: RelPath,
    /// Why it was skipped.
    pub reason: String,
    /// Whether a writer that rewrote the file without this event would
    /// lose one that other readers use (an item rrr's YAML reader
    /// rejects, which YAML::Syck may read): rrr's writers
    /// refuse to rewrite such a file. An unknown type, an over-long path
    /// and a missing path (`path: ~`) are useless to every reader.
    pub keep_on_rewrite: bool,
}

/// One recentfile: meta plus events, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recentfile {
    /// The `meta` mapping (empty for protocol 0).
    pub meta: Meta,
    /// The `recent` list, newest first, epochs strictly decreasing.
    pub events: Vec<Event>,
    /// Events the reader skipped, with why (never fatal: protocol.md 4.2).
    pub skipped: Vec<Skipped>,
}

impl Recentfile {
    /// A file with these events and empty meta (tests, merges).
    pub fn from_events(events: Vec<Event>) -> Recentfile {
        Recentfile { events, ..Recentfile::default() }
    }

    /// The first (newest) event, if any.
    pub fn newest(&self) -> Option<&Event> {
        self.events.first()
    }
    /// The last (oldest) event, if any.
    pub fn oldest(&self) -> Option<&Event> {
        self.events.last()
    }
}

/// Serializers rrr reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.yaml`, byte-identical to YAML::Syck 1.34 (protocol.md 6.1).
    Yaml,
    /// `.json`, one line (protocol.md 6.2).
    Json,
}

impl Format {
    /// The format a `serializer_suffix` (or file name suffix) names.
    pub fn from_suffix(suffix: &str) -> Option<Format> {
        match suffix {
            ".yaml" => Some(Format::Yaml),
            ".json" => Some(Format::Json),
            _ => None,
        }
    }
    /// The file name suffix, with its dot.
    pub fn suffix(self) -> &'static str {
        match self {
            Format::Yaml => ".yaml",
            Format::Json => ".json",
        }
    }
}

/// What the writer puts under `Producers`.
#[derive(Clone, Debug)]
pub struct Producer {
    /// `$0`: the program name as invoked.
    pub program: String,
    /// `time`: the clock reading at write time, as the reference writes it.
    pub time: Epoch,
}

/// Serialize in the given format (YAML::Syck 1.34 bytes, or one-line JSON).
///
/// `Producers` is rebuilt from `producer`; everything else is written from
/// `rf` as it is (protocol.md 4.1, 6), so a file read and re-serialized keeps its
/// bytes apart from `Producers`.
///
/// ```
/// use recentfile::format::Producer;
/// use recentfile::{parse_bytes, serialize, Epoch, Event, EventKind, Format, Recentfile};
///
/// let mut rf = Recentfile::from_events(vec![
///     Event::new(Epoch::parse("1700000400.5")?, "id/T/TI/TICK/Tick-2.tar.gz", EventKind::New),
///     Event::new(Epoch::parse("1700000300.25")?, "id/T/TI/TICK/Tick-1.tar.gz", EventKind::Delete),
/// ]);
/// rf.meta.interval = Some("1h".into());
/// rf.meta.protocol = Some("1".into());
/// let producer = Producer { program: "my-indexer".into(), time: Epoch::parse("1700000401.0")? };
///
/// let yaml = serialize(&rf, Format::Yaml, &producer);
/// let text = String::from_utf8(yaml.clone())?;
/// // YAML::Syck's style: a space after `---` and after a key whose value
/// // is a block, epochs quoted.
/// assert!(text.starts_with("--- \nmeta: \n"));
/// assert!(text.contains("  - \n    epoch: '1700000400.5'\n"));
/// // What was written reads back as the same events.
/// assert_eq!(parse_bytes(&yaml, Format::Yaml)?.events, rf.events);
///
/// let json = serialize(&rf, Format::Json, &producer);
/// assert_eq!(parse_bytes(&json, Format::Json)?.events, rf.events);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn serialize(rf: &Recentfile, format: Format, producer: &Producer) -> Vec<u8> {
    match format {
        Format::Yaml => yaml::emit(rf, producer),
        Format::Json => json::emit(rf, producer).into_bytes(),
    }
}

/// Why a path may not be written into a recentfile or acted on by a mirror:
/// empty, NUL, absolute, over 4096 bytes, empty, `.` and `..` components.
/// Every other byte is allowed, control characters (tab, newline, CR, DEL,
/// C1) and bytes that are not UTF-8 included: the kernel, the Perl tools
/// and rsync take them, and YAML::Syck writes them.
pub fn check_relative_path(path: impl AsRef<[u8]>) -> Result<(), PathRuleError> {
    let path = path.as_ref();
    if path.is_empty() {
        return Err(PathRuleError::Empty);
    }
    if path.contains(&0) {
        return Err(PathRuleError::Nul);
    }
    if path.starts_with(b"/") {
        return Err(PathRuleError::Absolute);
    }
    if path.len() > 4096 {
        return Err(PathRuleError::TooLong(path.len()));
    }
    for comp in path.split(|&b| b == b'/') {
        match comp {
            b"" => return Err(PathRuleError::EmptyComponent),
            b"." => return Err(PathRuleError::DotComponent(".")),
            b".." => return Err(PathRuleError::DotComponent("..")),
            _ => {}
        }
    }
    Ok(())
}

/// The rule of [`check_relative_path`] a path breaks; the message does
/// not repeat the path (callers name it, escaped as they show paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathRuleError {
    /// No bytes.
    #[error("empty path")]
    Empty,
    /// A NUL byte.
    #[error("path contains NUL")]
    Nul,
    /// Starts with `/`.
    #[error("absolute path")]
    Absolute,
    /// Over 4096 bytes (the length).
    #[error("path is {0} bytes long (limit 4096)")]
    TooLong(usize),
    /// `//` or a trailing `/`.
    #[error("empty path component (`//` or trailing `/`)")]
    EmptyComponent,
    /// A `.` or `..` component.
    #[error("`{0}` path component")]
    DotComponent(&'static str),
}

/// A path made safe to print on one line, as `ls -b` (GNU's escape
/// quoting) shows it: `\\` for a backslash, `\t`, `\n`, `\r`, `\a`,
/// `\b`, `\f`, `\v`, every other control character (C0, DEL, C1) as
/// the octal escapes of its UTF-8 bytes (`\033`, `\177`, `\302\205`),
/// and every byte that is not part of a UTF-8 character as its octal
/// escape (`\377`). Unlike `ls -b`, spaces stay as they are (news
/// separates fields by tabs).
pub fn escape_path(path: impl AsRef<[u8]>) -> String {
    let mut rest = path.as_ref();
    let mut out = String::with_capacity(rest.len());
    while !rest.is_empty() {
        let (text, bad) = match std::str::from_utf8(rest) {
            Ok(text) => (text, 0),
            Err(e) => (
                std::str::from_utf8(&rest[..e.valid_up_to()]).expect("valid up to here"),
                e.error_len().unwrap_or(rest.len() - e.valid_up_to()),
            ),
        };
        escape_text(text, &mut out);
        for b in &rest[text.len()..text.len() + bad] {
            out.push_str(&format!("\\{b:03o}"));
        }
        rest = &rest[text.len() + bad..];
    }
    out
}

/// [`escape_path`] of text.
fn escape_text(path: &str, out: &mut String) {
    for c in path.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            }
            c => out.push(c),
        }
    }
}

/// Whether [`escape_path`] would change `path` (cheap: most paths are
/// plain ASCII without a backslash).
pub fn needs_escape(path: impl AsRef<[u8]>) -> bool {
    let path = path.as_ref();
    // 0xC2 starts U+0080..U+00BF, where the C1 controls are.
    path.iter().any(|&b| b < 0x20 || b == 0x7f || b == b'\\' || b >= 0x80)
        && (std::str::from_utf8(path).is_err() || escape_path(path).as_bytes() != path)
}

/// [`escape_path`] for messages: a path over 256 bytes (a hostile one can
/// be megabytes) is cut, with its length said.
pub fn shown_path(path: impl AsRef<[u8]>) -> String {
    const SHOWN: usize = 256;
    let path = path.as_ref();
    if path.len() <= SHOWN {
        return escape_path(path);
    }
    // Cut before a UTF-8 continuation byte, not inside a character.
    let mut end = SHOWN;
    while end > SHOWN - 3 && path[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    format!("{}… ({} bytes)", escape_path(&path[..end]), path.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_over_long_path_is_one_skipped_event() {
        let long = "a/".repeat(2500) + "x";
        let yaml = format!(
            "--- \nmeta: \n  dirtymark: '1700000000.5'\n  interval: 1h\n  protocol: 1\nrecent: \n  - \n    epoch: '1700000003.5'\n    path: ok1\n    type: new\n  - \n    epoch: '1700000002.5'\n    path: {long}\n    type: new\n  - \n    epoch: '1700000001.5'\n    path: ok2\n    type: delete\n"
        );
        let json = format!(
            r#"{{"meta":{{"interval":"1h","protocol":1}},"recent":[{{"epoch":"3.5","path":"ok1","type":"new"}},{{"epoch":"2.5","path":"{long}","type":"new"}},{{"epoch":"1.5","path":"ok2","type":"delete"}}]}}"#
        );
        for (bytes, format) in [(yaml.as_bytes(), Format::Yaml), (json.as_bytes(), Format::Json)] {
            let rf = parse_bytes(bytes, format).unwrap();
            let paths: Vec<&crate::RelPath> = rf.events.iter().map(|e| &e.path).collect();
            assert_eq!(paths, ["ok1", "ok2"], "{format:?}");
            assert_eq!(rf.skipped.len(), 1);
            assert_eq!(rf.skipped[0].path, long);
            assert!(rf.skipped[0].reason.contains("5001 bytes long (limit 4096)"), "{:?}", rf.skipped[0]);
        }
        let shown = shown_path(&long);
        assert!(shown.len() < 300 && shown.ends_with("… (5001 bytes)"), "{shown}");
        assert_eq!(shown_path("a\nb"), "a\\nb");
    }

    fn events(paths: &[&str]) -> Vec<Event> {
        paths
            .iter()
            .enumerate()
            .map(|(i, p)| Event::new(Epoch::from_whole_seconds(1000 - i as i64), *p, EventKind::New))
            .collect()
    }

    #[test]
    fn paths_are_escaped_as_ls_b_does() {
        for (path, shown) in [
            ("plain/a b", "plain/a b"),
            ("a\tb", "a\\tb"),
            ("c\nd", "c\\nd"),
            ("e\rf", "e\\rf"),
            ("g\x01h", "g\\001h"),
            ("i\x7fj", "i\\177j"),
            ("k\u{85}l", "k\\302\\205l"),
            ("o\\p", "o\\\\p"),
            ("q\x1br", "q\\033r"),
            ("\x07\x08\x0b\x0c", "\\a\\b\\v\\f"),
            ("ä\u{a0}é", "ä\u{a0}é"),
        ] {
            assert_eq!(escape_path(path), shown, "{path:?}");
            assert_eq!(needs_escape(path), path != shown, "{path:?}");
        }
    }

    #[test]
    fn first_of_each_path_across_lists() {
        let a = events(&["x", "y", "x"]);
        let b = events(&["z", "y", "w", "z"]);
        assert_eq!(first_of_each_path(&[&a, &b]), [true, true, false, true, false, true, false]);
        assert_eq!(first_of_each_path(&[]), Vec::<bool>::new());
        let same = events(&["p"; 5000]);
        let flags = first_of_each_path(&[&same]);
        assert!(flags[0] && flags[1..].iter().all(|f| !f));
    }

    proptest! {
        /// The sorting version agrees with a plain hash set walk.
        #[test]
        fn first_of_each_path_is_a_set_walk(lists in proptest::collection::vec(
            proptest::collection::vec("[a-d]{1,2}", 0..30), 0..4)) {
            let lists: Vec<Vec<Event>> = lists.iter().map(|l| events(&l.iter().map(String::as_str).collect::<Vec<_>>())).collect();
            let slices: Vec<&[Event]> = lists.iter().map(Vec::as_slice).collect();
            let mut seen = std::collections::HashSet::new();
            let expected: Vec<bool> = slices.iter().flat_map(|l| l.iter()).map(|e| seen.insert(e.path.clone())).collect();
            prop_assert_eq!(first_of_each_path(&slices), expected);
        }
    }

    #[test]
    fn relative_path_checks() {
        for ok in [
            "a",
            "id/A/AB/x.tar.gz",
            ".hidden",
            "a..b",
            "...",
            "a b/c: d #e",
            "a\nb",
            "a\tb/\r",
            "\x01\x1f\x7f",
            "c1\u{85}\u{9f}",
            "\r",
        ] {
            assert!(check_relative_path(ok).is_ok(), "{ok:?}");
        }
        for bad in ["", "/abs", "../x", "a/../b", "a/./b", "a//b", "a/", ".", "..", "a\0b", "\0"] {
            assert!(check_relative_path(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod pins;
