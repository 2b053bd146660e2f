//! Pins of the format model's small helpers.

use super::*;

/// `path_set(n)` has room for `n` paths before it grows.
#[test]
fn path_set_has_the_room_asked_for() {
    let set = path_set(1000);
    assert!(set.is_empty());
    assert!(set.capacity() >= 1000, "{}", set.capacity());
}

/// The serializer a suffix names, and back.
#[test]
fn format_suffixes() {
    assert_eq!(Format::from_suffix(".yaml"), Some(Format::Yaml));
    assert_eq!(Format::from_suffix(".json"), Some(Format::Json));
    for other in ["", ".yml", "yaml", ".JSON", ".yaml "] {
        assert_eq!(Format::from_suffix(other), None, "{other:?}");
    }
    assert_eq!(Format::Yaml.suffix(), ".yaml");
    assert_eq!(Format::Json.suffix(), ".json");
}

/// `serialize` writes the format asked for, and it reads back.
#[test]
fn serialize_writes_each_format() {
    let epoch = |s: &str| Epoch::parse(s).unwrap();
    let mut rf = Recentfile::from_events(vec![
        Event::new(epoch("1700000400.5"), "id/T/Tick-2.tar.gz", EventKind::New),
        Event::new(epoch("1700000300.25"), "id/T/Tick-1.tar.gz", EventKind::Delete),
    ]);
    assert_eq!(rf.events.len(), 2, "from_events keeps the events");
    rf.meta.protocol = Some("1".into());
    let producer = Producer { program: "pins".into(), time: epoch("1700000401.0") };
    let yaml = serialize(&rf, Format::Yaml, &producer);
    assert!(yaml.starts_with(b"--- \nmeta: \n"), "{}", String::from_utf8_lossy(&yaml));
    assert_eq!(parse_bytes(&yaml, Format::Yaml).unwrap().events, rf.events);
    let json = serialize(&rf, Format::Json, &producer);
    assert!(json.starts_with(b"{\"meta\":"), "{}", String::from_utf8_lossy(&json));
    assert_eq!(parse_bytes(&json, Format::Json).unwrap().events, rf.events);
}

/// The length limit is 4096 bytes, inclusive.
#[test]
fn path_length_limit() {
    let at_limit = "a".repeat(4096);
    assert_eq!(check_relative_path(&at_limit), Ok(()));
    let over = "a".repeat(4097);
    assert_eq!(check_relative_path(&over), Err("path is 4097 bytes long (limit 4096)".to_owned()));
}

/// Bytes that are not UTF-8 are escaped one by one, wherever they are,
/// and a character cut off at the end is escaped byte by byte.
#[test]
fn escape_path_of_invalid_bytes() {
    for (input, want) in [
        (&b"a\xffb"[..], "a\\377b"),
        (b"\xff\xfe", "\\377\\376"),
        (b"a\xe2\x82", "a\\342\\202"),
        (b"\xe2\x82", "\\342\\202"),
        (b"x\xc3\xa9\xff\xc3\xa9", "xé\\377é"),
    ] {
        assert_eq!(escape_path(input), want, "{input:?}");
    }
}

/// Every character that `escape_path` changes makes `needs_escape` true,
/// and plain text, spaces and non-ASCII letters leave it false.
#[test]
fn needs_escape_agrees_with_escape_path() {
    for s in ["\\", "\x7f", "\u{85}", "\t", "a\x1fb", "\u{9f}"] {
        assert!(needs_escape(s), "{s:?}");
        assert_ne!(escape_path(s), s);
    }
    for s in ["plain/path", "a b", "é/ü", "~!@#$%^&*()"] {
        assert!(!needs_escape(s), "{s:?}");
        assert_eq!(escape_path(s), s);
    }
    assert!(needs_escape(b"\xff"));
}
