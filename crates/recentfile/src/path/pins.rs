//! Pins of [`RelPath`]: every conversion keeps the bytes, every comparison
//! is byte equality, and every way of showing a path (Display, Debug, JSON)
//! is lossless and one line.

use super::*;
use std::collections::{BTreeSet, HashSet};

/// A UTF-8 path, one with a control character, and one that is not UTF-8.
fn samples() -> [(RelPath, &'static [u8]); 3] {
    [
        (RelPath::from("id/A/AB/ABC/Foo-1.0.tar.gz"), b"id/A/AB/ABC/Foo-1.0.tar.gz"),
        (RelPath::from("a\tb/c"), b"a\tb/c"),
        (RelPath::from(b"x/\xff\x01".to_vec()), b"x/\xff\x01"),
    ]
}

#[test]
fn every_conversion_keeps_the_bytes() {
    for (p, bytes) in samples() {
        assert_eq!(p.as_bytes(), bytes);
        assert_eq!(p.clone().into_bytes(), bytes);
        assert_eq!(p.as_os_str().as_bytes(), bytes);
        assert_eq!(p.as_path().as_os_str().as_bytes(), bytes);
        assert_eq!(p.len(), bytes.len());
        assert!(!p.is_empty());
        assert_eq!(AsRef::<[u8]>::as_ref(&p), bytes);
        assert_eq!(AsRef::<OsStr>::as_ref(&p).as_bytes(), bytes);
        assert_eq!(AsRef::<Path>::as_ref(&p).as_os_str().as_bytes(), bytes);
        assert_eq!(Borrow::<[u8]>::borrow(&p), bytes);
        assert_eq!(RelPath::from(bytes).as_bytes(), bytes);
        assert_eq!(RelPath::from(&p).as_bytes(), bytes);
        assert_eq!(RelPath::from(OsStr::from_bytes(bytes)).as_bytes(), bytes);
        assert_eq!(RelPath::from(Path::new(OsStr::from_bytes(bytes))).as_bytes(), bytes);
    }
    let text = String::from("a/b");
    assert_eq!(RelPath::from(&text).as_bytes(), b"a/b");
    assert_eq!(RelPath::from(text).as_bytes(), b"a/b");
    assert_eq!(RelPath::from("a/b").as_bytes(), b"a/b");
    assert!(RelPath::default().is_empty());
    assert_eq!(RelPath::default().len(), 0);
}

#[test]
fn to_str_is_the_text_only_when_utf8() {
    assert_eq!(RelPath::from("a/é").to_str(), Some("a/é"));
    assert_eq!(RelPath::from("a\tb").to_str(), Some("a\tb"));
    assert_eq!(RelPath::from(b"a/\xc3".to_vec()).to_str(), None);
}

#[test]
fn a_path_is_found_in_hashed_and_ordered_sets_by_its_bytes() {
    let hashed: HashSet<RelPath> = samples().into_iter().map(|(p, _)| p).collect();
    let ordered: BTreeSet<RelPath> = samples().into_iter().map(|(p, _)| p).collect();
    for (_, bytes) in samples() {
        assert!(hashed.contains(bytes), "{bytes:?}");
        assert!(ordered.contains(bytes), "{bytes:?}");
    }
    assert!(!hashed.contains(&b"id"[..]));
    assert!(!ordered.contains(&b""[..]));
}

#[test]
fn equality_with_text_and_bytes_both_ways() {
    let p = RelPath::from("a/b");
    let (same, other) = ("a/b", "a/c");
    let (same_owned, other_owned) = (same.to_string(), other.to_string());
    assert!(p == *same && p != *other);
    assert!(p == same && p != other);
    assert!(p == same_owned && p != other_owned);
    assert!(p == *b"a/b".as_slice() && p != *b"a/b/".as_slice());
    assert!(*same == p && *other != p);
    assert!(same == p && other != p);
    assert!(same_owned == p && other_owned != p);
}

#[test]
fn prefix_and_substring_tests_are_on_bytes() {
    let p = RelPath::from(b"id/A/\xffx/README".to_vec());
    let cases: [(&[u8], bool, bool); 7] = [
        // needle, starts_with, contains
        (b"", true, true),
        (b"id/A", true, true),
        (b"\xffx", false, true),
        (b"README", false, true),
        (b"id/B", false, false),
        (b"READMEs", false, false),
        (b"id/A/\xffx/README/", false, false),
    ];
    for (needle, starts, holds) in cases {
        assert_eq!(p.starts_with(needle), starts, "starts_with {needle:?}");
        assert_eq!(p.contains(needle), holds, "contains {needle:?}");
    }
}

#[test]
fn components_split_at_every_slash() {
    let p = RelPath::from("a/bc//d");
    let parts: Vec<&[u8]> = p.components().collect();
    assert_eq!(parts, [&b"a"[..], b"bc", b"", b"d"]);
    assert_eq!(RelPath::from("one").components().collect::<Vec<_>>(), [&b"one"[..]]);
}

#[test]
fn display_escapes_like_ls_b_and_only_when_needed() {
    let cases: [(&[u8], &str); 5] = [
        (b"id/A/Foo-1.0.tar.gz", "id/A/Foo-1.0.tar.gz"),
        (b"a b/\xc3\xa9", "a b/\u{e9}"),
        (b"a\tb\nc", "a\\tb\\nc"),
        (b"back\\slash", "back\\\\slash"),
        (b"x/\xff\x01", "x/\\377\\001"),
    ];
    for (bytes, shown) in cases {
        let p = RelPath::from(bytes);
        assert_eq!(p.to_string(), shown, "{bytes:?}");
        assert_eq!(p.escaped(), shown, "{bytes:?}");
    }
    assert_eq!(format!("{:>4}|{:<4}|", RelPath::from("ab"), RelPath::from("a\tb")), "  ab|a\\tb|");
}

#[test]
fn debug_shows_text_quoted_and_other_bytes_as_a_byte_string() {
    assert_eq!(format!("{:?}", RelPath::from("a/\"b\"")), r#""a/\"b\"""#);
    assert_eq!(format!("{:?}", RelPath::from(b"a/\xff\n".to_vec())), r#"b"a/\xff\n""#);
}

#[test]
fn json_is_a_string_or_hex_bytes_and_reads_back() {
    for (p, _) in samples() {
        let value = p.to_json();
        match p.to_str() {
            Some(text) => assert_eq!(value, serde_json::Value::String(text.into())),
            None => assert_eq!(value, serde_json::json!({"bytes": hex(p.as_bytes())})),
        }
        let back: RelPath = serde_json::from_value(value).unwrap();
        assert_eq!(back, p);
    }
    assert_eq!(RelPath::from(b"\x12\xab".to_vec()).to_json(), serde_json::json!({"bytes": "12ab"}));
    let read: RelPath = serde_json::from_str(r#"{"bytes": "0AfF"}"#).unwrap();
    assert_eq!(read.as_bytes(), b"\x0a\xff");
}

#[test]
fn hex_table() {
    let cases: [(&[u8], &str); 4] = [(b"", ""), (b"\x00\x09", "0009"), (b"\x12\xab\xf0", "12abf0"), (b"\xff", "ff")];
    for (bytes, text) in cases {
        assert_eq!(hex(bytes), text);
        assert_eq!(unhex(text).as_deref(), Some(bytes), "{text}");
    }
    assert_eq!(unhex("7F1c").as_deref(), Some(&b"\x7f\x1c"[..]));
    for bad in ["f", "abc", "0g", "g0", "+1", " 1"] {
        assert_eq!(unhex(bad), None, "{bad}");
    }
}

fn non_utf8() -> RelPath {
    RelPath::from(b"a/\xff\tb".to_vec())
}

#[test]
fn accessors_give_the_bytes() {
    let p = non_utf8();
    assert_eq!(p.clone().into_bytes(), b"a/\xff\tb".to_vec());
    assert_eq!(p.len(), 5);
    assert!(!p.is_empty());
    assert!(RelPath::default().is_empty());
    assert_eq!(RelPath::default().len(), 0);
    assert_eq!(RelPath::from("a/é").to_str(), Some("a/é"));
    assert_eq!(p.to_str(), None);
    assert_eq!(p.as_path(), Path::new(OsStr::from_bytes(b"a/\xff\tb")));
    let comps: Vec<&[u8]> = p.components().collect();
    assert_eq!(comps, [&b"a"[..], &b"\xff\tb"[..]]);
    assert_eq!(RelPath::from("x").components().count(), 1);
}

#[test]
fn starts_with_and_contains_match_bytes() {
    let p = RelPath::from("authors/id/A/AB/x.tar.gz");
    assert!(p.starts_with("authors/"));
    assert!(!p.starts_with("id/"));
    for (needle, want) in [("", true), ("id/A", true), ("x.tar.gz", true), ("A/AB/x.tar.gz!", false), ("zz", false)] {
        assert_eq!(p.contains(needle), want, "{needle:?}");
    }
    assert!(non_utf8().contains(b"\xff"));
    assert!(!RelPath::from("ab").contains("abc"));
}

#[test]
fn display_and_debug() {
    // Plain names print as they are, padded like a str; others escaped.
    assert_eq!(format!("{:>5}", RelPath::from("ab")), "   ab");
    assert_eq!(format!("{:<12}|", non_utf8()), "a/\\377\\tb   |");
    assert_eq!(non_utf8().escaped(), "a/\\377\\tb");
    assert_eq!(RelPath::from("a\nb").to_string(), "a\\nb");
    assert_eq!(format!("{:?}", RelPath::from("a/b")), "\"a/b\"");
    assert_eq!(format!("{:?}", non_utf8()), "b\"a/\\xff\\tb\"");
}

#[test]
fn conversions_keep_the_bytes() {
    let s = String::from("d/f");
    let from_all = [
        RelPath::from("d/f"),
        RelPath::from(s.clone()),
        RelPath::from(&s),
        RelPath::from(b"d/f".to_vec()),
        RelPath::from(&b"d/f"[..]),
        RelPath::from(&RelPath::from("d/f")),
        RelPath::from(OsStr::new("d/f")),
        RelPath::from(Path::new("d/f")),
    ];
    for p in &from_all {
        assert_eq!(p.as_bytes(), b"d/f");
        let bytes: &[u8] = p.as_ref();
        assert_eq!(bytes, b"d/f");
        let os: &OsStr = p.as_ref();
        assert_eq!(os, OsStr::new("d/f"));
        let path: &Path = p.as_ref();
        assert_eq!(path, Path::new("d/f"));
        let borrowed: &[u8] = p.borrow();
        assert_eq!(borrowed, b"d/f");
    }
}

#[test]
fn equality_with_text_and_bytes_both_ways_on_one_name() {
    let p = RelPath::from("d/f");
    let (same, other) = (String::from("d/f"), String::from("d/g"));
    assert!(p == *"d/f" && p != *"d/g");
    assert!(p == "d/f" && p != "d/g");
    assert!(p == same && p != other);
    assert!(p == *b"d/f".as_slice() && p != *b"d/g".as_slice());
    assert!(*"d/f" == p && *"d/g" != p);
    assert!("d/f" == p && "d/g" != p);
    assert!(same == p && other != p);
}

#[test]
fn json_forms() {
    assert_eq!(RelPath::from("a/é").to_json(), serde_json::json!("a/é"));
    assert_eq!(non_utf8().to_json(), serde_json::json!({"bytes": "612fff0962"}));
    let err = serde_json::from_str::<RelPath>(r#"{"bytes":"6g"}"#).unwrap_err().to_string();
    assert!(err.contains("`bytes` is not an even number of hex digits"), "{err}");
}

#[test]
fn hex_round_trip() {
    let all: Vec<u8> = (0..=255).collect();
    let h = hex(&all);
    assert_eq!(&h[..8], "00010203");
    assert_eq!(&h[h.len() - 6..], "fdfeff");
    assert_eq!(hex(b"\x0f\xf0"), "0ff0");
    assert_eq!(unhex(&h), Some(all));
    assert_eq!(unhex("0FfA"), Some(vec![0x0f, 0xfa]));
    assert_eq!(unhex(""), Some(vec![]));
    for bad in ["0", "abc", "0g", "g0", "zz"] {
        assert_eq!(unhex(bad), None, "{bad:?}");
    }
}
