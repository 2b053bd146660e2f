//! Recording events in a recentfile (protocol.md 8.2–8.4): the pure core of
//! `update`, `init`, `fsck --repair` and `watch`.
//!
//! Fixed reference bugs (documented in README.mirror):
//! - 8.2: a path outside the root is an error, decided by whole path
//!   components (the reference's bare prefix test recorded `pfx/origin2/f`
//!   as `2/f`); `.` components are removed as well as `seg/..`.
//! - 8.3 step 5: a repeated dirty update of one path at one epoch leaves
//!   one event, not the epoch plus a bumped copy.
//! - 4.2: only `new` and `delete` are accepted.

use crate::epoch::{perl_min, Epoch, PerlNum};
use crate::format::{check_relative_path, shown_path, Event, EventKind, Merged, Recentfile};
use crate::path::RelPath;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// One change to record. `epoch: Some` is a dirty insert (an event in the past).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Relative to the collection's root (see [`relative_to_root`]).
    pub path: RelPath,
    /// `new` or `delete`.
    pub kind: EventKind,
    /// The event's time for a dirty insert; `None` takes the clock.
    pub epoch: Option<Epoch>,
}

/// What a batch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Events added.
    pub inserted: usize,
    /// Events dropped off the end of the window (protocol.md 8.3 step 6).
    pub truncated: usize,
    /// Whether an event went in below the newest one, so the dirtymark
    /// was set (protocol.md 8.4).
    pub dirty: bool,
    /// Whether the file must be written (protocol.md 8.3 step 7).
    pub write: bool,
}

/// Record `changes` in `rf` (the principal, window `interval_secs`) at
/// clock `now`. With no changes this is the bare truncation that
/// `aggregate` starts with.
///
/// Each change becomes an event at `now` (bumped above the newest epoch
/// when that is not older, protocol.md 7.3), or at its own epoch for a dirty
/// insert; an older event of the same path is removed, so each path is
/// listed once (protocol.md 8.3). The caller locks, reads, calls this and, if
/// [`Outcome::write`], writes the file atomically.
///
/// ```
/// use recentfile::update::{batch_update, Change};
/// use recentfile::{Epoch, EventKind, Recentfile};
///
/// let mut rf = Recentfile::default();
/// let now = Epoch::parse("1700000100.5")?;
/// let add = |path: &str| Change { path: path.into(), kind: EventKind::New, epoch: None };
///
/// let out = batch_update(&mut rf, 3600, &[add("id/A/a.tar.gz")], &now);
/// assert!(out.write);
/// assert_eq!(out.inserted, 1);
/// assert_eq!(rf.events[0].epoch.as_str(), "1700000100.5");
///
/// // A second change at the same clock reading gets a unique, larger epoch,
/// // and the path's earlier event goes.
/// batch_update(&mut rf, 3600, &[add("id/B/b.tar.gz"), add("id/A/a.tar.gz")], &now);
/// let paths: Vec<&recentfile::RelPath> = rf.events.iter().map(|e| &e.path).collect();
/// assert_eq!(paths, ["id/A/a.tar.gz", "id/B/b.tar.gz"]);
/// assert!(rf.events[0].epoch > rf.events[1].epoch);
/// assert!(rf.events[1].epoch > now);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn batch_update(rf: &mut Recentfile, interval_secs: u64, changes: &[Change], now: &Epoch) -> Outcome {
    let was_empty = rf.events.is_empty();
    let mut out = Outcome::default();
    let order = recording_order(changes);
    // Paths already in the file (for dirty items only), and paths of this
    // batch (borrowed: init's batch is the whole tree).
    let listed: HashSet<RelPath> = match changes.iter().any(|c| c.epoch.is_some()) {
        true => rf.events.iter().map(|e| e.path.clone()).collect(),
        false => HashSet::new(),
    };
    let mut batch: HashSet<&RelPath> = HashSet::with_capacity(changes.len());
    let mut spread: HashMap<String, u64> = HashMap::new();
    let mut bound: Option<Epoch> = None;
    // Items without a caller epoch (they come last) go on top in order:
    // collected here newest last and put in place once at the end, with the
    // older events of their paths removed in one pass. Inserting each at
    // index 0 moved the whole list every time, quadratic for a big batch
    // into a big principal (a burst under `watch`).
    let mut top: Vec<Event> = Vec::new();
    let mut replaced: HashSet<&RelPath> = HashSet::new();
    let steps: Vec<Option<&Change>> = if order.is_empty() { vec![None] } else { order.into_iter().map(Some).collect() };
    for change in steps {
        let caller = change.and_then(|c| c.epoch.as_ref());
        let epoch = match caller {
            Some(e) if *now > *e => e.with_dot(),
            _ => monotonic(top.last().or(rf.events.first()), now),
        };
        if !out.dirty {
            if let Some(m) = rf.meta.merged.epoch() {
                bound = window_bound(m, &epoch, now, interval_secs);
            }
        }
        let Some(change) = change else { continue };
        if caller.is_none() {
            if batch.contains(&change.path) {
                top.retain(|e| e.path != change.path);
            }
            replaced.insert(&change.path);
            top.push(Event::new(epoch, change.path.clone(), change.kind));
        } else {
            if listed.contains(&change.path) || batch.contains(&change.path) {
                rf.events.retain(|e| e.path != change.path);
            }
            insert_dirty(rf, change, epoch, caller.unwrap_or(now), now, &mut spread);
            out.dirty = true;
        }
        batch.insert(&change.path);
        out.inserted += 1;
    }
    if !top.is_empty() {
        rf.events.retain(|e| !replaced.contains(&e.path));
        rf.events.splice(0..0, top.into_iter().rev());
    }
    if !out.dirty {
        if let Some(b) = bound {
            out.truncated = truncate_below(rf, &b);
        }
    }
    out.write = out.inserted > 0 || out.truncated > 0 || was_empty;
    out
}

/// The order in which a batch is recorded: decreasing caller epoch, items
/// without one last, input order kept. Whole seconds first: a smaller
/// integer part is a smaller epoch, so the full comparison is needed only
/// within one second (a big batch, e.g. init's, is mostly files of
/// distinct seconds).
fn recording_order(changes: &[Change]) -> Vec<&Change> {
    let mut order: Vec<(i64, &Change)> =
        changes.iter().map(|c| (c.epoch.as_ref().map_or(0, Epoch::whole_seconds), c)).collect();
    order.sort_by(|(sa, a), (sb, b)| match (&a.epoch, &b.epoch) {
        (Some(x), Some(y)) => sb.cmp(sa).then_with(|| y.cmp(x)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    order.into_iter().map(|(_, c)| c).collect()
}

/// A change with a caller epoch in the past: inserted in its place, the
/// dirtymark moved, and `merged` reset when the event lands below it (the
/// larger files must take it in again).
fn insert_dirty(
    rf: &mut Recentfile,
    change: &Change,
    epoch: Epoch,
    caller: &Epoch,
    now: &Epoch,
    spread: &mut HashMap<String, u64>,
) {
    let epoch = dirty_insert(rf, epoch, &change.path, change.kind, spread);
    let mark = if epoch > *now { epoch.clone() } else { clock_as_compared(now, caller) };
    rf.meta.dirtymark = Some(mark);
    if rf.meta.merged.epoch().is_none_or(|m| epoch < *m) {
        rf.meta.merged = Merged::Reset;
    }
}

/// The oldest epoch a clean write keeps: min(max(now, epoch) - secs,
/// merged, epoch), as the reference's List::Util::min (the winner keeps
/// its text).
fn window_bound(merged: &Epoch, epoch: &Epoch, now: &Epoch, interval_secs: u64) -> Option<Epoch> {
    let virtual_now = if *now >= *epoch { now } else { epoch };
    let window = PerlNum::float(virtual_now.to_f64() - interval_secs as f64);
    perl_min(&[window, PerlNum::text(merged), PerlNum::text(epoch)])
}

/// Drop the events older than `bound` from the end of the (sorted) list;
/// how many went.
fn truncate_below(rf: &mut Recentfile, bound: &Epoch) -> usize {
    let mut n = 0;
    while rf.events.last().is_some_and(|e| e.epoch < *bound) {
        rf.events.pop();
        n += 1;
    }
    n
}

/// The clock, or a bump above the newest event when the clock has not
/// moved past it (protocol.md 7.4). A whole-second reading is stored as `<N>.0`,
/// as the reference's comparator leaves its `$now` (protocol.md 7.1).
/// The clock as the reference holds it after comparing it with a dirty
/// item's caller epoch, which is what it stores as the dirtymark: its
/// comparator appends `.0` in place to a dot-less operand when the other
/// has a dot and the two differ (protocol.md 7.2), so a whole-second clock
/// `1700773529` becomes `1700773529.0` beside `--epoch 1700000000.5`,
/// and stays `1700773529` beside `--epoch 1700000000`.
fn clock_as_compared(now: &Epoch, caller: &Epoch) -> Epoch {
    if caller.has_dot() && caller.as_str() != now.as_str() {
        now.with_dot()
    } else {
        now.clone()
    }
}

fn monotonic(top: Option<&Event>, now: &Epoch) -> Epoch {
    match top {
        Some(top) if now.cmp_value(&top.epoch) != Ordering::Greater => top.epoch.inc(),
        _ => now.with_dot(),
    }
}

/// Insert at the epoch's place, bumping towards the newer neighbour on a
/// collision (protocol.md 7.4). Returns the epoch used. Collisions and places are
/// decided by value (`1.5` collides with `1.50`): every epoch written
/// differs from the others as a decimal number.
///
/// Many files with one mtime (a freshly unpacked tree) make the reference
/// bisect towards that epoch, one more digit every few files; past about
/// 150 files no epoch of at most 64 characters is left in between, and
/// the reference's own strings grow without bound (684 characters for
/// 2000 files). When the bump finds no free epoch, or has not found one
/// after [`MAX_BUMPS`] tries, the epoch is instead spread upwards in steps
/// of 1e-7 s (`E + k·10⁻⁷`, the first free one; `spread` remembers k per
/// epoch), which keeps init linear.
fn dirty_insert(
    rf: &mut Recentfile,
    mut epoch: Epoch,
    path: &RelPath,
    kind: EventKind,
    spread: &mut HashMap<String, u64>,
) -> Epoch {
    let events = &mut rf.events;
    let wanted = epoch.clone();
    // The first index whose epoch is not above ours (the list decreases).
    // A batch sorted newest first (init's) appends: check the end first.
    let place = |events: &[Event], e: &Epoch| match events.last() {
        Some(last) if last.epoch.cmp_value(e) == Ordering::Greater => events.len(),
        _ => events.partition_point(|x| x.epoch.cmp_value(e) == Ordering::Greater),
    };
    let taken =
        |events: &[Event], i: usize, e: &Epoch| events.get(i).is_some_and(|x| x.epoch.cmp_value(e) == Ordering::Equal);
    let mut i = place(events, &epoch);
    // Once an epoch had to be spread, its neighbourhood stays full.
    let mut bumps = if spread.contains_key(wanted.as_str()) { MAX_BUMPS } else { 0 };
    while taken(events, i, &epoch) {
        let bumped = match i {
            _ if bumps == MAX_BUMPS => None,
            0 => Some(epoch.inc()),
            _ => epoch.inc_towards(&events[i - 1].epoch),
        };
        match bumped {
            Some(b) => {
                epoch = b;
                bumps += 1;
            }
            None => {
                let k = spread.entry(wanted.as_str().to_string()).or_insert(0);
                loop {
                    *k += 1;
                    epoch = spread_epoch(&wanted, *k).unwrap_or_else(|| epoch.inc());
                    i = place(events, &epoch);
                    if !taken(events, i, &epoch) {
                        break;
                    }
                }
                break;
            }
        }
        i = place(events, &epoch);
    }
    events.insert(i, Event::new(epoch.clone(), path, kind));
    epoch
}

/// How many reference bumps a colliding epoch gets before it is spread.
/// One is enough whenever the reference's value fits in 64 characters.
const MAX_BUMPS: usize = 8;

/// `e + k·10⁻ⁿ` with n the larger of 7 and e's fraction digits, written
/// with exactly n fraction digits (`1700000000.0`, 3 → `1700000000.0000003`).
/// `None` when n exceeds 30 or the integer part overflows.
fn spread_epoch(e: &Epoch, k: u64) -> Option<Epoch> {
    let dotted = e.with_dot();
    let (int, frac) = dotted.as_str().split_once('.')?;
    let digits = frac.len().max(7);
    if digits > 30 {
        return None;
    }
    let scale = 10u128.pow(digits as u32);
    let f: u128 = format!("{frac:0<digits$}").parse().ok()?;
    let sum = f.checked_add(u128::from(k))?;
    let int: u64 = int.parse().ok()?;
    let int = int.checked_add(u64::try_from(sum / scale).ok()?)?;
    Epoch::parse(&format!("{int}.{:0digits$}", sum % scale)).ok()
}

/// Why an epoch given to `update` (`--epoch`, a `--stdin` line) cannot be
/// recorded: it is not positive, or, unless `future_ok` (the Perl
/// rrr-update, which replaces it by the clock), it lies more than an hour
/// ahead of `now` (`99999999999`, a typo, would otherwise silently become
/// the clock).
pub fn check_caller_epoch(epoch: &Epoch, now: &Epoch, future_ok: bool) -> Result<(), CallerEpochError> {
    if epoch.cmp_value(&Epoch::parse("0").expect("0 is an epoch")) != Ordering::Greater {
        return Err(CallerEpochError::NotPositive(epoch.clone()));
    }
    if !future_ok && epoch.to_f64() > now.to_f64() + MAX_AHEAD_SECS {
        return Err(CallerEpochError::Ahead { epoch: epoch.clone(), now: now.clone() });
    }
    Ok(())
}

/// Why [`check_caller_epoch`] refuses an epoch.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallerEpochError {
    /// Zero or below.
    #[error("epoch {0}: not a positive number of seconds since 1970")]
    NotPositive(Epoch),
    /// More than an hour after the clock.
    #[error("epoch {epoch}: more than an hour after the clock ({now}); a dirty update records an event of the past")]
    Ahead {
        /// The epoch given.
        epoch: Epoch,
        /// The clock.
        now: Epoch,
    },
}

/// How far ahead of the clock a caller's epoch may be.
const MAX_AHEAD_SECS: f64 = 3600.0;

/// Why a path given to `update` cannot be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    /// Not under any of the roots (decided by whole path components).
    Outside(String),
    /// Under a root, but not a path a recentfile may list
    /// ([`check_relative_path`]).
    Invalid(String),
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::Outside(m) | PathError::Invalid(m) => f.write_str(m),
        }
    }
}

/// Lexically normalise (`//`, `.`, `seg/..`), without touching the disk.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            // `..` cancels the name before it; above the start (or the
            // root) it stays, so the caller sees the path leave the tree.
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path relative to `root` for a path given absolute or relative to
/// the root. `roots` are the forms of the root to accept (as given,
/// absolute, canonical), compared by whole components.
pub fn relative_to_root(path: impl AsRef<Path>, roots: &[PathBuf]) -> Result<RelPath, PathError> {
    let p = path.as_ref();
    let path = shown_path(p.as_os_str().as_bytes());
    let rel: PathBuf = if p.is_absolute() {
        let n = normalize(p);
        let found = roots.iter().find_map(|r| n.strip_prefix(normalize(r)).ok().map(Path::to_path_buf));
        match found {
            Some(r) => r,
            None => return Err(PathError::Outside(format!("{path}: outside the tree root {}", roots[0].display()))),
        }
    } else {
        normalize(p)
    };
    let rel = RelPath::from(rel.as_path());
    if rel == ".." || rel.starts_with("../") {
        return Err(PathError::Outside(format!("{path}: outside the tree root {}", roots[0].display())));
    }
    if rel.is_empty() {
        return Err(PathError::Invalid(format!("{path}: names the tree root itself, not a file")));
    }
    check_relative_path(&rel).map_err(|m| PathError::Invalid(format!("{path}: {m}")))?;
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Epoch {
        Epoch::parse(s).unwrap()
    }

    fn change(p: &str, epoch: Option<&str>) -> Change {
        Change { path: p.into(), kind: EventKind::New, epoch: epoch.map(e) }
    }

    fn epochs(rf: &Recentfile) -> Vec<&str> {
        rf.events.iter().map(|e| e.epoch.as_str()).collect()
    }

    #[test]
    fn same_tick_updates_bump() {
        let mut rf = Recentfile::default();
        let now = e("1700000100.5");
        for p in ["a", "b", "c"] {
            batch_update(&mut rf, 3600, &[change(p, None)], &now);
        }
        assert_eq!(epochs(&rf), ["1700000100.50000016", "1700000100.5000001", "1700000100.5"]);
    }

    #[test]
    fn dirty_collision_bumps_towards_newer_neighbour() {
        let mut rf = Recentfile::default();
        let now = e("1700000100.5");
        batch_update(&mut rf, 3600, &[change("t1", None)], &now);
        batch_update(&mut rf, 3600, &[change("t2", None)], &now);
        let o = batch_update(&mut rf, 3600, &[change("x", Some("1700000100.5"))], &e("1700000200.5"));
        assert!(o.dirty);
        assert_eq!(epochs(&rf), ["1700000100.5000001", "1700000100.50000005", "1700000100.5"]);
        assert_eq!(rf.meta.dirtymark.as_ref().unwrap().as_str(), "1700000200.5");
        assert_eq!(rf.meta.merged, Merged::Reset);
    }

    #[test]
    fn repeated_dirty_update_keeps_one_event() {
        let mut rf = Recentfile::default();
        let now = e("1700000100.5");
        batch_update(&mut rf, 3600, &[change("p", Some("1699995000.5"))], &now);
        batch_update(&mut rf, 3600, &[change("p", Some("1699995000.5"))], &now);
        assert_eq!(epochs(&rf), ["1699995000.5"]);
    }

    #[test]
    fn future_caller_epoch_uses_clock_but_is_dirty() {
        let mut rf = Recentfile::default();
        let o = batch_update(&mut rf, 3600, &[change("p", Some("1800000000"))], &e("1700000100.5"));
        assert!(o.dirty);
        assert_eq!(epochs(&rf), ["1700000100.5"]);
        assert_eq!(rf.meta.dirtymark.as_ref().unwrap().as_str(), "1700000100.5");
    }

    /// Dirtymarks under a whole-second clock, as the reference (0.4.3,
    /// `Recentfile::update` with `Time::HiRes::time` frozen) writes them.
    #[test]
    fn dirtymark_of_a_whole_second_clock_is_the_references() {
        let cases = [
            // (clock, caller epoch, the reference's dirtymark, its event epoch)
            ("1700773529", "1700000000.5", "1700773529.0", "1700000000.5"),
            ("1700773529", "1700000000", "1700773529", "1700000000"),
            ("1700773529", "1800000000.5", "1700773529.0", "1700773529.0"),
            ("1700773529", "1800000000", "1700773529", "1700773529"),
            ("1700773529", "1700773529.0", "1700773529.0", "1700773529.0"),
            ("1700773529.25", "1700000000.5", "1700773529.25", "1700000000.5"),
        ];
        for (clock, caller, mark, epoch) in cases {
            let mut rf = Recentfile::default();
            batch_update(&mut rf, 3600, &[change("p", Some(caller))], &e(clock));
            assert_eq!(rf.meta.dirtymark.as_ref().unwrap().as_str(), mark, "clock {clock}, --epoch {caller}");
            // Beside a dot-less caller epoch and a whole-second clock the
            // reference's event epoch has no `.0`; rrr's always has one
            // (protocol.md 7.1 item 2), so only the dotted cases compare.
            if caller.contains('.') {
                assert_eq!(epochs(&rf), [epoch], "clock {clock}, --epoch {caller}");
            }
        }
    }

    #[test]
    fn many_files_of_one_mtime_stay_fast_unique_and_short() {
        let mut rf = Recentfile::default();
        let changes: Vec<Change> = (0..3000).map(|i| change(&format!("f{i}"), Some("1700000000"))).collect();
        let o = batch_update(&mut rf, 3600, &changes, &e("1700000100.5"));
        assert_eq!(o.inserted, 3000);
        assert_eq!(rf.events.len(), 3000);
        assert!(rf.events.windows(2).all(|w| w[0].epoch > w[1].epoch));
        assert!(rf.events.iter().all(|ev| ev.epoch.as_str().len() <= 64));
        assert_eq!(rf.events.last().unwrap().epoch.as_str(), "1700000000.0");
        // The first collisions are the reference's bumps.
        let mut small = Recentfile::default();
        batch_update(&mut small, 3600, &changes[..3], &e("1700000100.5"));
        assert_eq!(epochs(&small), ["1700000000.0000001", "1700000000.00000005", "1700000000.0"]);
        assert_eq!(spread_epoch(&e("1700000000"), 3).unwrap().as_str(), "1700000000.0000003");
        assert_eq!(spread_epoch(&e("1.99999999"), 1).unwrap().as_str(), "2.00000000");
    }

    /// Strictly decreasing as decimal numbers, not only by the comparator.
    fn decreasing_as_numbers(rf: &Recentfile) -> bool {
        rf.events.windows(2).all(|w| w[0].epoch.cmp_value(&w[1].epoch) == Ordering::Greater)
    }

    #[test]
    fn same_mtime_files_get_distinct_numbers() {
        // Past about 142 files of one mtime the bump must not fall back on
        // `1700000000.00`, the same number as `1700000000.0`.
        for n in [141, 142, 143, 400, 2000] {
            let changes: Vec<Change> = (0..n).map(|i| change(&format!("f{i}"), Some("1700000000"))).collect();
            let mut rf = Recentfile::default();
            batch_update(&mut rf, 3600, &changes, &e("1700000100.5"));
            assert_eq!(rf.events.len(), n);
            assert!(decreasing_as_numbers(&rf), "{n} files");
            assert!(rf.events.iter().all(|ev| ev.epoch.as_str().len() <= 64));
        }
        // One file at a time, as watch and repeated updates record them.
        let mut rf = Recentfile::default();
        for i in 0..300 {
            batch_update(&mut rf, 3600, &[change(&format!("f{i}"), Some("1700000000"))], &e("1700000100.5"));
        }
        assert!(decreasing_as_numbers(&rf));
    }

    #[test]
    fn an_equal_number_spelled_differently_collides() {
        // A file written elsewhere may hold `1700000000.50`; a dirty update
        // at `1700000000.5` must not add the same number again.
        let mut rf = Recentfile::from_events(vec![
            Event::new(e("1700000001.5"), "b", EventKind::New),
            Event::new(e("1700000000.50"), "a", EventKind::New),
        ]);
        batch_update(&mut rf, 3600, &[change("c", Some("1700000000.5"))], &e("1700000100.5"));
        assert!(decreasing_as_numbers(&rf), "{:?}", epochs(&rf));
        assert_eq!(rf.events.len(), 3);
        // ... nor a clock reading equal to the newest event.
        let mut rf = Recentfile::from_events(vec![Event::new(e("1700000100.50"), "a", EventKind::New)]);
        batch_update(&mut rf, 3600, &[change("b", None)], &e("1700000100.5"));
        assert!(decreasing_as_numbers(&rf), "{:?}", epochs(&rf));
    }

    #[test]
    fn same_tick_updates_are_distinct_numbers() {
        for now in ["1700000100.5", "1700000100", "1700000100.99999"] {
            let mut rf = Recentfile::default();
            for i in 0..500 {
                batch_update(&mut rf, 3600, &[change(&format!("p{i}"), None)], &e(now));
            }
            assert_eq!(rf.events.len(), 500);
            assert!(decreasing_as_numbers(&rf), "{now}");
        }
    }

    #[test]
    fn whole_second_clock_is_stored_with_dot_zero() {
        // The reference's comparator appends `.0` to its `$now` in place.
        let mut rf = Recentfile::default();
        batch_update(&mut rf, 3600, &[change("a", None)], &e("1700000100"));
        batch_update(&mut rf, 3600, &[change("b", None)], &e("1700000200"));
        assert_eq!(epochs(&rf), ["1700000200.0", "1700000100.0"]);
    }

    #[test]
    fn truncation_bound_keeps_merged_epochs_text() {
        // The bound keeps its exact text: printed back from a double,
        // `1700000060.5000001` would become `1700000060.5` and the event
        // at `1700000060.5` would survive where the reference drops it.
        use crate::aggregate::merge;
        use crate::interval::Interval;
        let (h1, h6) = (Interval::parse("1h").unwrap(), Interval::parse("6h").unwrap());
        let mut p = Recentfile::default();
        batch_update(&mut p, 3600, &[change("old", Some("1699990000"))], &e("1700000000.5"));
        batch_update(&mut p, 3600, &[change("b", None)], &e("1700000060.5"));
        batch_update(&mut p, 3600, &[change("c", None)], &e("1700000060.5"));
        assert_eq!(epochs(&p)[..2], ["1700000060.5000001", "1700000060.5"]);
        let mut big = Recentfile::default();
        assert!(merge(&mut big, &h6, &mut p, &h1, &e("1700000060.5"), false));
        assert_eq!(p.meta.merged.epoch().unwrap().as_str(), "1700000060.5000001");
        batch_update(&mut p, 3600, &[change("d", None)], &e("1700010000.5"));
        assert_eq!(epochs(&p), ["1700010000.5", "1700000060.5000001"]);
    }

    #[test]
    fn integer_caller_epoch_gets_dot_zero() {
        let mut rf = Recentfile::default();
        batch_update(&mut rf, 3600, &[change("p", Some("1700000000"))], &e("1700000100.5"));
        assert_eq!(epochs(&rf), ["1700000000.0"]);
    }

    #[test]
    fn paths_relative_to_root() {
        let roots = vec![PathBuf::from("/pfx/origin")];
        assert_eq!(relative_to_root("/pfx/origin/sub/../b", &roots).unwrap(), "b");
        assert_eq!(relative_to_root("a//b/./c", &roots).unwrap(), "a/b/c");
        assert_eq!(relative_to_root("x/../y", &roots).unwrap(), "y");
        assert_eq!(normalize(Path::new("../../x")), PathBuf::from("../../x"));
        assert!(matches!(relative_to_root("/pfx/origin2/file", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("/etc/passwd", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("/pfx/origin/../origin2/f", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("../x", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("a\0b", &roots), Err(PathError::Invalid(_))));
        assert_eq!(relative_to_root("a\nb/\tc", &roots).unwrap(), "a\nb/\tc");
        assert!(relative_to_root("/pfx/origin", &roots).is_err());
    }
}

#[cfg(test)]
mod pins;
