//! Table tests that pin news, settledness and the overview table: each
//! case states one rule of protocol.md 11 so that breaking it fails here.

use super::*;
use crate::format::Meta;

fn e(s: &str) -> Epoch {
    Epoch::parse(s).unwrap()
}

fn file(events: &[(&str, &str, EventKind)]) -> Recentfile {
    Recentfile::from_events(events.iter().map(|(t, p, k)| Event::new(e(t), *p, *k)).collect())
}

fn listed(events: &[&Event]) -> Vec<(String, String)> {
    events.iter().map(|ev| (ev.epoch.as_str().to_string(), ev.path.to_string())).collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

use EventKind::{Delete, New};

#[test]
fn each_filter_field_decides_alone() {
    let ev = |t: &str, k| Event::new(e(t), "p", k);
    let at = ev("100.5", New);
    // (filter, accepts `at`)
    let cases: Vec<(NewsFilter, bool)> = vec![
        (NewsFilter::default(), true),
        (NewsFilter { after: Some(e("100")), ..Default::default() }, true),
        (NewsFilter { after: Some(e("100.5")), ..Default::default() }, false),
        (NewsFilter { after: Some(e("101")), ..Default::default() }, false),
        (NewsFilter { before: Some(e("101")), ..Default::default() }, true),
        (NewsFilter { before: Some(e("100.5")), ..Default::default() }, false),
        (NewsFilter { before: Some(e("100")), ..Default::default() }, false),
        (NewsFilter { skip_deletes: true, ..Default::default() }, true),
        (NewsFilter { contains_path: Some("p".into()), ..Default::default() }, true),
        (NewsFilter { contains_path: Some("q".into()), ..Default::default() }, false),
        (NewsFilter { contains_epoch: Some("100.5".into()), ..Default::default() }, true),
        (NewsFilter { contains_epoch: Some("100.50".into()), ..Default::default() }, false),
        (NewsFilter { contains_type: Some(New), ..Default::default() }, true),
        (NewsFilter { contains_type: Some(Delete), ..Default::default() }, false),
    ];
    for (i, (f, want)) in cases.iter().enumerate() {
        assert_eq!(f.accepts(&at), *want, "case {i}: {f:?}");
    }
    let gone = ev("100.5", Delete);
    assert!(!NewsFilter { skip_deletes: true, ..Default::default() }.accepts(&gone));
    assert!(NewsFilter { skip_deletes: false, ..Default::default() }.accepts(&gone));
    assert!(NewsFilter { contains_type: Some(Delete), ..Default::default() }.accepts(&gone));
}

#[test]
fn news_merges_overlapping_files_newest_first() {
    // A dirty insert leaves the small file's oldest event below the big
    // file's newest: the runs overlap and must be merged by epoch.
    let small = file(&[("300", "a", New), ("100", "b", New)]);
    let big = file(&[("200", "c", New), ("150", "a", New), ("50", "d", Delete)]);
    let all = newest_per_path([&small, &big]);
    assert_eq!(listed(&all), pairs(&[("300", "a"), ("200", "c"), ("100", "b"), ("50", "d")]));
    assert_eq!(all[3].kind, Delete);
    // The small file's only event older than the big file's newest.
    let small = file(&[("100", "x", New)]);
    let big = file(&[("200", "y", New)]);
    assert_eq!(listed(&newest_per_path([&small, &big])), pairs(&[("200", "y"), ("100", "x")]));
    let none: [&Recentfile; 0] = [];
    assert!(newest_per_path(none).is_empty());
}

#[test]
fn max_keeps_the_newest_after_filtering() {
    let small = file(&[("300", "a", Delete), ("250", "b", New)]);
    let big = file(&[("200", "c", New), ("100", "d", New)]);
    let f = NewsFilter { max: Some(2), skip_deletes: true, ..Default::default() };
    assert_eq!(listed(&News::of([&small, &big]).finish(&f)), pairs(&[("250", "b"), ("200", "c")]));
    let f = NewsFilter { max: Some(0), ..Default::default() };
    assert!(News::of([&small, &big]).finish(&f).is_empty());
}

#[test]
fn settled_table() {
    let small = file(&[("300", "a", New), ("200", "b", Delete)]);
    let empty = Recentfile::default();
    let no_files: [&Recentfile; 0] = [];
    let f = |build: fn(&mut NewsFilter)| {
        let mut f = NewsFilter::default();
        build(&mut f);
        f
    };
    assert!(!News::of(no_files).settled(&f(|f| f.max = Some(0))), "no files: nothing is settled");
    assert!(!News::of([&empty]).settled(&f(|f| f.max = Some(0))), "an empty last file settles nothing");
    assert!(!News::of([&small]).settled(&NewsFilter::default()), "no filter: every file counts");
    // --contains-path: found in some file, or not.
    assert!(News::of([&small]).settled(&f(|f| f.contains_path = Some("b".into()))));
    assert!(!News::of([&small]).settled(&f(|f| f.contains_path = Some("z".into()))));
    // --after: settled when the last file reaches down to it (inclusive).
    assert!(News::of([&small]).settled(&f(|f| f.after = Some(e("250")))));
    assert!(News::of([&small]).settled(&f(|f| f.after = Some(e("200")))));
    assert!(!News::of([&small]).settled(&f(|f| f.after = Some(e("199")))));
    // --max: enough accepted events at or above the last file's oldest.
    assert!(News::of([&small]).settled(&f(|f| f.max = Some(2))));
    assert!(!News::of([&small]).settled(&f(|f| f.max = Some(3))));
    let picky = NewsFilter { max: Some(2), skip_deletes: true, ..Default::default() };
    assert!(!News::of([&small]).settled(&picky), "the filtered-out delete does not count");
    // An event of the first file below the last file's oldest is not settled.
    let dirty = file(&[("300", "x", New), ("10", "y", New)]);
    let big = file(&[("250", "z", New), ("200", "w", New)]);
    assert!(!News::of([&dirty, &big]).settled(&f(|f| f.max = Some(4))));
    assert!(News::of([&dirty, &big]).settled(&f(|f| f.max = Some(3))));
    assert!(is_settled(std::slice::from_ref(&small), &f(|f| f.max = Some(1))));
    assert!(!is_settled(&[small], &f(|f| f.max = Some(5))));
}

#[test]
fn news_lines_plain_and_json() {
    let line = |ev: &Event, json| {
        let mut out = Vec::new();
        write_news_line(&mut out, ev, json).unwrap();
        String::from_utf8(out).unwrap()
    };
    let plain = Event::new(e("1700000000.5"), "a/b c", New);
    let gone = Event::new(e("17"), "x", Delete);
    let odd = Event::new(e("1"), "a\nb", New);
    assert_eq!(line(&plain, false), "1700000000.5\tnew\ta/b c\n");
    assert_eq!(line(&gone, false), "17\tdelete\tx\n");
    assert_eq!(line(&odd, false), "1\tnew\ta\\nb\n");
    assert_eq!(line(&gone, true), "{\"epoch\":\"17\",\"type\":\"delete\",\"path\":\"x\"}\n");
    assert_eq!(line(&odd, true), "{\"epoch\":\"1\",\"type\":\"new\",\"path\":\"a\\nb\"}\n");
}

fn summary_rf(events: &[(&str, &str, EventKind)], meta: Meta) -> Recentfile {
    let mut rf = file(events);
    rf.meta = meta;
    rf
}

#[test]
fn summary_of_a_file() {
    let meta = Meta {
        dirtymark: Some(e("1700000000.25")),
        producers: vec![("$0".into(), "rrr".into()), ("time".into(), "1700000999.5".into())],
        merged: Merged::Into { epoch: Some(e("1700000500")), into_interval: Some("6h".into()), time: None },
        ..Meta::default()
    };
    let rf = summary_rf(&[("1700000900", "a", New), ("1700000100.5", "b", New)], meta);
    let s = FileSummary::of(&Interval::parse("1h").unwrap(), &rf);
    assert_eq!(s.interval, "1h");
    assert_eq!(s.seconds, 3600);
    assert_eq!(s.count, 2);
    assert_eq!(s.max.as_deref(), Some("1700000900"));
    assert_eq!(s.min.as_deref(), Some("1700000100.5"));
    assert_eq!(s.dirtymark.as_deref(), Some("1700000000.25"));
    assert_eq!(s.produced.as_deref(), Some("1700000999.5"));
    assert_eq!(s.merged.as_deref(), Some("1700000500"));
    assert!(!s.is_z);
    let z = FileSummary::of(&Interval::parse("Z").unwrap(), &Recentfile::default());
    assert!(z.is_z);
    assert_eq!((z.count, z.max, z.min, z.merged), (0, None, None, None));
    let reset = summary_rf(&[], Meta { merged: Merged::Reset, ..Meta::default() });
    assert_eq!(FileSummary::of(&Interval::parse("1d").unwrap(), &reset).merged, None);
}

fn row(iv: &str, count: usize, max: &str, min: &str) -> FileSummary {
    let i = Interval::parse(iv).unwrap();
    FileSummary {
        interval: iv.into(),
        seconds: i.seconds(),
        count,
        max: Some(max.into()),
        min: Some(min.into()),
        dirtymark: None,
        produced: Some("1700007000.125".into()),
        merged: Some("1700003000".into()),
        is_z: i.is_z(),
    }
}

#[test]
fn overview_table_is_the_references() {
    let rows = [
        row("1h", 3, "1700007200.5", "1700005400.25"),
        row("6h", 0, "0", "0"),
        row("1d", 5, "1700005400.25", "1700000000"),
        row("Z", 9, "1700000000", "1600000000.004"),
    ];
    let want = "\
Ival Cnt           Max           Min         Span   Util Cloud
  1h   3 1700007200.50 1700005400.25      1800.25  50.0%  ^^  
  1d   5 1700005400.25 1700000000.00      5400.25   6.3%   ^^ 
   Z   9 1700000000.00 1600000000.00 100000000.00      -    ^^
";
    assert_eq!(overview_table(&rows, false), want);
    let mut verbose_rows = rows.clone();
    verbose_rows[0].dirtymark = Some("1699999999.999".into());
    let want = "\
Ival Cnt     Dirtymark      Produced        Merged           Max           Min         Span   Util Cloud
  1h   3 1700000000.00 1700007000.12 1700003000.00 1700007200.50 1700005400.25      1800.25  50.0%  ^^  
  1d   5             - 1700007000.12 1700003000.00 1700005400.25 1700000000.00      5400.25   6.3%   ^^ 
   Z   9             - 1700007000.12             - 1700000000.00 1600000000.00 100000000.00      -    ^^
";
    assert_eq!(overview_table(&verbose_rows, true), want);
    assert_eq!(overview_table(&rows[1..2], false), "\n\n");
    assert_eq!(overview_table(&[], true), "\n\n");
}

#[test]
fn overview_of_one_second_span_and_a_zero_window() {
    let mut r = row("1h", 1, "20.5", "10");
    r.seconds = 0;
    let out = overview_table(&[r], false);
    assert_eq!(out, "Ival Cnt   Max   Min  Span Util Cloud\n  1h   1 20.50 10.00 10.50    -    ^^\n");
}
