//! Table tests that pin the merge of a smaller file into a larger one:
//! the window, the merged bound, the order of the result, dirtymarks and
//! equal epochs (protocol.md 9).

use super::*;

fn e(s: &str) -> Epoch {
    Epoch::parse(s).unwrap()
}

fn file(events: &[(&str, &str, EventKind)]) -> Recentfile {
    Recentfile::from_events(events.iter().map(|(t, p, k)| Event::new(e(t), *p, *k)).collect())
}

fn iv(s: &str) -> Interval {
    Interval::parse(s).unwrap()
}

fn listed(rf: &Recentfile) -> Vec<String> {
    rf.events.iter().map(|ev| format!("{} {} {}", ev.epoch, ev.path, ev.kind)).collect()
}

fn merged_at(epoch: &str) -> Merged {
    Merged::Into { epoch: Some(e(epoch)), into_interval: Some("6h".into()), time: None }
}

use EventKind::{Delete, New};

/// Merge `small` (1h) into `big` (6h) at a clock just past the newest event.
fn merge_1h_into_6h(big: &mut Recentfile, small: &mut Recentfile) -> bool {
    merge(big, &iv("6h"), small, &iv("1h"), &e("1700030000"), false)
}

#[test]
fn runs_interleave_by_epoch_and_deletes_travel_below_z() {
    let mut small = file(&[("1700029000", "a", New), ("1700027000", "b", Delete)]);
    let mut big = file(&[("1700028000", "c", New), ("1700026000", "b", New), ("1700025000", "d", New)]);
    assert!(merge_1h_into_6h(&mut big, &mut small));
    assert_eq!(
        listed(&big),
        ["1700029000 a new", "1700028000 c new", "1700027000 b delete", "1700025000 d new"],
        "a delete is an event like any other below Z"
    );
    assert_eq!(small.meta.merged.epoch().map(Epoch::as_str), Some("1700029000"));
    match &small.meta.merged {
        Merged::Into { into_interval, time, .. } => {
            assert_eq!(into_interval.as_deref(), Some("6h"));
            assert_eq!(time.as_deref(), Some("1700030000"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn new_events_reach_z_and_old_ones_stay() {
    let mut small = file(&[("1700029000", "a", New)]);
    let mut z = file(&[("1600000000", "old", New)]);
    assert!(merge(&mut z, &iv("Z"), &mut small, &iv("1Y"), &e("1700030000"), false));
    assert_eq!(listed(&z), ["1700029000 a new", "1600000000 old new"]);
}

#[test]
fn the_window_and_the_last_merge_bound_what_stays() {
    // Newest 1700030000, 6h window: events before 1700008400 fall out
    // unless the last merge reached further back.
    let events = [
        ("1700010000", "in-window", New),
        ("1700008400", "at-window", New),
        ("1700008399", "just-out", New),
        ("1700005000", "out", New),
    ];
    // (merged.epoch, paths kept below the newest)
    let cases: &[(&str, &[&str])] = &[
        ("1700020000", &["in-window", "at-window"]),
        ("1700005000", &["in-window", "at-window", "just-out", "out"]),
        ("1700008399", &["in-window", "at-window", "just-out"]),
    ];
    for (merged, want) in cases {
        let mut small = file(&[("1700030000", "new", New), ("1700029000", "other", New)]);
        let mut big = file(&events);
        big.meta.merged = merged_at(merged);
        assert!(merge_1h_into_6h(&mut big, &mut small));
        let kept: Vec<&str> = big.events.iter().skip(2).map(|ev| ev.path.to_str().unwrap()).collect();
        assert_eq!(kept, *want, "merged at {merged}");
    }
    // Never merged: nothing is dropped.
    let mut small = file(&[("1700030000", "new", New)]);
    let mut big = file(&events);
    assert!(merge_1h_into_6h(&mut big, &mut small));
    assert_eq!(big.events.len(), 5);
}

#[test]
fn the_small_files_oldest_event_lowers_the_bound() {
    // The small file still lists an event below the window (a dirty
    // insert): the big file keeps what lies at or above it.
    let mut small = file(&[("1700030000", "new", New), ("1700006000", "dirty", New)]);
    let mut big = file(&[("1700007000", "kept", New), ("1700005000", "dropped", New)]);
    big.meta.merged = merged_at("1700020000");
    assert!(merge_1h_into_6h(&mut big, &mut small));
    assert_eq!(listed(&big), ["1700030000 new new", "1700007000 kept new", "1700006000 dirty new"]);
}

/// One merge of a 1h file into a 6h file holding [`CUT_TARGET`] that was
/// merged before (or not): its `merged.epoch` (`None`: no `merged` mark),
/// the dirtymarks of the small and the big file, the small file's events
/// and the big file's events afterwards.
struct CutCase {
    name: &'static str,
    merged: Option<&'static str>,
    dirtymarks: (Option<&'static str>, Option<&'static str>),
    small: &'static [(&'static str, &'static str)],
    want: &'static [&'static str],
}

/// E = 1700030000 (the small files' newest): the 6h window starts at
/// 1700008400. The target lists events inside, at and below it.
const CUT_TARGET: &[(&str, &str, EventKind)] = &[
    ("1700020000", "recent", New),
    ("1700008400", "at-window", New),
    ("1700008000", "below-window", New),
    ("1700004000", "old", New),
    ("1700001000", "oldest", New),
];

/// [`CUT_TARGET`] after a merge of `1700030000 new` that cut nothing.
const ALL_KEPT: &[&str] = &[
    "1700030000 new new",
    "1700020000 recent new",
    "1700008400 at-window new",
    "1700008000 below-window new",
    "1700004000 old new",
    "1700001000 oldest new",
];

const CUT_CASES: &[CutCase] = &[
    CutCase {
        name: "never merged: nothing is cut",
        merged: None,
        dirtymarks: (None, None),
        small: &[("1700030000", "new")],
        want: ALL_KEPT,
    },
    CutCase {
        name: "merged past the window: cut below the window, the event at it kept",
        merged: Some("1700025000"),
        dirtymarks: (None, None),
        small: &[("1700030000", "new"), ("1700029000", "b")],
        want: &["1700030000 new new", "1700029000 b new", "1700020000 recent new", "1700008400 at-window new"],
    },
    CutCase {
        name: "merged before the window: cut below the merge, the event at it kept",
        merged: Some("1700004000"),
        dirtymarks: (None, None),
        small: &[("1700030000", "new")],
        want: &[
            "1700030000 new new",
            "1700020000 recent new",
            "1700008400 at-window new",
            "1700008000 below-window new",
            "1700004000 old new",
        ],
    },
    CutCase {
        name: "the small file reaches below the window: the bound is lowered to its oldest",
        merged: Some("1700025000"),
        dirtymarks: (None, None),
        small: &[("1700030000", "new"), ("1700006000", "dirty")],
        want: &[
            "1700030000 new new",
            "1700020000 recent new",
            "1700008400 at-window new",
            "1700008000 below-window new",
            "1700006000 dirty new",
        ],
    },
    CutCase {
        name: "the same dirtymark on both: cut as without one",
        merged: Some("1700025000"),
        dirtymarks: (Some("1600000000"), Some("1600000000")),
        small: &[("1700030000", "new")],
        want: &["1700030000 new new", "1700020000 recent new", "1700008400 at-window new"],
    },
    CutCase {
        name: "a new dirtymark: the target is rewritten uncut",
        merged: Some("1700025000"),
        dirtymarks: (Some("1700029999"), Some("1600000000")),
        small: &[("1700030000", "new")],
        want: ALL_KEPT,
    },
    CutCase {
        name: "a dirtymark where the target has none: uncut",
        merged: Some("1700025000"),
        dirtymarks: (Some("1700029999"), None),
        small: &[("1700030000", "new")],
        want: ALL_KEPT,
    },
];

#[test]
fn the_target_is_cut_below_its_window_and_last_merge_never_below_the_small_files_oldest() {
    for case in CUT_CASES {
        let mut small = Recentfile::from_events(case.small.iter().map(|(t, p)| Event::new(e(t), *p, New)).collect());
        let mut big = file(CUT_TARGET);
        big.meta.merged = case.merged.map_or(Merged::Absent, merged_at);
        small.meta.dirtymark = case.dirtymarks.0.map(e);
        big.meta.dirtymark = case.dirtymarks.1.map(e);
        let small_listed = listed(&small);
        assert!(merge_1h_into_6h(&mut big, &mut small), "{}", case.name);
        let got = listed(&big);
        assert_eq!(got, case.want, "{}", case.name);
        // Whatever the bound: the target holds every event of the small
        // file and its own events inside its window.
        assert!(small_listed.iter().all(|ev| got.contains(ev)), "{}: lost an incoming event", case.name);
        let in_window = CUT_TARGET.iter().filter(|(t, ..)| e(t) >= e("1700008400"));
        assert!(in_window.map(|(t, p, _)| format!("{t} {p} new")).all(|ev| got.contains(&ev)), "{}", case.name);
    }
}

#[test]
fn truncation_alone_is_a_change() {
    let mut small = file(&[("1700030000", "a", New)]);
    let mut big = file(&[("1700030000", "a", New), ("1700001000", "old", New)]);
    big.meta.merged = merged_at("1700030000");
    assert!(merge_1h_into_6h(&mut big, &mut small));
    assert_eq!(listed(&big), ["1700030000 a new"]);
}

#[test]
fn dirtymarks() {
    // A new dirtymark in the small file: the big file takes it, even with
    // nothing new, and is not truncated by its stale merge bound.
    let mut small = file(&[("1700030000", "a", New)]);
    small.meta.dirtymark = Some(e("1700029999.5"));
    let mut big = file(&[("1700030000", "a", New), ("1700001000", "old", New)]);
    big.meta.merged = merged_at("1700030000");
    assert!(merge_1h_into_6h(&mut big, &mut small));
    assert_eq!(big.meta.dirtymark, Some(e("1700029999.5")));
    assert_eq!(big.events.len(), 2);
    // The big file keeps its own when the small one has none.
    let mut small = file(&[("1700030000", "a", New)]);
    let mut big = file(&[("1700020000", "b", New)]);
    big.meta.dirtymark = Some(e("1700000000"));
    assert!(merge_1h_into_6h(&mut big, &mut small));
    assert_eq!(big.meta.dirtymark, Some(e("1700000000")));
    // Equal dirtymarks and nothing new: nothing to do.
    let mut small = file(&[("1700030000", "a", New)]);
    small.meta.dirtymark = Some(e("1700000000"));
    let mut big = small.clone();
    assert!(!merge_1h_into_6h(&mut big, &mut small));
}

#[test]
fn a_delete_of_a_path_z_does_not_list_changes_nothing() {
    let mut small = file(&[("1700000300.5", "never", Delete)]);
    let mut z = file(&[("1700000400.5", "keep", New)]);
    assert!(!merge(&mut z, &iv("Z"), &mut small, &iv("1Y"), &e("1700000500"), false));
    assert_eq!(listed(&z), ["1700000400.5 keep new"]);
}

#[test]
fn equal_epochs_from_two_files_are_bumped_apart() {
    // (small, big, merged epochs)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        (&[("1700000100.5", "a")], &[("1700000100.5", "b")], &["1700000100.5000001", "1700000100.5"]),
        (
            &[("1700000200.5", "p"), ("1700000100.5", "a")],
            &[("1700000100.5", "b")],
            &["1700000200.5", "1700000100.5000001", "1700000100.5"],
        ),
        (
            &[("1700000100.5000001", "p"), ("1700000100.5", "a")],
            &[("1700000100.50", "b")],
            // `1700000100.50` sorts above `1700000100.5` and is the one bumped.
            &["1700000100.5000001", "1700000100.50000005", "1700000100.5"],
        ),
        (&[("1700000100.5", "a")], &[("1700000100.4", "b")], &["1700000100.5", "1700000100.4"]),
        (&[("1700000100.0", "a")], &[("1700000100", "b")], &["1700000100.0000001", "1700000100"]),
        (
            &[("1700000100.0000001", "p"), ("1700000100.0", "a")],
            &[("1700000100", "b")],
            &["1700000100.0000001", "1700000100.00000005", "1700000100"],
        ),
    ];
    for (s, b, want) in cases {
        let mut small = Recentfile::from_events(s.iter().map(|(t, p)| Event::new(e(t), *p, New)).collect());
        let mut big = Recentfile::from_events(b.iter().map(|(t, p)| Event::new(e(t), *p, New)).collect());
        // A new dirtymark makes the merge happen when nothing is newer.
        small.meta.dirtymark = Some(e("1700000000"));
        assert!(merge(&mut big, &iv("6h"), &mut small, &iv("1h"), &e("1700000300"), false));
        let got: Vec<&str> = big.events.iter().map(|ev| ev.epoch.as_str()).collect();
        assert_eq!(got, *want, "{s:?} into {b:?}");
    }
}

mod laws {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// A file: epochs (descending) to (path, delete?), each path once.
    fn build(events: &BTreeMap<u32, (u8, bool)>) -> Recentfile {
        let mut seen = std::collections::HashSet::new();
        let list = events
            .iter()
            .rev()
            .filter(|(_, (p, _))| seen.insert(*p))
            .map(|(t, (p, del))| {
                Event::new(e(&format!("1700{t:06}")), format!("p{p}"), if *del { Delete } else { New })
            })
            .collect();
        Recentfile::from_events(list)
    }

    fn arb_events() -> impl Strategy<Value = BTreeMap<u32, (u8, bool)>> {
        prop::collection::btree_map(0u32..5000, (0u8..16, any::<bool>()), 1..20)
    }

    /// [`build`] with events `step` seconds apart.
    fn build_spaced(events: &BTreeMap<u32, (u8, bool)>, step: u32) -> Recentfile {
        let mut rf = build(events);
        for ev in &mut rf.events {
            let t: u64 = ev.epoch.as_str()[4..].parse().unwrap();
            ev.epoch = e(&(1_700_000_000 + t * u64::from(step)).to_string());
        }
        rf
    }

    proptest! {
        /// A target that was merged before is cut, but keeps every event
        /// of the small file and its own events inside its window (6h back
        /// from the small file's newest), whatever its `merged.epoch`.
        #[test]
        fn a_cut_keeps_the_small_file_and_the_targets_window(
            small in arb_events(),
            big in arb_events(),
            merged in 0u32..50_000,
        ) {
            let (mut small, mut big) = (build_spaced(&small, 10), build_spaced(&big, 10));
            // (Without a newer event, or a cut, the merge does nothing.)
            prop_assume!(small.newest().unwrap().epoch > big.newest().unwrap().epoch);
            big.meta.merged = merged_at(&(1_700_000_000 + merged).to_string());
            let window = e(&(small.newest().unwrap().epoch.to_f64() as u64 - 21_600).to_string());
            let small_paths: BTreeMap<String, EventKind> =
                small.events.iter().map(|ev| (ev.path.to_string(), ev.kind)).collect();
            let mut want = small_paths.clone();
            for ev in big.events.iter().filter(|ev| ev.epoch >= window && !small_paths.contains_key(&ev.path.to_string())) {
                want.insert(ev.path.to_string(), ev.kind);
            }
            prop_assert!(merge(&mut big, &iv("6h"), &mut small, &iv("1h"), &e("1700050000"), false));
            let got: BTreeMap<String, EventKind> = big.events.iter().map(|ev| (ev.path.to_string(), ev.kind)).collect();
            prop_assert!(want.iter().all(|(p, k)| got.get(p) == Some(k)), "want {:?} in {:?}", want, got);
        }

        /// Below Z a merge loses no path: each path of either file is listed
        /// once, with the small file's event where it has one, and the
        /// epochs stay strictly decreasing as numbers.
        #[test]
        fn merge_never_loses_a_live_path(small in arb_events(), big in arb_events()) {
            let (mut small, mut big) = (build(&small), build(&big));
            prop_assume!(small.newest().unwrap().epoch > big.newest().unwrap().epoch);
            let mut want: BTreeMap<String, EventKind> = big.events.iter().map(|ev| (ev.path.to_string(), ev.kind)).collect();
            want.extend(small.events.iter().map(|ev| (ev.path.to_string(), ev.kind)));
            prop_assert!(merge(&mut big, &iv("1Y"), &mut small, &iv("1h"), &e("1700005000"), false));
            let got: BTreeMap<String, EventKind> = big.events.iter().map(|ev| (ev.path.to_string(), ev.kind)).collect();
            prop_assert_eq!(got.len(), big.events.len(), "a path listed twice");
            prop_assert_eq!(got, want);
            prop_assert!(big.events.windows(2).all(|w| w[0].epoch.cmp_value(&w[1].epoch) == std::cmp::Ordering::Greater));
        }
    }
}
