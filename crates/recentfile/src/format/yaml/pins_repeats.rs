//! Pins of [`read_syck_file_beyond`]: a larger file of a cascade whose
//! items repeat the smaller one's byte for byte (all of them, their end,
//! or all of them and more) gives only the events that do not repeat; any
//! other pair (other events, a cut inside an item, another layout or
//! dialect) is declined, so the caller reads the file whole.

use super::super::{Producer, Recentfile};
use super::*;
use std::io::Write;

fn producer() -> Producer {
    Producer { program: "t".into(), time: Epoch::parse("1700000000.5").unwrap() }
}

/// A Syck file of the events at these whole seconds (newest first), path `p<t>`.
fn file_of(secs: &[i64]) -> tempfile::NamedTempFile {
    let events =
        secs.iter().map(|&t| Event::new(Epoch::from_whole_seconds(t), format!("p{t}"), EventKind::New)).collect();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&emit(&Recentfile::from_events(events), &producer())).unwrap();
    f
}

fn text_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

fn beyond(file: &tempfile::NamedTempFile, smaller: &tempfile::NamedTempFile) -> Option<Vec<i64>> {
    read_syck_file_beyond(file.as_file(), smaller.as_file())
        .unwrap()
        .map(|rf| rf.events.iter().map(|e| e.epoch.whole_seconds()).collect())
}

#[test]
fn the_same_items_repeat_whole() {
    let small = file_of(&[50, 40, 30]);
    // Right after init --aggregate: the same events, other meta.
    let big = file_of(&[50, 40, 30]);
    assert_eq!(beyond(&big, &small), Some(vec![]));
    let rf = read_syck_file_beyond(big.as_file(), small.as_file()).unwrap().unwrap();
    assert_eq!(rf.meta, read_syck_file(big.as_file()).unwrap().unwrap().meta, "the larger file's meta");
}

#[test]
fn the_end_of_the_smaller_ones_items_repeats_whole() {
    let small = file_of(&[70, 60, 50, 40, 30]);
    assert_eq!(beyond(&file_of(&[40, 30]), &small), Some(vec![]));
    assert_eq!(beyond(&file_of(&[30]), &small), Some(vec![]));
}

#[test]
fn all_the_smaller_ones_items_and_more_give_the_rest() {
    let small = file_of(&[50, 40, 30]);
    assert_eq!(beyond(&file_of(&[50, 40, 30, 20, 10]), &small), Some(vec![20, 10]));
}

#[test]
fn anything_else_is_declined() {
    let small = file_of(&[50, 40, 30]);
    // Other events, an overlap that is not all of either, one event changed.
    for big in [&[20, 10][..], &[40, 30, 20], &[60, 50, 40, 30], &[50, 40, 31], &[50, 30]] {
        assert_eq!(beyond(&file_of(big), &small), None, "{big:?}");
    }
    let big = text_file(&String::from_utf8(emit(&Recentfile::default(), &producer())).unwrap());
    assert_eq!(beyond(&big, &small), None, "no items");
    // Equal bytes in another dialect or layout are not the same events.
    let syck =
        "--- \nmeta: \n  protocol: 1\nrecent: \n  - \n    epoch: '50'\n    path: \"a\\xC3\\xA4\"\n    type: new\n";
    let libyaml = "meta:\n    protocol: 1\nrecent:\n  - \n    epoch: '50'\n    path: \"a\\xC3\\xA4\"\n    type: new\n";
    let (a, b) = (text_file(syck), text_file(libyaml));
    assert!(read_syck_file(a.as_file()).unwrap().is_some() && read_syck_file(b.as_file()).unwrap().is_some());
    assert_eq!(beyond(&b, &a), None);
    assert_eq!(beyond(&a, &b), None);
}

#[test]
fn a_cut_must_fall_between_items() {
    // The smaller file's items are a byte prefix of the larger one's, but
    // the larger one's first item goes on (a longer path): no cut there.
    let small = text_file("--- \nmeta: \n  protocol: 1\nrecent: \n  - \n    epoch: '50'\n    path: a\n    type: new\n");
    let big = text_file(
        "--- \nmeta: \n  protocol: 1\nrecent: \n  - \n    epoch: '50'\n    path: a\n    type: new\n    zzz: 3\n",
    );
    assert_eq!(beyond(&big, &small), None);
    // The suffix case: the larger file's items begin inside one of the smaller one's.
    let small = text_file("--- \nmeta: \n  protocol: 1\nrecent: \n  - \n    epoch: '50'\n    path: x\n    type: new\n");
    let big = text_file("--- \nmeta: \n  protocol: 1\nrecent: \n    path: x\n    type: new\n");
    assert_eq!(beyond(&big, &small), None);
}
