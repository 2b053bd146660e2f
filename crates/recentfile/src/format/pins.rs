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
    rf.meta.protocol = Some("1".into());
    let producer = Producer { program: "pins".into(), time: epoch("1700000401.0") };
    let yaml = serialize(&rf, Format::Yaml, &producer);
    assert!(yaml.starts_with(b"--- \nmeta: \n"), "{}", String::from_utf8_lossy(&yaml));
    assert_eq!(parse_bytes(&yaml, Format::Yaml).unwrap().events, rf.events);
    let json = serialize(&rf, Format::Json, &producer);
    assert!(json.starts_with(b"{\"meta\":"), "{}", String::from_utf8_lossy(&json));
    assert_eq!(parse_bytes(&json, Format::Json).unwrap().events, rf.events);
}
