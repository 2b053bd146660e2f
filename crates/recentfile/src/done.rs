//! Which events a mirror already has: the done-set of one recentfile, a list
//! of closed epoch intervals (protocol.md 12.6). Pure: no filesystem, no clock.
//!
//! An interval `[high, low]` says "every event of this recentfile with
//! `low <= epoch <= high` is done". The list is kept descending and
//! disjoint: inserting an interval that overlaps (or touches) others merges
//! them, so a contiguous run of handled events becomes one interval.
//! Ordering is the reference comparator ([`Epoch`]'s `Ord`), so
//! `1700000000` and `1700000000.0` are the same point.
//!
//! [`DoneSet::register`] follows the reference: an event is joined to the
//! interval of its neighbour in the list when that neighbour is already
//! done, so that events handled one chunk at a time still coalesce. Events
//! inserted later *inside* a done range (dirty inserts) count as done; that
//! is why a changed dirtymark must forget the done-set.
//!
//! Serialized as a JSON array of `[high, low]` pairs of epoch strings:
//!
//! ```text
//! [["1700000400.5", "1700000100.5"], ["1700000050", "0"]]
//! ```
//!
//! The low bound `"0"` means "everything older too" (after a bootstrap, or
//! once the last file of the collection was walked).

use crate::epoch::Epoch;
use serde::{Deserialize, Serialize};

/// One done interval, `high >= low`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span(pub Epoch, pub Epoch);

impl Span {
    /// The newest epoch covered.
    pub fn high(&self) -> &Epoch {
        &self.0
    }
    /// The oldest epoch covered (`0`: everything older too).
    pub fn low(&self) -> &Epoch {
        &self.1
    }
    fn contains(&self, e: &Epoch) -> bool {
        self.1 <= *e && *e <= self.0
    }
}

/// The done intervals of one recentfile, descending and disjoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DoneSet {
    spans: Vec<Span>,
}

/// The epoch before every other: the low bound meaning "everything older".
pub fn beginning() -> Epoch {
    Epoch::parse("0").expect("0 is an epoch")
}

impl DoneSet {
    /// Nothing done yet.
    pub fn new() -> DoneSet {
        DoneSet::default()
    }

    /// The intervals, newest first, disjoint.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Whether nothing is done.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Forget everything (a changed dirtymark).
    pub fn reset(&mut self) {
        self.spans.clear();
    }

    /// Whether `e` lies in some interval (bounds included).
    pub fn covered(&self, e: &Epoch) -> bool {
        self.span_of(e).is_some()
    }

    /// The interval holding `e`.
    pub(crate) fn span_of(&self, e: &Epoch) -> Option<&Span> {
        // Descending by high: the first span with low <= e is the only candidate.
        let i = self.spans.partition_point(|s| s.1 > *e);
        self.spans.get(i).filter(|s| s.contains(e))
    }

    /// Whether `a` and `b` lie in one interval.
    pub fn covered_range(&self, a: &Epoch, b: &Epoch) -> bool {
        match (self.span_of(a), self.span_of(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// Add `[high, low]` (swapped if given the wrong way round), merging
    /// every interval it overlaps or touches.
    pub fn insert(&mut self, high: Epoch, low: Epoch) {
        let (mut high, mut low) = if high >= low { (high, low) } else { (low, high) };
        // Spans entirely above (low > high) stay before; entirely below after.
        let start = self.spans.partition_point(|s| s.1 > high);
        let mut end = start;
        while end < self.spans.len() && self.spans[end].0 >= low {
            let s = &self.spans[end];
            if s.0 > high {
                high = s.0.clone();
            }
            if s.1 < low {
                low = s.1.clone();
            }
            end += 1;
        }
        self.spans.splice(start..end, std::iter::once(Span(high, low)));
    }

    /// Mark events `indices` of `epochs` (a recentfile's list, newest
    /// first) as done. An event joins the interval of a neighbour in the
    /// list that is done already, so handled runs become one interval.
    pub fn register(&mut self, epochs: &[&Epoch], indices: impl IntoIterator<Item = usize>) {
        for i in indices {
            let Some(e) = epochs.get(i) else { continue };
            if self.covered(e) {
                continue;
            }
            let mut high = (*e).clone();
            let mut low = (*e).clone();
            if i > 0 && self.covered(epochs[i - 1]) {
                high = epochs[i - 1].clone();
            }
            if let Some(next) = epochs.get(i + 1) {
                if self.covered(next) {
                    low = (*next).clone();
                }
            }
            self.insert(high, low);
        }
    }

    /// Forget everything above `limit` (the mirror's clock plus one hour):
    /// an epoch from the future must never count as done, or every later
    /// event would be covered by it and never mirrored.
    /// Returns whether anything was above it.
    pub fn cap(&mut self, limit: &Epoch) -> bool {
        let first = self.spans.partition_point(|s| s.1 > *limit);
        let mut trimmed = first > 0;
        self.spans.drain(..first);
        if let Some(s) = self.spans.first_mut() {
            if s.0 > *limit {
                s.0 = limit.clone();
                trimmed = true;
            }
        }
        trimmed
    }

    /// Union with another set (the reference's merge of Done into the next file).
    pub(crate) fn merge(&mut self, other: &DoneSet) {
        for s in &other.spans {
            self.insert(s.0.clone(), s.1.clone());
        }
    }

    /// The union of many sets.
    pub fn union<'a>(sets: impl IntoIterator<Item = &'a DoneSet>) -> DoneSet {
        let mut u = DoneSet::new();
        for s in sets {
            u.merge(s);
        }
        u
    }

    /// Whether `e` is in an interval that reaches back to the beginning:
    /// everything at or before `e` is done.
    pub fn complete_through(&self, e: &Epoch) -> bool {
        self.span_of(e).is_some_and(|s| s.1 <= beginning())
    }

    /// The newest done epoch.
    pub fn newest(&self) -> Option<&Epoch> {
        self.spans.first().map(|s| &s.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn e(s: &str) -> Epoch {
        Epoch::parse(s).unwrap()
    }

    #[test]
    fn table() {
        // (inserts, probe, covered)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, bool);
        let cases: &[Case] = &[
            (&[], "5", false),
            (&[("5", "5")], "5", true),
            (&[("5", "5")], "5.0", true),
            (&[("9", "7"), ("3", "1")], "5", false),
            (&[("9", "7"), ("3", "1")], "7", true),
            (&[("9", "7"), ("3", "1"), ("7", "3")], "5", true),
            (&[("1", "3")], "2", true),
            (&[("10", "0")], "0.5", true),
        ];
        for (ins, probe, want) in cases {
            let mut d = DoneSet::new();
            for (h, l) in *ins {
                d.insert(e(h), e(l));
            }
            assert_eq!(d.covered(&e(probe)), *want, "{ins:?} {probe}");
        }
    }

    #[test]
    fn insert_merges_touching_spans() {
        let mut d = DoneSet::new();
        d.insert(e("9"), e("7"));
        d.insert(e("3"), e("1"));
        assert_eq!(d.spans().len(), 2);
        d.insert(e("7"), e("3"));
        assert_eq!(d.spans(), &[Span(e("9"), e("1"))]);
        assert!(d.covered_range(&e("9"), &e("1")));
    }

    #[test]
    fn register_coalesces_runs_in_list_order() {
        let list: Vec<Epoch> = ["50", "40", "30", "20", "10"].iter().map(|s| e(s)).collect();
        let refs: Vec<&Epoch> = list.iter().collect();
        let mut d = DoneSet::new();
        d.register(&refs, [0, 1]);
        assert_eq!(d.spans(), &[Span(e("50"), e("40"))]);
        d.register(&refs, [4]);
        assert_eq!(d.spans().len(), 2);
        assert!(!d.covered(&e("35")));
        d.register(&refs, [2, 3]);
        assert_eq!(d.spans(), &[Span(e("50"), e("10"))]);
        // An epoch inside a done range counts as done (dirty insert).
        assert!(d.covered(&e("35")));
    }

    #[test]
    fn complete_through_needs_the_beginning() {
        let mut d = DoneSet::new();
        d.insert(e("100"), e("50"));
        assert!(!d.complete_through(&e("60")));
        d.insert(e("50"), beginning());
        assert!(d.complete_through(&e("60")));
        assert!(d.complete_through(&e("1")));
        assert!(!d.complete_through(&e("101")));
    }

    #[test]
    fn cap_forgets_the_future() {
        let mut d = DoneSet::new();
        d.insert(e("99999999999.5"), e("99999999999.5"));
        d.insert(e("1700000500"), e("1700000100"));
        d.insert(e("1700000050"), beginning());
        assert!(d.covered(&e("5000000000")) || d.spans().len() == 3);
        assert!(d.cap(&e("1700000300")));
        assert_eq!(d.spans(), &[Span(e("1700000300"), e("1700000100")), Span(e("1700000050"), beginning())]);
        assert!(!d.covered(&e("1700000301")));
        assert!(!d.cap(&e("1700000300")), "idempotent");
        assert_eq!(d.spans().len(), 2);
        assert!(d.cap(&e("10")));
        assert_eq!(d.spans(), &[Span(e("10"), beginning())]);
    }

    #[test]
    fn serde_round_trip() {
        let mut d = DoneSet::new();
        d.insert(e("1700000400.5"), e("1700000100.5"));
        d.insert(e("1700000050"), beginning());
        let j = serde_json::to_string(&d).unwrap();
        assert_eq!(j, r#"[["1700000400.5","1700000100.5"],["1700000050","0"]]"#);
        assert_eq!(serde_json::from_str::<DoneSet>(&j).unwrap(), d);
    }

    fn invariant(d: &DoneSet) {
        for s in d.spans() {
            assert!(s.0 >= s.1);
        }
        for w in d.spans().windows(2) {
            assert!(w[0].1 > w[1].0, "not descending/disjoint: {:?}", d.spans());
        }
    }

    proptest! {
        #[test]
        fn insert_is_a_set_union(spans in prop::collection::vec((0u32..200, 0u32..200), 0..20), probe in 0u32..200) {
            let mut d = DoneSet::new();
            for (a, b) in &spans {
                d.insert(e(&a.to_string()), e(&b.to_string()));
                invariant(&d);
            }
            let want = spans.iter().any(|(a, b)| (*a.min(b)..=*a.max(b)).contains(&probe));
            prop_assert_eq!(d.covered(&e(&probe.to_string())), want);
        }

        #[test]
        fn registering_everything_gives_one_span(n in 1usize..40, order in prop::collection::vec(any::<prop::sample::Index>(), 0..80)) {
            let list: Vec<Epoch> = (0..n).rev().map(|i| e(&format!("{}.5", 1000 + i * 7))).collect();
            let refs: Vec<&Epoch> = list.iter().collect();
            let mut d = DoneSet::new();
            for ix in &order {
                d.register(&refs, [ix.index(n)]);
                invariant(&d);
            }
            d.register(&refs, 0..n);
            invariant(&d);
            prop_assert_eq!(d.spans(), &[Span(list[0].clone(), list[n - 1].clone())]);
        }
    }
}

#[cfg(test)]
mod pins;
