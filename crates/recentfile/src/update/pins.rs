//! Table tests that pin recording events: epochs from the clock and from
//! the caller, the window, dirtymarks and the checks on caller input
//! (protocol.md 7, 8).

use super::*;

fn e(s: &str) -> Epoch {
    Epoch::parse(s).unwrap()
}

fn change(p: &str, kind: EventKind, epoch: Option<&str>) -> Change {
    Change { path: p.into(), kind, epoch: epoch.map(e) }
}

fn listed(rf: &Recentfile) -> Vec<String> {
    rf.events.iter().map(|ev| format!("{} {} {}", ev.epoch, ev.path, ev.kind)).collect()
}

fn file(events: &[(&str, &str)]) -> Recentfile {
    Recentfile::from_events(events.iter().map(|(t, p)| Event::new(e(t), *p, EventKind::New)).collect())
}

use EventKind::{Delete, New};

#[test]
fn a_batch_goes_on_top_in_input_order_and_replaces_older_events() {
    let mut rf = file(&[("1700000050.5", "b"), ("1700000040.5", "keep")]);
    let out = batch_update(
        &mut rf,
        3600,
        &[change("a", New, None), change("b", Delete, None), change("a", Delete, None)],
        &e("1700000100.5"),
    );
    assert_eq!(out, Outcome { inserted: 3, truncated: 0, dirty: false, write: true });
    assert_eq!(listed(&rf), ["1700000100.50000016 a delete", "1700000100.5000001 b delete", "1700000040.5 keep new"]);
    assert_eq!(rf.meta.dirtymark, None);
}

#[test]
fn the_clock_behind_the_newest_event_bumps_above_it() {
    let mut rf = file(&[("1700000200.5", "a")]);
    batch_update(&mut rf, 3600, &[change("b", New, None)], &e("1700000100.5"));
    assert_eq!(listed(&rf), ["1700000200.5000001 b new", "1700000200.5 a new"]);
}

#[test]
fn nothing_to_do_writes_only_an_empty_file() {
    let mut empty = Recentfile::default();
    assert_eq!(batch_update(&mut empty, 3600, &[], &e("1700000100.5")), Outcome { write: true, ..Outcome::default() });
    let mut rf = file(&[("1700000050.5", "a")]);
    assert_eq!(batch_update(&mut rf, 3600, &[], &e("1700000100.5")), Outcome::default());
}

#[test]
fn the_window_truncates_after_a_merge_only() {
    let events = [("1700003000", "new"), ("1700000000", "at-window"), ("1699999999", "old")];
    // Never merged: nothing goes.
    let mut rf = file(&events);
    let out = batch_update(&mut rf, 3600, &[], &e("1700003600"));
    assert_eq!((out.truncated, out.write), (0, false));
    // Merged: what lies before now - 1h goes, the event at the bound stays.
    let mut rf = file(&events);
    rf.meta.merged = Merged::Into { epoch: Some(e("1700003000")), into_interval: None, time: None };
    let out = batch_update(&mut rf, 3600, &[], &e("1700003600"));
    assert_eq!(out, Outcome { inserted: 0, truncated: 1, dirty: false, write: true });
    assert_eq!(listed(&rf), ["1700003000 new new", "1700000000 at-window new"]);
    // The last merge holds back what was not merged yet.
    let mut rf = file(&events);
    rf.meta.merged = Merged::Into { epoch: Some(e("1699999999")), into_interval: None, time: None };
    assert_eq!(batch_update(&mut rf, 3600, &[], &e("1700003600")).truncated, 0);
    // A new event lies inside the window it measures from.
    let mut rf = file(&events);
    rf.meta.merged = Merged::Into { epoch: Some(e("1700003000")), into_interval: None, time: None };
    let out = batch_update(&mut rf, 3600, &[change("x", New, None)], &e("1700003600"));
    assert_eq!((out.inserted, out.truncated), (1, 1));
    assert_eq!(rf.events.len(), 3);
}

#[test]
fn a_dirty_insert_does_not_truncate_and_resets_merged() {
    let events = [("1700003000", "new"), ("1699999999", "old")];
    let mut rf = file(&events);
    rf.meta.merged = Merged::Into { epoch: Some(e("1700003000")), into_interval: None, time: None };
    let out =
        batch_update(&mut rf, 3600, &[change("d", New, Some("1700001000")), change("x", New, None)], &e("1700003600"));
    assert_eq!(out, Outcome { inserted: 2, truncated: 0, dirty: true, write: true });
    assert_eq!(listed(&rf), ["1700003600.0 x new", "1700003000 new new", "1700001000.0 d new", "1699999999 old new"]);
    assert_eq!(rf.meta.merged, Merged::Reset);
    assert_eq!(rf.meta.dirtymark, Some(e("1700003600")));
    // A dirty insert above the last merge keeps it.
    let mut rf = file(&events);
    rf.meta.merged = Merged::Into { epoch: Some(e("1700000000")), into_interval: None, time: None };
    batch_update(&mut rf, 3600, &[change("d", New, Some("1700001000"))], &e("1700003600"));
    assert_eq!(rf.meta.merged.epoch(), Some(&e("1700000000")));
    // At the last merge's epoch it resets.
    let mut rf = file(&events);
    rf.meta.merged = Merged::Into { epoch: Some(e("1700001000.0")), into_interval: None, time: None };
    batch_update(&mut rf, 3600, &[change("d", New, Some("1700001000"))], &e("1700003600"));
    assert_ne!(rf.meta.merged, Merged::Reset, "not below the merge: {:?}", rf.meta.merged);
}

#[test]
fn dirty_items_go_in_newest_first_and_replace_their_paths() {
    let mut rf = file(&[("1700000500", "top"), ("1700000100", "p")]);
    let out = batch_update(
        &mut rf,
        3600,
        &[
            change("q", New, Some("1700000200")),
            change("p", Delete, Some("1700000300")),
            change("r", New, Some("1700000200.5")),
        ],
        &e("1700001000"),
    );
    assert_eq!(out.inserted, 3);
    assert_eq!(
        listed(&rf),
        ["1700000500 top new", "1700000300.0 p delete", "1700000200.5 r new", "1700000200.0 q new"]
    );
    // Within one second the full comparison decides.
    let mut rf = Recentfile::default();
    batch_update(
        &mut rf,
        3600,
        &[change("a", New, Some("1700000200.25")), change("b", New, Some("1700000200.75"))],
        &e("1700001000"),
    );
    assert_eq!(listed(&rf), ["1700000200.75 b new", "1700000200.25 a new"]);
    // A caller epoch equal to the clock is taken from the clock.
    let mut rf = file(&[("1700000999", "x")]);
    batch_update(&mut rf, 3600, &[change("c", New, Some("1700001000.5"))], &e("1700001000.5"));
    assert_eq!(listed(&rf), ["1700001000.5 c new", "1700000999 x new"]);
}

#[test]
fn a_dirty_insert_replaces_a_path_of_the_same_batch() {
    let mut rf = Recentfile::default();
    batch_update(
        &mut rf,
        3600,
        &[change("p", New, Some("1700000300")), change("p", Delete, Some("1700000200"))],
        &e("1700001000"),
    );
    assert_eq!(listed(&rf), ["1700000200.0 p delete"]);
}

#[test]
fn dirty_collisions_at_the_top_bump_upwards() {
    let mut rf = file(&[("1700000300.5", "a")]);
    batch_update(&mut rf, 3600, &[change("b", New, Some("1700000300.5"))], &e("1700001000"));
    assert_eq!(listed(&rf), ["1700000300.5000001 b new", "1700000300.5 a new"]);
    // Below a neighbour: towards it.
    let mut rf = file(&[("1700000301", "n"), ("1700000300.5", "a")]);
    batch_update(&mut rf, 3600, &[change("b", New, Some("1700000300.5"))], &e("1700001000"));
    assert_eq!(listed(&rf), ["1700000301 n new", "1700000300.75 b new", "1700000300.5 a new"]);
    // Placed at the end when older than everything.
    let mut rf = file(&[("1700000301", "n"), ("1700000300.5", "a")]);
    batch_update(&mut rf, 3600, &[change("b", New, Some("1700000100"))], &e("1700001000"));
    assert_eq!(listed(&rf), ["1700000301 n new", "1700000300.5 a new", "1700000100.0 b new"]);
}

#[test]
fn spread_epochs() {
    let cases = [
        ("1700000000", 1, "1700000000.0000001"),
        ("1700000000.5", 12, "1700000000.5000012"),
        ("1700000000.123456789", 1, "1700000000.123456790"),
        ("9.9999999", 1, "10.0000000"),
        ("9.9999999", 10_000_001, "11.0000000"),
    ];
    for (epoch, k, want) in cases {
        assert_eq!(spread_epoch(&e(epoch), k).map(|x| x.as_str().to_string()), Some(want.to_string()), "{epoch} {k}");
    }
    let thirty = format!("1.{}", "1".repeat(30));
    assert!(spread_epoch(&e(&thirty), 1).is_some());
    let long = format!("1.{}", "1".repeat(31));
    assert_eq!(spread_epoch(&e(&long), 1), None);
}

#[test]
fn caller_epochs() {
    let now = e("1700000000");
    let ok = |x: &str, future_ok| check_caller_epoch(&e(x), &now, future_ok).is_ok();
    assert!(!ok("0", false));
    assert!(!ok("0.0", true));
    assert!(ok("0.000001", false));
    assert!(ok("1700000000", false));
    assert!(ok("1700003600", false));
    assert!(!ok("1700003600.5", false));
    assert!(ok("1700003600.5", true));
    assert!(ok("99999999999", true));
    let err = check_caller_epoch(&e("99999999999"), &now, false).unwrap_err().to_string();
    assert!(err.contains("99999999999") && err.contains("more than an hour"), "{err}");
    assert!(check_caller_epoch(&e("0"), &now, false).unwrap_err().to_string().contains("not a positive number"));
}

#[test]
fn path_errors_name_the_path() {
    let roots = vec![PathBuf::from("/pfx/origin")];
    let outside = relative_to_root("/etc/passwd", &roots).unwrap_err();
    assert_eq!(outside.to_string(), "/etc/passwd: outside the tree root /pfx/origin");
    let root = relative_to_root("/pfx/origin/", &roots).unwrap_err();
    assert_eq!(root.to_string(), "/pfx/origin/: names the tree root itself, not a file");
    assert!(matches!(relative_to_root("a/../../x", &roots), Err(PathError::Outside(_))));
    assert!(matches!(relative_to_root("..", &roots), Err(PathError::Outside(_))));
    assert_eq!(relative_to_root("..a/b", &roots).unwrap(), "..a/b");
    assert_eq!(relative_to_root("x/../y", &roots).unwrap(), "y");
    assert_eq!(
        relative_to_root("/pfx/origin/a/b", &[PathBuf::from("/x"), PathBuf::from("/pfx/origin")]).unwrap(),
        "a/b"
    );
}

#[test]
fn normalize_table() {
    let cases = [
        ("a/./b", "a/b"),
        ("a/b/..", "a"),
        ("a/b/../../c", "c"),
        ("x/../y", "y"),
        ("../x", "../x"),
        ("../../x", "../../x"),
        ("/a/../b", "/b"),
        ("/../b", "/../b"),
    ];
    for (p, want) in cases {
        assert_eq!(normalize(Path::new(p)), PathBuf::from(want), "{p}");
    }
}

#[test]
fn a_clock_behind_the_list_measures_the_window_from_the_new_epoch() {
    let mut rf = file(&[("1700005000", "top"), ("1700001500", "recent"), ("1700001000", "old")]);
    rf.meta.merged = Merged::Into { epoch: Some(e("1700005000")), into_interval: None, time: None };
    let out = batch_update(&mut rf, 3600, &[change("x", New, None)], &e("1700004000"));
    assert_eq!(out.truncated, 1);
    assert_eq!(listed(&rf).last().unwrap(), "1700001500 recent new");
}

#[test]
fn dirtymark_of_a_whole_second_clock_and_an_equal_caller_epoch() {
    let mut rf = Recentfile::default();
    batch_update(&mut rf, 3600, &[change("p", New, Some("1700001000"))], &e("1700001000"));
    assert_eq!(listed(&rf), ["1700001000.0 p new"]);
    assert_eq!(rf.meta.dirtymark.as_ref().map(Epoch::as_str), Some("1700001000"));
}

#[test]
fn a_caller_epoch_at_the_clock_is_the_clock_bumped_above_the_list() {
    // Not in the past: it takes the clock's way, above a newest event
    // that is ahead of the clock.
    let mut rf = file(&[("1700001000.5", "ahead")]);
    batch_update(&mut rf, 3600, &[change("p", New, Some("1700001000"))], &e("1700001000"));
    assert_eq!(listed(&rf), ["1700001000.5000001 p new", "1700001000.5 ahead new"]);
    assert_eq!(rf.meta.dirtymark.as_ref().map(Epoch::as_str), Some("1700001000.5000001"));
}
