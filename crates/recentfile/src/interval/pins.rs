//! Table tests that pin interval specs: each refusal says why, and the
//! cascade keeps one interval per length.

use super::*;

#[test]
fn refusals_say_why() {
    let cases = [
        ("h", "expected a decimal count before the unit"),
        ("xh", "expected a decimal count before the unit"),
        ("1x", "unit must be one of"),
        ("5Z", "takes no count"),
        ("", "empty interval spec"),
        ("99999999999999999999h", "count too large"),
        ("9223372036854775808s", "too large"),
    ];
    for (spec, why) in cases {
        let err = Interval::parse(spec).unwrap_err().to_string();
        assert!(err.contains(why), "{spec:?}: {err}");
    }
    assert_eq!(Interval::parse("9223372036854775807s").unwrap().seconds(), Z_SECONDS);
}

#[test]
fn display_from_str_and_z() {
    let h: Interval = "1h".parse().unwrap();
    assert_eq!(format!("{h}"), "1h");
    assert!(!h.is_z());
    assert!(Interval::parse("Z").unwrap().is_z());
    assert!("1q".parse::<Interval>().is_err());
}

#[test]
fn lists_and_cascades() {
    let specs = |v: &[Interval]| v.iter().map(|i| i.spec().to_string()).collect::<Vec<_>>();
    assert_eq!(specs(&parse_list(" 6h, 1d  Z,").unwrap()), ["6h", "1d", "Z"]);
    assert!(parse_list("6h,1x").is_err());
    let p = Interval::parse("1h").unwrap();
    // An interval as long as the principal but spelled differently is an error.
    let err = cascade(&p, &parse_list("60m,1d").unwrap()).unwrap_err().to_string();
    assert!(err.contains("1h and 60m have the same length"), "{err}");
    assert_eq!(specs(&cascade(&p, &[]).unwrap()), ["1h"]);
}
