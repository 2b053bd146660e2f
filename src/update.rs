//! Recording events in a recentfile (spec 8.2–8.4): the pure core of
//! `update`, `init`, `fsck --repair` and `watch`.
//!
//! Fixed reference bugs (documented in README.mirror):
//! - 8.2: a path outside the root is an error, decided by whole path
//!   components (the reference's bare prefix test recorded `pfx/origin2/f`
//!   as `2/f`); `.` components are removed as well as `seg/..`.
//! - 8.3 step 5: a repeated dirty update of one path at one epoch leaves
//!   one event, not the epoch plus a bumped copy.
//! - 4.2: only `new` and `delete` are accepted.

use crate::epoch::Epoch;
use crate::recentfile::{check_relative_path, Event, EventKind, Merged, Recentfile};
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// One change to record. `epoch: Some` is a dirty insert (an event in the past).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub kind: EventKind,
    pub epoch: Option<Epoch>,
}

/// What a batch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub inserted: usize,
    pub truncated: usize,
    pub dirty: bool,
    /// Whether the file must be written (spec 8.3 step 7).
    pub write: bool,
}

/// Record `changes` in `rf` (the principal, window `interval_secs`) at
/// clock `now`. With no changes this is the bare truncation that
/// `aggregate` starts with.
pub fn batch_update(rf: &mut Recentfile, interval_secs: u64, changes: &[Change], now: &Epoch) -> Outcome {
    let was_empty = rf.events.is_empty();
    let mut out = Outcome::default();
    // Decreasing caller epoch; items without one last, input order kept.
    let mut order: Vec<&Change> = changes.iter().collect();
    order.sort_by(|a, b| match (&a.epoch, &b.epoch) {
        (Some(x), Some(y)) => y.cmp(x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let mut present: HashSet<String> = rf.events.iter().map(|e| e.path.clone()).collect();
    let mut bound: Option<f64> = None;
    let mut cluster: Cluster = None;
    let steps: Vec<Option<&Change>> = if order.is_empty() { vec![None] } else { order.into_iter().map(Some).collect() };
    for change in steps {
        let caller = change.and_then(|c| c.epoch.as_ref());
        let epoch = match caller {
            Some(e) if *now > *e => e.with_dot(),
            _ => monotonic(rf, now),
        };
        if !out.dirty {
            if let Some(m) = rf.meta.merged.epoch() {
                let secs = interval_secs as f64;
                let b = (now.to_f64().max(epoch.to_f64()) - secs).min(m.to_f64()).min(epoch.to_f64());
                bound = Some(b);
            }
        }
        let Some(change) = change else { continue };
        if present.contains(&change.path) {
            rf.events.retain(|e| e.path != change.path);
        }
        present.insert(change.path.clone());
        if caller.is_none() {
            rf.events.insert(0, Event::new(epoch, change.path.clone(), change.kind));
        } else {
            let epoch = dirty_insert(rf, epoch, &change.path, change.kind, &mut cluster);
            let mark = if epoch > *now { epoch.clone() } else { now.clone() };
            rf.meta.dirtymark = Some(mark);
            if rf.meta.merged.epoch().is_none_or(|m| epoch < *m) {
                rf.meta.merged = Merged::Reset;
            }
            out.dirty = true;
        }
        out.inserted += 1;
    }
    if !out.dirty {
        if let Some(b) = bound {
            let b = Epoch::from_clock(b);
            while rf.events.last().is_some_and(|e| e.epoch < b) {
                rf.events.pop();
                out.truncated += 1;
            }
        }
    }
    out.write = out.inserted > 0 || out.truncated > 0 || was_empty;
    out
}

/// The clock, or a bump above the newest event when the clock has not
/// moved past it (spec 7.4).
fn monotonic(rf: &Recentfile, now: &Epoch) -> Epoch {
    match rf.events.first() {
        Some(top) if *now <= top.epoch => top.epoch.inc(),
        _ => now.clone(),
    }
}

/// Where the last collision of a batch put its event: a following item
/// with the same caller epoch continues from there (O(1) per file for a run
/// of equal mtimes).
type Cluster = Option<(String, usize)>;

/// Insert at the epoch's place, bumping on a collision (spec 7.4).
/// Returns the epoch used.
fn dirty_insert(rf: &mut Recentfile, epoch: Epoch, path: &str, kind: EventKind, cluster: &mut Cluster) -> Epoch {
    let events = &mut rf.events;
    // First index whose epoch is <= ours (the list is strictly decreasing).
    let i = events.partition_point(|e| e.epoch > epoch);
    let (used, at) = if i < events.len() && events[i].epoch == epoch {
        let start = match cluster {
            Some((e, top)) if e == epoch.as_str() && *top <= i => Some(*top),
            _ => None,
        };
        resolve_collision(events, i, start)
    } else {
        (epoch.clone(), i)
    };
    *cluster = (at != i || used != epoch).then(|| (epoch.as_str().to_string(), at));
    events.insert(at, Event::new(used.clone(), path, kind));
    used
}

/// Longest bump by bisection rrr accepts before climbing instead.
const MAX_BISECTED_LEN: usize = 24;

/// A unique epoch above `events[i]` (which equals the one inserted), and
/// where it goes. The reference bisects towards the newer neighbour
/// (`inc(epoch, neighbour)`); rrr keeps that while the result stays short,
/// so Perl-written collections get the same bytes. Bisection halves the gap
/// each time, so a run of files sharing one mtime (an untarred tree) would
/// grow the strings by a digit per file: past [`MAX_BISECTED_LEN`] rrr
/// climbs the run instead and takes the one-argument bump (the next double
/// up) of the first element with room above it. That keeps epochs short and
/// leaves about four million slots per second.
fn resolve_collision(events: &[Event], i: usize, climb_from: Option<usize>) -> (Epoch, usize) {
    if i == 0 {
        return (events[0].epoch.inc(), 0);
    }
    if climb_from.is_none() {
        let bisected = events[i].epoch.inc_towards(&events[i - 1].epoch);
        if bisected.as_str().len() <= MAX_BISECTED_LEN {
            return (bisected, i);
        }
    }
    let mut j = climb_from.unwrap_or(i);
    loop {
        let next = events[j].epoch.inc();
        if j == 0 || next < events[j - 1].epoch {
            return (next, j);
        }
        j -= 1;
    }
}

/// Why a path given to `update` cannot be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    Outside(String),
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
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path relative to `root` for a path given absolute or relative to
/// the root. `roots` are the forms of the root to accept (as given,
/// absolute, canonical), compared by whole components.
pub fn relative_to_root(path: &str, roots: &[PathBuf]) -> Result<String, PathError> {
    let p = Path::new(path);
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
    let rel =
        rel.to_str().ok_or_else(|| PathError::Invalid(format!("{}: path is not UTF-8", p.display())))?.to_string();
    if rel.starts_with("..") && (rel == ".." || rel.starts_with("../")) {
        return Err(PathError::Outside(format!("{path}: outside the tree root {}", roots[0].display())));
    }
    if rel.is_empty() {
        return Err(PathError::Invalid(format!("{path}: names the tree root itself, not a file")));
    }
    check_relative_path(&rel).map_err(|m| PathError::Invalid(format!("{path:?}: {m}")))?;
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
    fn many_equal_mtimes_stay_short_and_fast() {
        let mut rf = Recentfile::default();
        let changes: Vec<Change> = (0..3000).map(|i| change(&format!("f{i}"), Some("1700000000"))).collect();
        let mut more = changes.clone();
        more.push(change("newer", Some("1700000001")));
        batch_update(&mut rf, 3600, &more, &e("1700000100.5"));
        assert_eq!(rf.events.len(), 3001);
        assert!(rf.events.windows(2).all(|w| w[0].epoch > w[1].epoch));
        assert!(
            rf.events.iter().all(|ev| ev.epoch.as_str().len() <= 32),
            "{:?}",
            rf.events.iter().map(|e| e.epoch.as_str().len()).max()
        );
        assert_eq!(rf.events.last().unwrap().epoch.as_str(), "1700000000.0");
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
        assert!(matches!(relative_to_root("/pfx/origin2/file", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("/etc/passwd", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("/pfx/origin/../origin2/f", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("../x", &roots), Err(PathError::Outside(_))));
        assert!(matches!(relative_to_root("a\nb", &roots), Err(PathError::Invalid(_))));
        assert!(relative_to_root("/pfx/origin", &roots).is_err());
    }
}
