//! Merging a smaller recentfile into the next larger one (protocol.md 9) and the
//! cascade's timing rule (protocol.md 10). Pure: the caller reads, locks, writes.
//!
//! Fixed reference bugs (README.mirror):
//! - 9.4: a delete that reaches Z removes the path's old `new` event from
//!   Z even when nothing else changed (the reference left Z unchanged, so
//!   the path came back once the delete aged out of the smaller files).
//! - 9.2: keeping deletes in Z is the caller's `keep_deletes` flag
//!   (`--keep-deletes`), not a meta key, which would break Perl readers.

use crate::epoch::{perl_min, Epoch, PerlNum};
use crate::format::{first_of_each_path, path_set, Event, EventKind, Merged, PathSet, Recentfile};
use crate::interval::Interval;

/// Merge `small` (interval `small_iv`) into `big` (interval `big_iv`) at
/// clock `now`. Returns true when something was done: then both files
/// must be written (`big` changed, `small.meta.merged` updated).
///
/// `big` takes `small`'s events newer than its last merge, each path once
/// (the newer event wins, protocol.md 9.3), and drops what falls out of its own
/// window; deletes are dropped on the way into Z unless `keep_deletes`
/// (protocol.md 9.2).
///
/// ```
/// use recentfile::aggregate::merge;
/// use recentfile::{Epoch, Event, EventKind, Interval, Recentfile};
///
/// let ev = |e: &str, p: &str| Event::new(Epoch::parse(e).unwrap(), p, EventKind::New);
/// let mut small = Recentfile::from_events(vec![ev("1700003000", "a"), ev("1700002000", "b")]);
/// let mut big = Recentfile::from_events(vec![ev("1700001000", "a"), ev("1700000000", "c")]);
/// let (h1, h6) = (Interval::parse("1h")?, Interval::parse("6h")?);
///
/// assert!(merge(&mut big, &h6, &mut small, &h1, &Epoch::parse("1700003100")?, false));
/// let paths: Vec<&recentfile::RelPath> = big.events.iter().map(|e| &e.path).collect();
/// assert_eq!(paths, ["a", "b", "c"]);
/// assert_eq!(big.events[0].epoch.as_str(), "1700003000");
/// // The small file remembers how far it was merged.
/// assert_eq!(small.meta.merged.epoch().map(|e| e.as_str()), Some("1700003000"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn merge(
    big: &mut Recentfile,
    big_iv: &Interval,
    small: &mut Recentfile,
    small_iv: &Interval,
    now: &Epoch,
    keep_deletes: bool,
) -> bool {
    debug_assert!(big_iv.seconds() > small_iv.seconds());
    let trimmed = trim_to_window(big, big_iv, small);
    let mut done = big.events.is_empty() || trimmed;
    let is_z = big_iv.is_z();
    let big_newest = big.newest().map(|e| e.epoch.clone());
    // The incoming events: all of the source's (see trim_to_window). They
    // replace the target's events of the same path.
    debug_assert!(small.events.is_sorted_by(|a, b| a.epoch >= b.epoch));
    let n_in = small.events.len();
    // First of its path across (incoming, target): later ones are dropped.
    let mut first = first_of_each_path(&[&small.events, &big.events]);
    let mut incoming: Vec<Event> = Vec::new();
    // Deletes headed for Z: they only remove the path's events there.
    let mut z_deletes: PathSet = path_set(0);
    for (ev, _) in small.events.iter().zip(&first).filter(|(_, f)| **f) {
        if is_z && ev.kind == EventKind::Delete && !keep_deletes {
            z_deletes.insert(ev.path.as_bytes());
            continue;
        }
        if big_newest.as_ref().is_none_or(|n| ev.epoch > *n) {
            done = true;
        }
        incoming.push(ev.clone());
    }
    // A delete that reaches Z changes it when Z lists the path (protocol.md 9.4, 16).
    if !done && !z_deletes.is_empty() && big.events.iter().any(|e| z_deletes.contains(e.path.as_bytes())) {
        done = true;
    }
    if !done {
        return false;
    }
    drop(z_deletes);
    let old = std::mem::take(&mut big.events);
    // Which of the target's events stay: not replaced by an incoming path,
    // and the first (newest) of its path.
    let keep = first.split_off(n_in);
    drop(first);
    let kept = old.into_iter().zip(keep).filter_map(|(y, k)| k.then_some(y));
    let mut merged = merge_newest_first(incoming, kept);
    repair_equal_epochs(&mut merged);
    big.events = merged;
    // The target takes the source's dirtymark when it has none or another one.
    if small.meta.dirtymark.is_some() && big.meta.dirtymark != small.meta.dirtymark {
        big.meta.dirtymark = small.meta.dirtymark.clone();
    }
    small.meta.merged = Merged::Into {
        epoch: big.newest().map(|e| e.epoch.clone()),
        into_interval: Some(big_iv.spec().to_string()),
        time: Some(now.as_str().to_string()),
    };
    true
}

/// Drop the target's events that fell out of its window (protocol.md 9,
/// step 4), as the reference's `_merge_locked` cuts its own list
/// (`$my_recent`, the larger file's). True when that changed the target,
/// or when the dirtymarks differ (the target is rewritten uncut).
///
/// Only a target that was merged into the next file before (it has a
/// `merged` mark) and has the source's dirtymark is cut, and only below
/// min(E − its interval, its `merged.epoch` or 0), E being the source's
/// newest epoch (the target's if the source is empty), with the
/// reference's List::Util::min (the winner keeps its text), lowered to
/// the source's oldest epoch: what it keeps covers its window, all it has
/// not yet handed on to the next file, and all the source still covers.
/// That lowering also means the bound never reaches an incoming event:
/// the reference filters the source's events by it too, a filter that
/// cannot drop anything, so `merge` takes all of them.
fn trim_to_window(big: &mut Recentfile, big_iv: &Interval, small: &Recentfile) -> bool {
    let Some(e) = small.newest().or(big.newest()).map(|e| e.epoch.clone()) else { return false };
    let dm = |rf: &Recentfile| rf.meta.dirtymark.as_ref().map_or("0", |d| d.as_str()).to_string();
    if dm(small) != dm(big) {
        return true;
    }
    if big.meta.merged == Merged::Absent {
        return false;
    }
    let window = PerlNum::float(e.to_f64() - big_iv.seconds() as f64);
    let merged = big.meta.merged.epoch().map_or_else(|| PerlNum::float(0.0), PerlNum::text);
    let mut b = perl_min(&[window, merged]).expect("two arguments");
    if let Some(oldest) = small.oldest() {
        if oldest.epoch < b {
            b = oldest.epoch.clone();
        }
    }
    let mut trimmed = false;
    while big.events.last().is_some_and(|ev| ev.epoch < b) {
        big.events.pop();
        trimmed = true;
    }
    trimmed
}

/// Two lists sorted newest first as one, an incoming event before a kept
/// one of the same epoch (`repair_equal_epochs` then separates them).
fn merge_newest_first(incoming: Vec<Event>, kept: impl Iterator<Item = Event>) -> Vec<Event> {
    let mut merged = Vec::with_capacity(incoming.len() + kept.size_hint().1.unwrap_or(0));
    let mut a = incoming.into_iter().peekable();
    let mut b = kept.peekable();
    loop {
        match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.epoch >= y.epoch => merged.push(a.next().expect("peeked")),
            (_, Some(_)) => merged.push(b.next().expect("peeked")),
            (Some(_), None) => merged.push(a.next().expect("peeked")),
            (None, None) => break,
        }
    }
    merged
}

/// Consecutive equal epochs (two inputs that shared an epoch) are bumped,
/// oldest first, until unused (protocol.md 7.4, "A merge"). Equal as numbers: the
/// reference repairs identical strings only, which leaves `1.5` beside
/// `1.50`, a duplicate to every reader that takes epochs as numbers.
fn repair_equal_epochs(list: &mut [Event]) {
    for i in (0..list.len().saturating_sub(1)).rev() {
        if list[i].epoch.cmp_value(&list[i + 1].epoch) == std::cmp::Ordering::Equal {
            let mut bumped = list[i + 1].epoch.inc();
            if i > 0 && bumped.cmp_value(&list[i - 1].epoch) != std::cmp::Ordering::Less {
                // No room (a 64-character neighbour): keep the bump, which
                // the strict-order check before writing refuses loudly.
                bumped = list[i + 1].epoch.inc_towards(&list[i - 1].epoch).unwrap_or(bumped);
            }
            list[i].epoch = bumped;
        }
    }
}

/// The age in seconds of a file with mtime `mtime_secs` (whole seconds, as
/// `stat` gives them), as the reference's aggregate measures it:
/// `local $^T = time; 86400 * -M $file`. Its `time` is the whole-second
/// clock, and `-M` is `($^T - mtime) / 86400` as a double, so the age is
/// ⌊now⌋ − mtime through that division (protocol.md 10): a clock step that lands
/// on an interval length is not yet "older than" it.
pub fn file_age(now: &Epoch, mtime_secs: i64) -> f64 {
    86400.0 * ((now.whole_seconds() as f64 - mtime_secs as f64) / 86400.0)
}

/// Whether the cascade goes on from file `i` to file `i + 1` (protocol.md 10):
/// always from the principal, always with `force`, when the larger file
/// does not exist, or when its age exceeds the interval one step below.
pub fn merge_due(i: usize, intervals: &[Interval], force: bool, target_age_secs: Option<f64>) -> bool {
    if i == 0 || force {
        return true;
    }
    match target_age_secs {
        None => true,
        Some(age) => age > intervals[i - 1].seconds() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Epoch {
        Epoch::parse(s).unwrap()
    }
    fn ev(epoch: &str, path: &str, kind: EventKind) -> Event {
        Event::new(e(epoch), path, kind)
    }
    fn iv(s: &str) -> Interval {
        Interval::parse(s).unwrap()
    }

    #[test]
    fn delete_only_change_reaches_z() {
        let mut small = Recentfile::from_events(vec![
            ev("1700000300.5", "gone", EventKind::Delete),
            ev("1700000100.5", "keep", EventKind::New),
        ]);
        let mut z = Recentfile::from_events(vec![
            ev("1700000100.5", "keep", EventKind::New),
            ev("1700000050.5", "gone", EventKind::New),
        ]);
        assert!(merge(&mut z, &iv("Z"), &mut small, &iv("1Y"), &e("1700000400.5"), false));
        let paths: Vec<&crate::RelPath> = z.events.iter().map(|e| &e.path).collect();
        assert_eq!(paths, ["keep"]);
    }

    #[test]
    fn keep_deletes_keeps_them_in_z() {
        let mut small = Recentfile::from_events(vec![ev("1700000300.5", "gone", EventKind::Delete)]);
        let mut z = Recentfile::from_events(vec![ev("1700000050.5", "gone", EventKind::New)]);
        assert!(merge(&mut z, &iv("Z"), &mut small, &iv("1Y"), &e("1700000400.5"), true));
        assert_eq!(z.events, vec![ev("1700000300.5", "gone", EventKind::Delete)]);
    }

    #[test]
    fn nothing_new_means_nothing_done() {
        let mut small = Recentfile::from_events(vec![ev("1700000100.5", "a", EventKind::New)]);
        let mut big = small.clone();
        assert!(!merge(&mut big, &iv("6h"), &mut small, &iv("1h"), &e("1700000400.5"), false));
    }

    #[test]
    fn file_age_is_measured_from_whole_seconds() {
        // A pinned clock half a second past an interval length: the
        // reference's age is exactly the interval, so no merge yet.
        let ivs: Vec<Interval> = ["1h", "6h", "1d", "Z"].iter().map(|s| iv(s)).collect();
        let age = file_age(&e("1700025200.5"), 1_700_003_600);
        assert_eq!(age, 21600.0);
        assert!(!merge_due(2, &ivs, false, Some(age)));
        assert!(merge_due(2, &ivs, false, Some(file_age(&e("1700025201.0"), 1_700_003_600))));
        assert_eq!(file_age(&e("1700000000.9"), 1_700_003_600), -3600.0);
    }

    #[test]
    fn timing_rule() {
        let ivs: Vec<Interval> = ["1h", "6h", "1d", "Z"].iter().map(|s| iv(s)).collect();
        assert!(merge_due(0, &ivs, false, Some(0.0)));
        assert!(!merge_due(1, &ivs, false, Some(3600.0)));
        assert!(merge_due(1, &ivs, false, Some(3600.5)));
        assert!(merge_due(2, &ivs, false, None));
        assert!(merge_due(2, &ivs, true, Some(0.0)));
    }
}

#[cfg(test)]
mod pins;
