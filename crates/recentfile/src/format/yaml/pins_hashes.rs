//! Pins of `size` and `sha256` in events (protocol.md 4.2): written as
//! YAML::Syck 1.34 and JSON::PP's canonical writer give them, read by
//! every YAML reader (strict, split, line reader, serde-saphyr) and the
//! JSON reader alike, and refused as hostile input with the line named.

use super::super::{parse_bytes, serialize, Format, Producer};
use super::*;
use crate::beacon::FileDigest;

const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const DIGITS: &str = "1234567890123456789012345678901234567890123456789012345678901234";

fn producer() -> Producer {
    Producer { program: "t".into(), time: Epoch::parse("1700000000.5").unwrap() }
}

/// Three events: hashed (size of 9 and of 14 digits: Syck quotes the
/// latter), an all-digit sha256 (Syck quotes it), a delete without.
fn hashed() -> Recentfile {
    let digest = |size: u64, sha: &str| Some(FileDigest { size, sha256: Sha256Hex::parse(sha).unwrap() });
    let e = |s: &str| Epoch::parse(s).unwrap();
    let mut rf = Recentfile::from_events(vec![
        Event::new(e("1700000004.5"), "a b/x.tar.gz", EventKind::New).with_digest(digest(123_456_789, SHA)),
        Event::new(e("1700000003.5"), "big", EventKind::New).with_digest(digest(12_345_678_901_234, DIGITS)),
        Event::new(e("1700000002.5"), "gone", EventKind::Delete),
        Event::new(e("1700000001.5"), "empty", EventKind::New).with_digest(digest(0, SHA)),
        Event::new(e("1700000000.5"), "plain", EventKind::New),
    ]);
    rf.meta.protocol = Some("1".into());
    rf
}

/// What the line reader and the validator make of `text`.
fn slow(text: &str) -> Result<Recentfile, ReadError> {
    super::super::read::validate(parse(text)?)
}

#[test]
fn hashed_events_are_written_as_yaml_syck_dumps_them() {
    let text = String::from_utf8(emit(&hashed(), &producer())).unwrap();
    // The bytes YAML::Syck 1.34 dumps for {epoch, path, sha256, size, type}
    // with a Perl integer size (probed: `perl -MYAML::Syck -e 'print Dump(…)'`).
    let want = format!(
        "  - \n    epoch: '1700000004.5'\n    path: a b/x.tar.gz\n    sha256: {SHA}\n    size: 123456789\n    type: new\n  - \n    epoch: '1700000003.5'\n    path: big\n    sha256: '{DIGITS}'\n    size: '12345678901234'\n    type: new\n  - \n    epoch: '1700000002.5'\n    path: gone\n    type: delete\n  - \n    epoch: '1700000001.5'\n    path: empty\n    sha256: {SHA}\n    size: 0\n    type: new\n  - \n    epoch: '1700000000.5'\n    path: plain\n    type: new\n"
    );
    assert!(text.ends_with(&want), "{text}");
}

#[test]
fn hashed_events_are_written_as_the_perl_json_writer_gives_them() {
    let json = String::from_utf8(serialize(&hashed(), Format::Json, &producer())).unwrap();
    assert!(
        json.contains(&format!(
            r#"{{"epoch":"1700000004.5","path":"a b/x.tar.gz","sha256":"{SHA}","size":123456789,"type":"new"}}"#
        )),
        "{json}"
    );
    assert!(json.contains(r#"{"epoch":"1700000002.5","path":"gone","type":"delete"}"#), "{json}");
    assert_eq!(parse_bytes(json.as_bytes(), Format::Json).unwrap().events, hashed().events);
}

#[test]
fn every_yaml_reader_reads_the_keys() {
    let want = hashed().events;
    let text = String::from_utf8(emit(&hashed(), &producer())).unwrap();
    // The strict path takes Syck's layout with the keys (quoted or not).
    assert_eq!(parse_syck(&text).expect("strict").events, want);
    // The two-thread split, cut inside the list.
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), &text).unwrap();
    assert_eq!(read_syck_split(f.as_file(), 1).unwrap().expect("split").events, want);
    assert_eq!(outline_split(f.as_file(), 1).unwrap().expect("outline").count, want.len());
    // The line reader.
    assert_eq!(slow(&text).unwrap().events, want);
    // yaml.v3's compact layout, keys in another order: strict and line reader.
    let compact = format!(
        "meta:\n    protocol: 1\nrecent:\n    - epoch: 1700000004.5\n      path: a\n      sha256: {SHA}\n      size: 5\n      type: new\n    - epoch: 1700000003.5\n      type: new\n      size: 6\n      path: b\n"
    );
    let rf = parse_bytes(compact.as_bytes(), Format::Yaml).unwrap();
    assert_eq!((rf.events[0].size, rf.events[0].sha256.as_ref().map(|s| s.as_str())), (Some(5), Some(SHA)));
    assert_eq!((rf.events[1].size, rf.events[1].sha256.clone()), (Some(6), None));
    // Flow style goes to serde-saphyr.
    let flow =
        format!("---\nmeta: {{protocol: 1}}\nrecent: [{{epoch: '1.5', path: a, sha256: {SHA}, size: 7, type: new}}]\n");
    let rf = parse_bytes(flow.as_bytes(), Format::Yaml).unwrap();
    assert_eq!(rf.events[0].digest().map(|d| d.size), Some(7));
}

#[test]
fn an_item_cut_anywhere_asks_for_more() {
    let text = String::from_utf8(emit(&hashed(), &producer())).unwrap();
    let body = &text[text.find("recent: \n").unwrap() + 9..];
    let layout = Layout::syck(Dialect::Syck);
    let b = body.as_bytes();
    let Scan::Item(first) = next_item(b, 0, true, &layout) else { panic!("an item") };
    let Scan::Item(second) = next_item(b, first.next, true, &layout) else { panic!("an item") };
    assert_eq!(second.size, Some(12_345_678_901_234));
    for cut in first.next..second.next {
        assert!(matches!(next_item(&b[..cut], first.next, false, &layout), Scan::More), "cut at {cut}");
    }
}

#[test]
fn hostile_values_are_errors_naming_the_line() {
    let file = |sha: &str, size: &str, kind: &str| {
        format!("--- \nmeta: \n  protocol: 1\nrecent: \n  - \n    epoch: '2.5'\n    path: ok\n    type: new\n  - \n    epoch: '1.5'\n    path: a\n    sha256: {sha}\n    size: {size}\n    type: {kind}\n")
    };
    for (sha, size, kind, says) in [
        (&SHA.to_uppercase()[..], "1", "new", "not a sha256"),
        (&SHA[1..], "1", "new", "not a sha256"),
        ("''", "1", "new", "not a sha256"),
        (SHA, "-1", "new", "not a byte count"),
        (SHA, "1.5", "new", "not a byte count"),
        (SHA, "01", "new", "not a byte count"),
        (SHA, "'+1'", "new", "not a byte count"),
        (SHA, "18446744073709551616", "new", "not a byte count"),
        (SHA, "''", "new", "not a byte count"),
        (SHA, "1", "delete", "only new events have them"),
    ] {
        let text = file(sha, size, kind);
        assert!(parse_syck(&text).is_none(), "{text}");
        let err = parse_bytes(text.as_bytes(), Format::Yaml).unwrap_err().to_string();
        assert!(err.contains("line 9") && err.contains(says), "{sha} {size} {kind}: {err}");
    }
    // The largest size there is, quoted as Syck quotes it.
    let text = file(SHA, "'18446744073709551615'", "new");
    assert_eq!(parse_syck(&text).unwrap().events[1].size, Some(u64::MAX));
    // JSON: a number that is no integer, a string that is no number.
    for size in ["1.0", "1e3", "-5", "\"x\"", "true"] {
        let json = format!(
            r#"{{"meta":{{"protocol":1}},"recent":[{{"epoch":"1.5","path":"a","size":{size},"type":"new"}}]}}"#
        );
        let err = parse_bytes(json.as_bytes(), Format::Json).unwrap_err().to_string();
        assert!(err.contains("event #1") && err.contains("not a byte count"), "{size}: {err}");
    }
}

#[test]
fn unknown_event_keys_are_still_ignored() {
    // As before the hashes: an unknown key takes the item off the strict
    // path and the line reader, and the general reader reads the event without it.
    let text =
        "--- \nmeta: \n  protocol: 1\nrecent: \n  - \n    epoch: '1.5'\n    mode: 644\n    path: a\n    type: new\n";
    assert!(parse_syck(text).is_none());
    let rf = parse_bytes(text.as_bytes(), Format::Yaml).unwrap();
    assert_eq!(rf.events, vec![Event::new(Epoch::parse("1.5").unwrap(), "a", EventKind::New)]);
}
