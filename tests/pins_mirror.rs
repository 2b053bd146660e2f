//! Tests that pin what the mirror's pass guarantees where a change to the
//! code once went unnoticed: what a pass records as done, what a killed
//! pass leaves owed. Real `rrr`, a real `rsync --daemon` on 127.0.0.1.

use crate::util::mirror::*;
use crate::util::*;
use serde_json::Value;

/// Every event of the origin's principal, as `news --json` lists them.
fn principal_epochs(origin: &std::path::Path) -> Vec<String> {
    ok(&["news", "--local", &principal(origin), "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["epoch"].as_str().unwrap().to_string())
        .collect()
}

/// Whether the state's done-sets reach from `epoch` back to the beginning.
fn complete_through(st: &Value, epoch: &str) -> bool {
    let sets: std::collections::BTreeMap<String, rrr::done::DoneSet> =
        serde_json::from_value(st["done"].clone()).unwrap();
    rrr::done::DoneSet::union(sets.values()).complete_through(&rrr::epoch::Epoch::parse(epoch).unwrap())
}

/// Once a walk has handled every file down to the last one (Z), the state
/// knows everything older than Z is done, and the next pass reads the
/// principal only. Here the done-set is cut to the newest event, as for a
/// mirror that lost track of the older ones, so the pass must walk to Z.
#[test]
fn a_walk_down_to_z_records_everything_older_as_done() {
    let t = Setup::new(3);
    pass(&t.src(), &t.target, &[], 0);
    let epochs = principal_epochs(&t.origin);
    let newest = &epochs[0];
    let state_file = t.target.join(".rrr/state.json");
    let mut st = t.target.state();
    st["done"] = serde_json::json!({ "RECENT-1h.yaml": [[newest, newest]] });
    std::fs::write(&state_file, serde_json::to_vec(&st).unwrap()).unwrap();
    assert!(!complete_through(&t.target.state(), newest));

    let walked = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(walked["bootstrap"], false, "{walked}");
    let read = walked["read"].as_array().unwrap();
    assert!(read.len() > 1 && read.last().unwrap().as_str().unwrap().ends_with("-Z.yaml"), "{walked}");
    assert!(complete_through(&t.target.state(), newest), "{}", t.target.state()["done"]);
    let next = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(next["read"].as_array().unwrap().len(), 1, "{next}");
    assert_same_tree(&t.origin, &t.target);
}
