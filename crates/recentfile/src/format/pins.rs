//! Pins of the recentfile model and its helpers: the names of types and
//! formats, the path rules at their limits, how a path is shown, and what
//! a read error says.

use super::*;

fn ev(secs: i64, path: &str, kind: EventKind) -> Event {
    Event::new(Epoch::from_whole_seconds(secs), path, kind)
}

#[test]
fn event_kinds_by_name() {
    for (kind, name) in [(EventKind::New, "new"), (EventKind::Delete, "delete")] {
        assert_eq!(kind.as_str(), name);
        assert_eq!(kind.to_string(), name);
        assert_eq!(EventKind::parse(name), Some(kind));
    }
    for other in ["", "New", "brandnew", "deleted", "new "] {
        assert_eq!(EventKind::parse(other), None, "{other:?}");
    }
}

#[test]
fn formats_by_suffix() {
    for (format, suffix) in [(Format::Yaml, ".yaml"), (Format::Json, ".json")] {
        assert_eq!(format.suffix(), suffix);
        assert_eq!(Format::from_suffix(suffix), Some(format));
    }
    for other in ["", "yaml", ".yml", ".sto", ".dd", ".yaml.tmp"] {
        assert_eq!(Format::from_suffix(other), None, "{other:?}");
    }
}

#[test]
fn merged_epoch_is_only_that_of_a_merge() {
    let e = Epoch::parse("1700000400.5").unwrap();
    let into = Merged::Into { epoch: Some(e.clone()), into_interval: Some("6h".into()), time: None };
    assert_eq!(into.epoch(), Some(&e));
    let no_epoch = Merged::Into { epoch: None, into_interval: Some("6h".into()), time: Some("1".into()) };
    assert_eq!(no_epoch.epoch(), None);
    assert_eq!(Merged::Reset.epoch(), None);
    assert_eq!(Merged::Absent.epoch(), None);
}

#[test]
fn produced_is_the_producers_time() {
    let mut meta = Meta::default();
    assert_eq!(meta.produced(), None);
    meta.producers = vec![("$0".into(), "/usr/bin/rrr-server".into()), ("time".into(), "1700000401.25".into())];
    assert_eq!(meta.produced(), Some("1700000401.25"));
    meta.producers.retain(|(k, _)| k != "time");
    assert_eq!(meta.produced(), None);
}

#[test]
fn newest_and_oldest_are_the_ends_of_the_list() {
    let events = vec![ev(30, "c", EventKind::New), ev(20, "b", EventKind::Delete), ev(10, "a", EventKind::New)];
    let rf = Recentfile::from_events(events.clone());
    assert_eq!(rf.events, events);
    assert_eq!(rf.newest(), Some(&events[0]));
    assert_eq!(rf.oldest(), Some(&events[2]));
    assert_eq!(rf.meta, Meta::default());
    let empty = Recentfile::from_events(Vec::new());
    assert_eq!((empty.newest(), empty.oldest()), (None, None));
}

#[test]
fn a_path_of_4096_bytes_is_allowed_and_one_more_is_not() {
    let limit = "a/".repeat(2047) + "bc";
    assert_eq!(limit.len(), 4096);
    assert_eq!(check_relative_path(&limit).map_err(|e| e.to_string()), Ok(()));
    let over = limit.clone() + "d";
    assert_eq!(
        check_relative_path(&over).map_err(|e| e.to_string()),
        Err("path is 4097 bytes long (limit 4096)".to_string())
    );
    assert_eq!(check_relative_path(".../a").map_err(|e| e.to_string()), Ok(()));
    assert_eq!(check_relative_path("a/./b").map_err(|e| e.to_string()), Err("`.` path component".to_string()));
    assert_eq!(check_relative_path("a/..").map_err(|e| e.to_string()), Err("`..` path component".to_string()));
    assert_eq!(
        check_relative_path("a//b").map_err(|e| e.to_string()),
        Err("empty path component (`//` or trailing `/`)".to_string())
    );
}

#[test]
fn a_name_of_only_high_bytes_is_escaped() {
    // Nothing below 0x80 to notice: a C1 control and bytes that are not UTF-8.
    for (bytes, shown) in [(&b"\xc2\x85"[..], "\\302\\205"), (b"\xff\xfe", "\\377\\376"), (b"\xc3\xa9", "\u{e9}")] {
        assert_eq!(escape_path(bytes), shown, "{bytes:?}");
        assert_eq!(needs_escape(bytes), shown.as_bytes() != bytes, "{bytes:?}");
        assert_eq!(RelPath::from(bytes).to_string(), shown, "{bytes:?}");
    }
}

#[test]
fn a_character_cut_short_at_the_end_is_escaped_byte_by_byte() {
    // `\xe2\x82` starts a three-byte character that never ends; other
    // bytes that are not UTF-8 are escaped one by one, wherever they are.
    for (bytes, shown) in [
        (&b"a\xe2\x82"[..], "a\\342\\202"),
        (b"\xe2\x82", "\\342\\202"),
        (b"ab/\xe2\x82\xac\xe2", "ab/\u{20ac}\\342"),
        (b"\xffa\xe2\x82", "\\377a\\342\\202"),
        (b"a\xffb", "a\\377b"),
        (b"\xff\xfe", "\\377\\376"),
        (b"x\xc3\xa9\xff\xc3\xa9", "x\u{e9}\\377\u{e9}"),
    ] {
        assert_eq!(escape_path(bytes), shown, "{bytes:?}");
    }
}

#[test]
fn a_long_path_is_shown_cut_at_256_bytes_but_never_inside_a_character() {
    let a = |n: usize| "a".repeat(n);
    // Up to 256 bytes: shown whole.
    assert_eq!(shown_path(a(256)), a(256));
    // Longer: the first 256 bytes and the length.
    assert_eq!(shown_path(a(300)), format!("{}… (300 bytes)", a(256)));
    // A two-byte character across the cut is left out whole.
    let two = format!("{}é{}", a(255), a(10));
    assert_eq!(shown_path(&two), format!("{}… (267 bytes)", a(255)));
    // A four-byte character across the cut: back to its first byte.
    let four = format!("{}\u{1f600}{}", a(254), a(10));
    assert_eq!(shown_path(&four), format!("{}… (268 bytes)", a(254)));
    // A character that ends right at the cut is kept.
    let whole = format!("{}é{}", a(254), a(10));
    assert_eq!(shown_path(&whole), format!("{}é… (266 bytes)", a(254)));
    // A run of continuation bytes (not UTF-8): at most three are given back.
    let run = vec![0x80u8; 300];
    assert_eq!(shown_path(&run), format!("{}… (300 bytes)", "\\200".repeat(253)));
}

fn epoch(s: &str) -> Epoch {
    Epoch::parse(s).unwrap()
}

/// A file with every meta key set.
pub(super) fn full_meta() -> Meta {
    Meta {
        producers: vec![("$0".into(), "old".into())],
        aggregator: ["1h", "6h", "1d", "Z"].map(String::from).to_vec(),
        canonize: Some("naive_path_normalize".into()),
        comment: Some("c".into()),
        dirtymark: Some(epoch("1700000000.5")),
        filenameroot: Some("RECENT".into()),
        interval: Some("1h".into()),
        merged: Merged::Into {
            epoch: Some(epoch("1700000400.5")),
            into_interval: Some("6h".into()),
            time: Some("1700000500.5".into()),
        },
        minmax: Some(MinMax { max: Some(epoch("1700000400.5")), min: None, mtime: Some("1700000400".into()) }),
        protocol: Some("1".into()),
        serializer_suffix: Some(".json".into()),
        hash: Some("sha256".into()),
    }
}

/// JSON as docs/protocol.md 6.2 has it: one line, keys sorted, every epoch
/// a string, `protocol` and `minmax.mtime` numbers, a path one character
/// per byte; `Producers` rebuilt from the writer.
#[test]
fn json_is_written_as_the_protocol_says() {
    let mut rf = Recentfile::from_events(vec![
        Event::new(epoch("1700000400.5"), b"id/\xc3\xa9\xff".to_vec(), EventKind::New),
        Event::new(epoch("1700000300"), "a", EventKind::Delete),
    ]);
    rf.meta = full_meta();
    let producer = Producer { program: "prog".into(), time: epoch("1700000401.0") };
    let want = concat!(
        r#"{"meta":{"Hash":"sha256","Producers":{"$0":"prog","rrr":"VERSION","time":"1700000401.0"},"#,
        r#""aggregator":["1h","6h","1d","Z"],"canonize":"naive_path_normalize","comment":"c","#,
        r#""dirtymark":"1700000000.5","filenameroot":"RECENT","interval":"1h","#,
        r#""merged":{"epoch":"1700000400.5","into_interval":"6h","time":"1700000500.5"},"#,
        r#""minmax":{"max":"1700000400.5","min":null,"mtime":1700000400},"protocol":1,"serializer_suffix":".json"},"#,
        r#""recent":[{"epoch":"1700000400.5","path":"id/Ã©ÿ","type":"new"},{"epoch":"1700000300","path":"a","type":"delete"}]}"#
    )
    .replace("VERSION", env!("CARGO_PKG_VERSION"));
    let written = serialize(&rf, Format::Json, &producer);
    assert_eq!(String::from_utf8(written.clone()).unwrap(), want);
    // It reads back as it was, but for the Producers.
    let back = parse_bytes(&written, Format::Json).unwrap();
    assert_eq!(back.events, rf.events);
    assert_eq!(Meta { producers: rf.meta.producers.clone(), ..back.meta }, rf.meta);

    // Unset keys are left out; a reset `merged` is `{}`; a text that is not
    // a plain integer stays a string, exactly.
    rf.meta = Meta {
        merged: Merged::Reset,
        minmax: Some(MinMax { max: None, min: Some(epoch("5")), mtime: Some("+17".into()) }),
        protocol: Some("1.0".into()),
        ..Meta::default()
    };
    rf.events.clear();
    let want = r#"{"meta":{"Producers":{"$0":"prog","rrr":"VERSION","time":"1700000401.0"},"merged":{},"minmax":{"max":null,"min":"5","mtime":"+17"},"protocol":"1.0"},"recent":[]}"#
        .replace("VERSION", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8(serialize(&rf, Format::Json, &producer)).unwrap(), want);
}

/// What the Perl tools write (clock epochs as numbers, others as strings,
/// in hash order) reads with every number's source text kept.
#[test]
fn json_as_the_perl_tools_write_it_is_read_exactly() {
    let json = concat!(
        r#"{"recent":[{"type":"new","path":"id/Ã©","epoch":1700000160.50},"#,
        r#"{"path":"b","epoch":"1699990500.0","type":"delete"}],"#,
        r#""meta":{"minmax":{"mtime":1700000161,"min":"1699990500.0","max":1700000160.50},"#,
        r#""merged":{"time":1700000100.25,"into_interval":"6h","epoch":1700000100},"#,
        r#""protocol":1,"dirtymark":1700000000.5,"serializer_suffix":".json","filenameroot":"RECENT","#,
        r#""interval":"1h","aggregator":["1h","6h","Z"],"comment":"hand made","canonize":"x","#,
        r#""Producers":{"time":1700000161.75,"$0":"/usr/bin/rrr-server"}}}"#
    );
    let rf = parse_bytes(json.as_bytes(), Format::Json).unwrap();
    assert_eq!(
        rf.events,
        [
            Event::new(epoch("1700000160.50"), "id/\u{e9}", EventKind::New),
            Event::new(epoch("1699990500.0"), "b", EventKind::Delete)
        ]
    );
    assert_eq!(rf.events[0].epoch.as_str(), "1700000160.50");
    let m = &rf.meta;
    assert_eq!(
        m.producers,
        [("time".to_string(), "1700000161.75".to_string()), ("$0".into(), "/usr/bin/rrr-server".into())]
    );
    assert_eq!(m.aggregator, ["1h", "6h", "Z"]);
    assert_eq!((m.canonize.as_deref(), m.comment.as_deref()), (Some("x"), Some("hand made")));
    assert_eq!(m.dirtymark.as_ref().map(Epoch::as_str), Some("1700000000.5"));
    assert_eq!((m.filenameroot.as_deref(), m.interval.as_deref()), (Some("RECENT"), Some("1h")));
    assert_eq!(
        m.merged,
        Merged::Into {
            epoch: Some(epoch("1700000100")),
            into_interval: Some("6h".into()),
            time: Some("1700000100.25".into())
        }
    );
    assert_eq!(
        m.minmax,
        Some(MinMax {
            max: Some(epoch("1700000160.50")),
            min: Some(epoch("1699990500.0")),
            mtime: Some("1700000161".into())
        })
    );
    assert_eq!((m.protocol.as_deref(), m.serializer_suffix.as_deref()), (Some("1"), Some(".json")));
}

/// A bare list is protocol 0; `merged: {}` is a reset; anything else at
/// the top, or a `recent` that is no list, refuses the file.
#[test]
fn json_documents_of_every_shape() {
    let bare =
        parse_bytes(br#"[{"epoch":"2.5","path":"a","type":"new"},{"epoch":1,"path":"b","type":"new"}]"#, Format::Json)
            .unwrap();
    assert_eq!(bare.meta, Meta::default());
    assert_eq!(bare.events, [Event::new(epoch("2.5"), "a", EventKind::New), ev(1, "b", EventKind::New)]);
    let reset = parse_bytes(br#"{"meta":{"merged":{}},"recent":null}"#, Format::Json).unwrap();
    assert_eq!((reset.meta.merged, reset.events.len()), (Merged::Reset, 0));
    for (bad, says) in [
        (&br#""text""#[..], "expected a mapping or a list"),
        (br#"{"meta":{},"recent":{"epoch":"1"}}"#, "`recent` is not a list"),
        (b"{\n\"recent\": [}", "line 2: not valid JSON"),
    ] {
        let err = parse_bytes(bad, Format::Json).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
    // JSON has no way of carrying a byte that is not UTF-8 (paths are
    // one character per byte): the file is refused, at its line.
    let raw = b"{\"recent\":\n[{\"epoch\":\"1\",\"path\":\"\xff\",\"type\":\"new\"}]}";
    let err = parse_bytes(raw, Format::Json).unwrap_err();
    assert_eq!(err, ReadError::at(2, "not valid UTF-8".into()));
}

/// A type that is not a string is still a type none of the readers knows
/// (Perl takes JSON `true` for 1): the event is skipped as useless, not kept.
#[test]
fn a_json_type_that_is_no_string_is_an_unknown_type() {
    let rf = parse_bytes(
        br#"{"recent":[{"epoch":"2","path":"a","type":true},{"epoch":"1","path":"b","type":7}]}"#,
        Format::Json,
    )
    .unwrap();
    assert!(rf.events.is_empty());
    for s in &rf.skipped {
        assert!(s.reason.starts_with("unknown event type"), "{s:?}");
        assert!(!s.keep_on_rewrite, "{s:?}");
    }
    assert_eq!(rf.skipped.len(), 2);
}

/// A read error says the action, the file, the line and what, each only
/// when known; an I/O failure keeps its cause.
#[test]
fn read_errors_say_what_they_know() {
    use std::error::Error as _;
    let file = std::path::Path::new("/srv/CPAN/RECENT-1h.yaml");
    let cases = [
        (ReadError::general("too big".into()), "cannot read recentfile: too big"),
        (ReadError::at(12, "bad epoch".into()), "cannot read recentfile: line 12: bad epoch"),
        (ReadError::at(3, "x".into()).in_file(file), "cannot read recentfile /srv/CPAN/RECENT-1h.yaml: line 3: x"),
        (ReadError::general("y".into()).in_file(file), "cannot read recentfile /srv/CPAN/RECENT-1h.yaml: y"),
        (
            ReadError::io(std::io::ErrorKind::NotFound.into()).in_file(file),
            "cannot read recentfile /srv/CPAN/RECENT-1h.yaml",
        ),
    ];
    for (err, says) in &cases {
        assert_eq!(err.to_string(), *says);
        assert_eq!(err, err, "{says}");
        assert_eq!(err.source().is_some(), err.message.is_empty(), "{says}");
    }
    for (i, (a, _)) in cases.iter().enumerate() {
        for (b, _) in &cases[i + 1..] {
            assert_ne!(a, b);
        }
    }
    let denied = ReadError::io(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no"));
    assert_eq!(denied.source().unwrap().to_string(), "no");
    assert_eq!(denied, ReadError::io(std::io::ErrorKind::PermissionDenied.into()), "compared by kind");
    assert_ne!(denied, ReadError::io(std::io::ErrorKind::NotFound.into()));
    assert_eq!(ReadError::at(3, "x".into()).in_file(file).file.as_deref(), Some(file));
}

/// A path of 4096 bytes is read; one byte more is skipped with why.
#[test]
fn an_event_path_of_4096_bytes_is_read() {
    let limit = "a/".repeat(2047) + "bc";
    let json = format!(
        r#"{{"recent":[{{"epoch":"3","path":"{limit}","type":"new"}},{{"epoch":"2","path":"{limit}d","type":"new"}}]}}"#
    );
    let rf = parse_bytes(json.as_bytes(), Format::Json).unwrap();
    assert_eq!(rf.events, [ev(3, &limit, EventKind::New)]);
    assert_eq!(rf.skipped.len(), 1);
    assert_eq!(rf.skipped[0].reason, "path is 4097 bytes long (limit 4096)");
}

#[test]
fn a_file_of_2_gib_is_read_and_one_byte_more_is_not() {
    assert_eq!(read::check_size(0), Ok(()));
    assert_eq!(read::check_size(2 << 30), Ok(()));
    assert_eq!(
        read::check_size((2 << 30) + 1),
        Err(ReadError::general("file is 2147483649 bytes (limit 2147483648)".into()))
    );
}

/// A big file is written in pieces of about 256 KiB, never as one text
/// (a Z file holds a million events), and the pieces are the file.
#[test]
fn yaml_is_written_in_pieces_of_256_kib() {
    struct Pieces(Vec<Vec<u8>>);
    impl std::io::Write for Pieces {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    const PIECE: usize = 256 << 10;
    let events = (0..6000).map(|i| ev(1_700_000_000 - i, &format!("id/A/AB/ABC/{i:0>80}.tar.gz"), EventKind::New));
    let rf = Recentfile::from_events(events.collect());
    let producer = Producer { program: "p".into(), time: epoch("1700000001.5") };
    let mut pieces = Pieces(Vec::new());
    yaml::emit_to(&rf, &producer, &mut pieces).unwrap();
    let whole = yaml::emit(&rf, &producer);
    assert!(whole.len() > 3 * PIECE, "{}", whole.len());
    assert_eq!(pieces.0.concat(), whole);
    let (last, full) = pieces.0.split_last().unwrap();
    assert_eq!(full.len(), whole.len() / PIECE, "pieces: {:?}", pieces.0.iter().map(Vec::len).collect::<Vec<_>>());
    for piece in full {
        assert!((PIECE..PIECE + 200).contains(&piece.len()), "{}", piece.len());
    }
    assert!(last.len() < PIECE);
}

/// The head of a recentfile as YAML::Syck writes it (six lines).
const SYCK_HEAD: &str = "--- \nmeta: \n  dirtymark: '1700000000.5'\n  interval: 1h\n  protocol: 1\nrecent: \n";

fn syck_item(epoch: &str, path: &str, kind: &str) -> String {
    format!("  - \n    epoch: {epoch}\n    path: {path}\n    type: {kind}\n")
}

/// An epoch with a dot at either end is no epoch (Epoch::parse): the
/// strict path and the outline give the file to the readers that say why.
#[test]
fn an_epoch_with_a_dot_at_an_end_is_not_for_the_strict_path() {
    for bad in ["'1700000001.'", "'.5'"] {
        let text = SYCK_HEAD.to_string() + &syck_item("'1700000002.5'", "a/b", "new") + &syck_item(bad, "a/c", "new");
        assert_eq!(yaml::parse_syck(&text), None, "{bad}");
        assert_eq!(yaml::outline(text.as_bytes()).unwrap(), None, "{bad}");
        let err = parse_bytes(text.as_bytes(), Format::Yaml).unwrap_err();
        assert!(err.to_string().starts_with("cannot read recentfile: line 11: "), "{err}");
    }
}

/// Syck writes an empty string as `''`, and so does rrr's emitter for an
/// empty path (which a recentfile never holds, but the emitter takes).
#[test]
fn an_empty_path_is_written_as_syck_writes_an_empty_string() {
    let rf = Recentfile::from_events(vec![ev(5, "", EventKind::New)]);
    let producer = Producer { program: "p".into(), time: epoch("6.5") };
    let text = String::from_utf8(serialize(&rf, Format::Yaml, &producer)).unwrap();
    assert!(text.ends_with("recent: \n  - \n    epoch: '5.0'\n    path: ''\n    type: new\n"), "{text}");
}

/// The strict path takes a file whose last line lacks its newline, with
/// either type.
#[test]
fn the_last_line_may_lack_its_newline() {
    for (name, kind) in [("new", EventKind::New), ("delete", EventKind::Delete)] {
        let text = SYCK_HEAD.to_string()
            + &syck_item("'1700000002.5'", "a/b", "new")
            + &syck_item("'1700000001.5'", "a/c", name);
        let cut = text.trim_end_matches('\n');
        let strict = yaml::parse_syck(cut).unwrap_or_else(|| panic!("not taken: {cut:?}"));
        assert_eq!(strict.events.iter().map(|e| e.kind).collect::<Vec<_>>(), [EventKind::New, kind]);
        assert_eq!(yaml::outline(cut.as_bytes()).unwrap().map(|o| o.count), Some(2));
        assert_eq!(parse_bytes(cut.as_bytes(), Format::Yaml).unwrap(), strict);
    }
}

/// A line of 1 MiB (its newline included) is read; one byte more is refused.
#[test]
fn a_yaml_line_of_1_mib_is_read_and_one_byte_more_is_not() {
    const LIMIT: usize = 1 << 20;
    for len in [LIMIT, LIMIT + 1] {
        let comment = "x".repeat(len - "  comment: \n".len());
        let text = format!("--- \nmeta: \n  comment: {comment}\n  interval: 1h\nrecent: \n")
            + &syck_item("'5.5'", "a/b", "new");
        match parse_bytes(text.as_bytes(), Format::Yaml) {
            Ok(rf) if len == LIMIT => assert_eq!(rf.meta.comment.map(|c| c.len()), Some(comment.len())),
            Err(e) if len > LIMIT => {
                assert_eq!(e, ReadError::at(3, format!("line is {len} bytes long (limit {LIMIT})")))
            }
            other => panic!("{len}: {other:?}"),
        }
    }
}

/// `protocol` and `minmax.mtime` are JSON numbers when they are integers
/// that every 64-bit JSON reader holds exactly (at most 18 digits: below
/// i64::MAX); anything longer stays a string, the text unchanged.
#[test]
fn json_integers_are_numbers_only_where_every_reader_holds_them() {
    let producer = Producer { program: "p".into(), time: epoch("1.5") };
    for (mtime, written) in [
        ("1700000400", "1700000400"),
        ("999999999999999999", "999999999999999999"),
        ("9999999999999999999", r#""9999999999999999999""#),
        ("18446744073709551615", r#""18446744073709551615""#),
        ("", r#""""#),
    ] {
        let mut rf = Recentfile::default();
        rf.meta.minmax = Some(MinMax { max: None, min: None, mtime: Some(mtime.into()) });
        let text = String::from_utf8(serialize(&rf, Format::Json, &producer)).unwrap();
        assert!(text.contains(&format!(r#""mtime":{written}}}"#)), "{mtime}: {text}");
        let back = parse_bytes(text.as_bytes(), Format::Json).unwrap();
        assert_eq!(back.meta.minmax.unwrap().mtime.as_deref(), Some(mtime));
    }
}

/// A meta scalar is kept as text whatever the deserializer hands over: a
/// string as it is, a number or bool as its text; anything else is refused
/// saying what was expected.
#[test]
fn meta_scalars_are_text_from_any_deserializer() {
    use read::{Text, TextMap};
    use serde::de::IntoDeserializer;
    use serde::Deserialize;
    type E = serde::de::value::Error;
    let text = |t: Result<Text, E>| t.unwrap().0;
    assert_eq!(text(Text::deserialize(IntoDeserializer::<E>::into_deserializer(-5i64))), "-5");
    assert_eq!(text(Text::deserialize(IntoDeserializer::<E>::into_deserializer(1700000000u64))), "1700000000");
    assert_eq!(text(Text::deserialize(IntoDeserializer::<E>::into_deserializer(0.5f64))), "0.5");
    assert_eq!(text(Text::deserialize(IntoDeserializer::<E>::into_deserializer(true))), "true");
    assert_eq!(text(Text::deserialize(IntoDeserializer::<E>::into_deserializer(String::from("1h")))), "1h");
    assert_eq!(serde_json::from_value::<Text>(serde_json::json!("6h")).unwrap().0, "6h");
    let err = serde_json::from_value::<Text>(serde_json::json!([1])).unwrap_err();
    assert!(err.to_string().ends_with("expected a scalar"), "{err}");
    let map = serde_json::from_value::<TextMap>(serde_json::json!({"epoch": "5.5", "time": null})).unwrap();
    assert_eq!(map.0, [("epoch".to_string(), Some("5.5".to_string())), ("time".into(), None)]);
    let err = serde_json::from_value::<TextMap>(serde_json::json!("x")).unwrap_err();
    assert!(err.to_string().ends_with("expected a mapping of scalars"), "{err}");
}

/// A name that is not UTF-8 is read as its bytes also right after a line
/// that ends in a character of several bytes (any key order).
#[test]
fn a_name_that_is_not_utf8_after_a_line_ending_in_a_wide_character() {
    let text = [
        SYCK_HEAD.as_bytes(),
        b"  - \n    epoch: '3.5'\n    type: new\n    path: a/\xc3\xa9\n",
        b"  - path: caf\xe9\n    epoch: '2.5'\n    type: new\n",
    ]
    .concat();
    let rf = parse_bytes(&text, Format::Yaml).unwrap();
    let paths: Vec<&[u8]> = rf.events.iter().map(|e| e.path.as_bytes()).collect();
    assert_eq!(paths, [&b"a/\xc3\xa9"[..], b"caf\xe9"]);
}

/// An epoch that is not below the previous one refuses the file, saying
/// which of the two it is.
#[test]
fn an_epoch_out_of_order_says_whether_it_repeats_or_goes_up() {
    for (second, says) in [
        ("2.5", "epoch 2.5 duplicates the previous event's 2.5"),
        ("3", "epoch 3 is newer than the previous event's 2.5"),
    ] {
        let json = format!(
            r#"{{"recent":[{{"epoch":"2.5","path":"a","type":"new"}},{{"epoch":"{second}","path":"b","type":"new"}}]}}"#
        );
        let err = parse_bytes(json.as_bytes(), Format::Json).unwrap_err();
        assert_eq!(err.message, format!("event #2: {says} (the list must be strictly decreasing)"));
    }
}

/// Perl's `looks_like_number` on infinities and NaNs, from Perl 5.36's
/// `grok_infnan`: `1.#IND` needs its `1.#`, a NaN needs its `a`, any zeros
/// may follow `1.#IND`, and a NaN payload of spaces only is none.
#[test]
fn perl_infnan_spellings() {
    for (s, number) in [
        ("1.#IND00", true),
        ("1#IND000 ", true),
        ("ind", false),
        ("Ind0", false),
        ("nxn", false),
        ("NZN", false),
        ("nan( )", false),
        ("nan(  )", false),
    ] {
        assert_eq!(syck::looks_like_number(s.as_bytes()), number, "{s:?}");
    }
}

/// A newline in a single-quoted scalar is written twice, and once more
/// after another newline (what YAML::Syck 1.34 writes for "1\n\n").
#[test]
fn newlines_in_single_quotes_as_syck_writes_them() {
    assert_eq!(syck::scalar("1\n\n"), "'1\n\n\n'");
}

/// The strict path takes every escape Syck writes in a double-quoted path
/// (a CR and a tab among them) and gives the same file as the line reader.
#[test]
fn the_strict_path_takes_syck_escapes_in_paths() {
    let path = "a\rb\tc\x1bd\x07\x00e";
    let written = syck::scalar(path);
    assert_eq!(written, r#""a\rb\tc\ed\a\0e""#);
    let text = SYCK_HEAD.to_string() + &syck_item("'2.5'", &written, "new");
    let strict = yaml::parse_syck(&text).unwrap_or_else(|| panic!("not taken: {text:?}"));
    assert_eq!(strict.events, [Event::new(epoch("2.5"), path, EventKind::New)]);
    assert_eq!(parse_bytes(text.as_bytes(), Format::Yaml).unwrap(), strict);
}

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

/// Paths YAML::Syck 1.34 writes plain are taken by the strict path as
/// they are: a `#` without a space before it, a tab after a leading `.`,
/// `_` or non-ASCII character, and the plain scalars that start with a
/// sign or `~` or `<`.
#[test]
fn the_strict_path_takes_paths_syck_writes_plain() {
    for path in ["a#b", ".a\tb", "_a\tb", "é\tb", "-a", "~x", "<<", "+5"] {
        assert_eq!(syck::scalar(path), path, "Syck writes {path:?} plain");
        let text = SYCK_HEAD.to_string() + &syck_item("'2.5'", path, "new");
        let strict = yaml::parse_syck(&text).unwrap_or_else(|| panic!("not taken: {text:?}"));
        assert_eq!(strict.events, [Event::new(epoch("2.5"), path, EventKind::New)], "{path:?}");
        assert_eq!(yaml::outline(text.as_bytes()).unwrap().map(|o| o.count), Some(1), "{path:?}");
    }
}

/// A single-quoted path with a lone quote inside is no scalar: the strict
/// path and the outline leave it to the readers that say why.
#[test]
fn a_single_quoted_path_with_a_lone_quote_is_not_for_the_strict_path() {
    let text = SYCK_HEAD.to_string() + &syck_item("'2.5'", "'a'b'", "new");
    assert_eq!(yaml::parse_syck(&text), None);
    assert_eq!(yaml::outline(text.as_bytes()).unwrap(), None);
}

/// A file that ends a few bytes into its last path (a cut transfer) is
/// not for the strict path, wherever the cut falls.
#[test]
fn a_file_cut_inside_its_last_path_is_not_for_the_strict_path() {
    let full = SYCK_HEAD.to_string() + &syck_item("'2.5'", "abcdefghij", "new");
    let path_start = full.find("abcdefghij").unwrap();
    for cut in path_start..path_start + 12 {
        let text = &full[..cut];
        assert_eq!(yaml::parse_syck(text), None, "{text:?}");
        assert_eq!(yaml::outline(text.as_bytes()).unwrap(), None, "{text:?}");
    }
}

/// A document in flow style goes to the general YAML reader, with its
/// `\xHH` runs resolved only inside double quotes: not inside a single-
/// quoted scalar (even after a space and `"`), and still after an escaped
/// quote and after a `''''` (one quote) on the same line. Expected values
/// from YAML::Syck 1.34's `Load` of the same text. (YAML::Syck writes
/// `--- ` first; a document without it is read as libyaml reads it:
/// `a_document_without_header_reads_escapes_as_code_points`.)
#[test]
fn flow_style_quoted_scalars_as_syck_reads_them() {
    let text = concat!(
        "--- \n",
        "meta: {}\n",
        r#"recent: [{epoch: 3, path: 'a "\xC3\xA4"', type: new}, {epoch: 2, path: '''', type: new},"#,
        r#" {epoch: 1, path: "\"\xC3\xA4", type: ''}]"#,
        "\n",
    );
    let raw = yaml::parse(text).unwrap();
    let got: Vec<_> = raw.events.iter().map(|e| (e.epoch.clone(), e.path.clone(), e.kind.clone())).collect();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(got, [(s("3"), s(r#"a "\xC3\xA4""#), s("new")), (s("2"), s("'"), s("new")), (s("1"), s("\"ä"), s(""))]);
}

/// A file cut right after a backslash inside double quotes (with a
/// `\xHH` before it) is refused with an error, not a crash; YAML::Syck
/// 1.34 says "syntax error" there too.
#[test]
fn a_file_cut_after_a_backslash_in_double_quotes_is_an_error() {
    let text = r#"meta: {}
recent: [{epoch: 1, path: "\xC3\xA4\"#;
    let err = parse_bytes(text.as_bytes(), Format::Yaml).unwrap_err();
    assert!(err.to_string().starts_with("cannot read recentfile: "), "{err}");
}

/// Perl 5.36's `looks_like_number`: one sign at most before an infinity,
/// a NaN payload must not be empty, and `0x` or `0b` alone is none.
#[test]
fn perl_infnan_signs_and_payloads() {
    for (s, number) in [
        ("+inf", true),
        ("-nan", true),
        ("-+inf", false),
        ("+-inf", false),
        ("--inf", false),
        ("nan()", false),
        ("nan())", false),
        ("nan(1)", true),
        ("nan(12)", true),
        ("nan(0x)", false),
        ("nan(0b)", false),
    ] {
        assert_eq!(syck::looks_like_number(s.as_bytes()), number, "{s:?}");
    }
}

/// Perl 5.36's `looks_like_number` on NaN payloads with an underscore at
/// the end or a sign.
#[test]
fn perl_nan_payloads_with_underscores_and_signs() {
    for (s, number) in
        [("nan(0x1_)", false), ("nan(0x1_1)", true), ("nan(0b1_)", false), ("nan(+1)", false), ("nan(-1)", false)]
    {
        assert_eq!(syck::looks_like_number(s.as_bytes()), number, "{s:?}");
    }
}

/// Epochs whose dots are at different indices are ordered by number, not
/// by their first eight bytes: the strict path takes 1000000000.5 before
/// 999999999.5.
#[test]
fn the_strict_path_orders_epochs_with_the_dot_elsewhere_by_number() {
    let text =
        SYCK_HEAD.to_string() + &syck_item("'1000000000.5'", "a/b", "new") + &syck_item("'999999999.5'", "a/c", "new");
    let strict = yaml::parse_syck(&text).unwrap_or_else(|| panic!("not taken: {text:?}"));
    assert_eq!(strict.events.len(), 2);
    assert_eq!(yaml::outline(text.as_bytes()).unwrap().map(|o| o.count), Some(2));
}

/// An item the general reader reads alone (a flow mapping) keeps its line
/// number: a skipped event says where it is.
#[test]
fn an_item_read_alone_keeps_its_line_number() {
    let text = SYCK_HEAD.to_string() + "  - {epoch: '2.5', path: a/b, type: bogus}\n";
    let rf = parse_bytes(text.as_bytes(), Format::Yaml).unwrap();
    assert_eq!(rf.events, []);
    let skipped: Vec<_> = rf.skipped.iter().map(|s| (s.line, s.path.to_string(), s.reason.as_str())).collect();
    assert_eq!(skipped, [(Some(7), "a/b".to_string(), "unknown event type \"bogus\"")]);
}

/// A path line that is not UTF-8 is read from its YAML scalar. A plain one
/// holding a comment (` #`) or a `: ` is no scalar Syck writes (it quotes
/// such names), so the file is refused at that line rather than read with
/// the comment or the colon as part of the name.
#[test]
fn a_plain_non_utf8_path_with_a_comment_or_a_colon_is_refused() {
    let item = |path_tail: &[u8]| {
        let mut text = SYCK_HEAD.as_bytes().to_vec();
        text.extend_from_slice(b"  - \n    epoch: '2.5'\n    path: caf\xe9");
        text.extend_from_slice(path_tail);
        text.extend_from_slice(b"\n    type: new\n");
        text
    };
    for tail in [&b" #x"[..], b": x"] {
        let err = parse_bytes(&item(tail), Format::Yaml).unwrap_err();
        assert_eq!(err, ReadError::at(9, "a path that is not UTF-8 and no YAML scalar".into()), "{tail:?}");
    }
    let rf = parse_bytes(&item(b"#x  "), Format::Yaml).unwrap();
    assert_eq!(rf.events[0].path.as_ref() as &[u8], b"caf\xe9#x");
}
