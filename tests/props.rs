//! Property tests of the format and the collection invariants.

use crate::util::decimal_key;
use proptest::prelude::*;
use rrr::epoch::Epoch;
use rrr::recentfile::{self, check_relative_path, Event, EventKind, Format, Producer, Recentfile};
use rrr::update::{batch_update, Change};

fn producer() -> Producer {
    Producer { program: "rrr-test".into(), time: Epoch::parse("1700000000.5").unwrap() }
}

/// Printable path segments: any UTF-8 but control characters, and never `.`/`..`/empty.
fn segment() -> impl Strategy<Value = String> {
    "[^\\x00-\\x1f\\x7f/]{1,12}".prop_filter("not . or ..", |s| s != "." && s != "..")
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..4).prop_map(|v| v.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any printable path survives a YAML and a JSON round trip exactly.
    #[test]
    fn printable_paths_roundtrip(paths in prop::collection::vec(path(), 1..6),
                                 tricky in prop::sample::select(vec!["a: b", "x #y", "- a", "? q", "'q'", "\"d\"", "[x]", "{y}", "&a", "*b", "!c", "|d", ">e", "%f", "@g", "`h", "#i", ":j", " lead", "trail ", "yes", "~", "null", "1e5", "007", "1700000000.5", "café/ü", "a\\b", "tab\there", "cr\rhere"])) {
        let mut all = paths.clone();
        all.push(tricky.to_string());
        all.sort();
        all.dedup();
        let events: Vec<Event> = all
            .iter()
            .enumerate()
            .map(|(i, p)| Event::new(Epoch::from_whole_seconds(1_700_000_000 - i as i64), p.clone(), EventKind::New))
            .collect();
        let rf = Recentfile::from_events(events);
        for format in [Format::Yaml, Format::Json] {
            let bytes = recentfile::serialize(&rf, format, &producer());
            let back = recentfile::parse_bytes(&bytes, format).unwrap();
            prop_assert_eq!(&back.events, &rf.events);
        }
    }

    /// The truncation bound is the reference's `List::Util::min`: when
    /// `merged.epoch` wins, its exact text decides, so events between it
    /// and its nearest double are cut as the reference cuts them.
    #[test]
    fn truncation_bound_keeps_its_text(int in 1_600_000_000u64..1_800_000_000, frac in "[0-9]{1,5}", bumps in 1usize..6,
                                        later in 3601u32..100_000) {
        let base = Epoch::parse(&format!("{int}.{frac}")).unwrap();
        let mut chain = vec![base.clone()];
        for _ in 0..bumps {
            let next = chain.last().unwrap().inc();
            chain.push(next);
        }
        let merged = chain.last().unwrap().clone();
        let mut rf = Recentfile::from_events(
            chain.iter().rev().enumerate().map(|(i, e)| Event::new(e.clone(), format!("p{i}"), EventKind::New)).collect(),
        );
        rf.meta.merged = recentfile::Merged::Into { epoch: Some(merged.clone()), into_interval: Some("6h".into()), time: None };
        let now = Epoch::from_clock(merged.to_f64() + f64::from(later));
        batch_update(&mut rf, 3600, &[Change { path: "new".into(), kind: EventKind::New, epoch: None, digest: None }], &now);
        // Everything older than merged.epoch (by the comparator) is gone,
        // merged.epoch itself stays: the bump chain's doubles often round
        // onto each other, so a bound printed back from a double would not cut them.
        let kept: Vec<&str> = rf.events.iter().map(|e| e.epoch.as_str()).collect();
        prop_assert_eq!(kept.len(), 2, "{:?} with merged.epoch {}", kept, merged);
        prop_assert_eq!(kept[1], merged.as_str());
    }

    /// Paths are byte strings: every control character but NUL is a valid
    /// name character (as for the kernel, rsync and the Perl tools); NUL
    /// never is.
    #[test]
    fn control_characters_accepted_nul_refused(prefix in "[a-z]{1,5}", c in 1u8..0x20, suffix in "[a-z]{0,5}") {
        let p = format!("{prefix}{}{suffix}", c as char);
        prop_assert!(check_relative_path(&p).is_ok(), "{:?}", p);
        let del = format!("{prefix}\x7f{suffix}");
        prop_assert!(check_relative_path(&del).is_ok(), "{:?}", del);
        let nul = format!("{prefix}\0{suffix}");
        prop_assert!(check_relative_path(&nul).is_err(), "{:?}", nul);
    }

    /// Any sequence of updates (clock ones, same-tick ones, dirty ones)
    /// keeps the list strictly decreasing, unique, one event per path,
    /// and every path's newest kind is the last one recorded for it.
    #[test]
    fn updates_keep_invariants(ops in prop::collection::vec((0usize..8, any::<bool>(), prop::option::of(prop_oneof![0u32..5000, 0u32..3]), 0u32..3), 1..60),
                               start in prop::sample::select(vec![1_700_000_000.5f64, 1_700_000_000.0])) {
        let mut rf = Recentfile::default();
        let mut clock = start; // whole seconds too: stored as `<N>.0`
        let mut last_kind = std::collections::HashMap::new();
        for (p, del, dirty, tick) in ops {
            clock += tick as f64; // 0: same tick
            let path = format!("d/p{p}");
            let kind = if del { EventKind::Delete } else { EventKind::New };
            // Dirty epochs from a few seconds too, so they collide.
            let epoch = dirty.map(|d| Epoch::from_whole_seconds(1_699_990_000 + d as i64));
            batch_update(&mut rf, 3600, &[Change { path: path.clone().into(), kind, epoch, digest: None }], &Epoch::from_clock(clock));
            last_kind.insert(path, kind);
        }
        for w in rf.events.windows(2) {
            prop_assert!(w[0].epoch > w[1].epoch, "{} !> {}", w[0].epoch, w[1].epoch);
            // Distinct as decimal numbers, not only as strings.
            prop_assert!(decimal_key(w[0].epoch.as_str()) > decimal_key(w[1].epoch.as_str()),
                "{} and {} are not decreasing numbers", w[0].epoch, w[1].epoch);
            prop_assert!(w[0].epoch.as_str().contains('.'), "{}", w[0].epoch);
        }
        let mut seen = std::collections::HashSet::new();
        for e in &rf.events {
            prop_assert!(seen.insert(e.path.clone()), "duplicate path {}", e.path);
            prop_assert_eq!(Some(&e.kind), last_kind.get(e.path.to_str().unwrap()));
        }
        let bytes = recentfile::serialize(&rf, Format::Yaml, &producer());
        prop_assert_eq!(recentfile::parse_bytes(&bytes, Format::Yaml).unwrap().events, rf.events);
    }

    /// A batch of clock-stamped changes gives the list that recording them
    /// one at a time gives (same tick or not, paths repeated, over a file
    /// that already lists some of them, with a dirty item in front).
    #[test]
    fn one_batch_equals_one_at_a_time(
        before in prop::collection::vec((0usize..12, any::<bool>()), 0..20),
        batch in prop::collection::vec((0usize..12, any::<bool>()), 1..40),
        dirty in prop::option::of(0usize..12),
        tick in 0u32..2,
    ) {
        let change = |(p, del): (usize, bool)| Change {
            path: format!("d/p{p}").into(),
            kind: if del { EventKind::Delete } else { EventKind::New },
            epoch: None,
            digest: None,
        };
        let mut start = Recentfile::default();
        let t0 = Epoch::parse("1700000000.5").unwrap();
        for c in before.iter().copied().map(change) {
            batch_update(&mut start, 3600, &[c], &t0);
        }
        let now = Epoch::from_clock(1_700_000_000.5 + tick as f64);
        let mut changes: Vec<Change> = batch.iter().copied().map(change).collect();
        if let Some(p) = dirty {
            changes.insert(0, Change { path: format!("d/p{p}").into(), kind: EventKind::New, digest: None, epoch: Some(Epoch::from_whole_seconds(1_699_999_000)) });
        }
        let mut at_once = start.clone();
        batch_update(&mut at_once, 3600, &changes, &now);
        let mut one_by_one = start;
        for c in &changes {
            batch_update(&mut one_by_one, 3600, std::slice::from_ref(c), &now);
        }
        prop_assert_eq!(at_once.events, one_by_one.events);
    }
}
