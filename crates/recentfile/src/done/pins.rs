//! Table tests and laws that pin the done-set: its bounds, its merges and
//! what a cap keeps (protocol.md 12.6).

use super::*;
use proptest::prelude::*;

fn e(s: &str) -> Epoch {
    Epoch::parse(s).unwrap()
}

fn set(spans: &[(&str, &str)]) -> DoneSet {
    let mut d = DoneSet::new();
    for (h, l) in spans {
        d.insert(e(h), e(l));
    }
    d
}

fn spans_of(d: &DoneSet) -> Vec<(String, String)> {
    d.spans().iter().map(|s| (s.high().to_string(), s.low().to_string())).collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn empty_newest_and_reset() {
    let mut d = DoneSet::new();
    assert!(d.is_empty());
    assert_eq!(d.newest(), None);
    d.insert(e("20"), e("10"));
    d.insert(e("5"), e("1"));
    assert!(!d.is_empty());
    assert_eq!(d.newest().map(Epoch::as_str), Some("20"));
    assert_eq!(spans_of(&d), pairs(&[("20", "10"), ("5", "1")]));
    assert_eq!(d.spans()[0].low().as_str(), "10");
    d.reset();
    assert!(d.is_empty());
    assert!(!d.covered(&e("15")));
    assert_eq!(beginning().as_str(), "0");
}

#[test]
fn bounds_are_inclusive_in_every_span() {
    let d = set(&[("30", "25"), ("20", "10"), ("5", "1")]);
    for (probe, want) in [("31", false), ("30", true), ("25", true), ("24", false), ("20", true), ("10", true)] {
        assert_eq!(d.covered(&e(probe)), want, "{probe}");
        assert_eq!(d.span_of(&e(probe)).is_some(), want, "{probe}");
    }
    for (probe, want) in [("9", false), ("5", true), ("1", true), ("0.5", false)] {
        assert_eq!(d.covered(&e(probe)), want, "{probe}");
    }
    assert_eq!(d.span_of(&e("15")), Some(&Span(e("20"), e("10"))));
}

#[test]
fn covered_range_needs_one_span() {
    let d = set(&[("20", "10"), ("5", "1")]);
    assert!(d.covered_range(&e("20"), &e("10")));
    assert!(d.covered_range(&e("15"), &e("15")));
    assert!(!d.covered_range(&e("20"), &e("5")), "two spans");
    assert!(!d.covered_range(&e("25"), &e("15")), "one end uncovered");
    assert!(!d.covered_range(&e("15"), &e("7")), "other end uncovered");
    assert!(!DoneSet::new().covered_range(&e("1"), &e("1")));
}

#[test]
fn insert_merges_exactly_what_it_overlaps_or_touches() {
    // (existing spans, inserted, spans after)
    type Case<'a> = (&'a [(&'a str, &'a str)], (&'a str, &'a str), &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (&[], ("5", "3"), &[("5", "3")]),
        (&[], ("3", "5"), &[("5", "3")]),
        (&[("20", "10")], ("30", "25"), &[("30", "25"), ("20", "10")]),
        (&[("20", "10")], ("5", "1"), &[("20", "10"), ("5", "1")]),
        (&[("20", "10")], ("25", "20"), &[("25", "10")]),
        (&[("20", "10")], ("10", "5"), &[("20", "5")]),
        (&[("20", "10")], ("15", "12"), &[("20", "10")]),
        (&[("20", "10")], ("25", "5"), &[("25", "5")]),
        (&[("30", "25"), ("20", "10"), ("5", "1")], ("22", "8"), &[("30", "25"), ("22", "8"), ("5", "1")]),
        (&[("30", "25"), ("20", "10"), ("5", "1")], ("25", "5"), &[("30", "1")]),
        (
            &[("30", "25"), ("20", "10"), ("5", "1")],
            ("24", "21"),
            &[("30", "25"), ("24", "21"), ("20", "10"), ("5", "1")],
        ),
    ];
    for (before, (h, l), after) in cases {
        let mut d = set(before);
        d.insert(e(h), e(l));
        assert_eq!(spans_of(&d), pairs(after), "{before:?} + [{h}, {l}]");
    }
}

#[test]
fn register_joins_done_neighbours_on_both_sides() {
    let list: Vec<Epoch> = ["50", "40", "30", "20"].iter().map(|s| e(s)).collect();
    let refs: Vec<&Epoch> = list.iter().collect();
    // The older neighbour done first, then the newer one.
    let mut d = DoneSet::new();
    d.register(&refs, [2]);
    d.register(&refs, [1]);
    assert_eq!(spans_of(&d), pairs(&[("40", "30")]));
    // The newer neighbour done first.
    let mut d = DoneSet::new();
    d.register(&refs, [1]);
    d.register(&refs, [2]);
    assert_eq!(spans_of(&d), pairs(&[("40", "30")]));
    // The first and the last of the list, then the rest.
    let mut d = DoneSet::new();
    d.register(&refs, [0]);
    d.register(&refs, [3, 9]);
    assert_eq!(spans_of(&d), pairs(&[("50", "50"), ("20", "20")]));
    d.register(&refs, [1]);
    assert_eq!(spans_of(&d), pairs(&[("50", "40"), ("20", "20")]));
    d.register(&refs, [2]);
    assert_eq!(spans_of(&d), pairs(&[("50", "20")]));
}

#[test]
fn cap_table() {
    // (spans, limit, trimmed, spans after)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, bool, &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (&[], "10", false, &[]),
        (&[("20", "10")], "20", false, &[("20", "10")]),
        (&[("20", "10")], "25", false, &[("20", "10")]),
        (&[("20", "10")], "15", true, &[("15", "10")]),
        (&[("20", "10")], "10", true, &[("10", "10")]),
        (&[("20", "10")], "9", true, &[]),
        (&[("30", "25"), ("20", "10")], "20", true, &[("20", "10")]),
        (&[("30", "25"), ("20", "10")], "22", true, &[("20", "10")]),
        (&[("30", "25"), ("20", "10")], "25", true, &[("25", "25"), ("20", "10")]),
    ];
    for (before, limit, trimmed, after) in cases {
        let mut d = set(before);
        assert_eq!(d.cap(&e(limit)), *trimmed, "{before:?} cap {limit}");
        assert_eq!(spans_of(&d), pairs(after), "{before:?} cap {limit}");
    }
}

#[test]
fn union_of_sets() {
    let a = set(&[("30", "25"), ("5", "1")]);
    let b = set(&[("26", "20"), ("10", "8")]);
    let u = DoneSet::union([&a, &b]);
    assert_eq!(spans_of(&u), pairs(&[("30", "20"), ("10", "8"), ("5", "1")]));
    let mut m = a.clone();
    m.merge(&b);
    assert_eq!(m, u);
    assert!(DoneSet::union([]).is_empty());
}

fn arb_set() -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec((0u32..100, 0u32..100), 0..8)
}

fn build(spans: &[(u32, u32)]) -> DoneSet {
    let mut d = DoneSet::new();
    for (a, b) in spans {
        d.insert(e(&a.to_string()), e(&b.to_string()));
    }
    d
}

proptest! {
    /// A union covers exactly what one of its sets covers.
    #[test]
    fn union_covers_what_any_part_covers(a in arb_set(), b in arb_set(), c in arb_set(), probe in 0u32..100) {
        let sets = [build(&a), build(&b), build(&c)];
        let u = DoneSet::union(&sets);
        let p = e(&probe.to_string());
        prop_assert_eq!(u.covered(&p), sets.iter().any(|s| s.covered(&p)));
        prop_assert_eq!(DoneSet::union([&sets[2], &sets[0], &sets[1]]), u);
    }

    /// Two epochs are in one span exactly when everything between them is covered.
    #[test]
    fn covered_range_is_a_covered_interval(spans in arb_set(), x in 0u32..100, y in 0u32..100) {
        let d = build(&spans);
        let (lo, hi) = (x.min(y), x.max(y));
        let all_between = (lo..=hi).all(|p| d.covered(&e(&p.to_string())))
            && (lo..hi).all(|p| d.covered(&e(&format!("{p}.5"))));
        prop_assert_eq!(d.covered_range(&e(&x.to_string()), &e(&y.to_string())), all_between);
    }

    /// A cap keeps exactly what was covered at or below the limit.
    #[test]
    fn cap_keeps_what_lies_at_or_below(spans in arb_set(), limit in 0u32..100, probe in 0u32..100) {
        let mut d = build(&spans);
        let before = d.clone();
        let p = e(&probe.to_string());
        let trimmed = d.cap(&e(&limit.to_string()));
        prop_assert_eq!(d.covered(&p), before.covered(&p) && probe <= limit);
        prop_assert_eq!(trimmed, before.newest().is_some_and(|n| *n > e(&limit.to_string())));
    }
}

#[test]
fn an_insert_keeps_its_own_spelling_of_an_equal_bound() {
    // `5` and `5.0` are one point; the merged span takes the inserted text
    // where the bounds compare Equal, so what is written back is stable.
    let mut d = set(&[("5.0", "3.0")]);
    d.insert(e("5"), e("3"));
    assert_eq!(spans_of(&d), pairs(&[("5", "3")]));
}
