//! The accessors, conversions and comparisons of [`RelPath`]: every one
//! gives back the path's own bytes, whatever they are.

use super::*;

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
fn equality_with_text_and_bytes_both_ways() {
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
