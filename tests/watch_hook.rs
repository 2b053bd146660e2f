//! `rrr watch --on-batch`: the hook runs beside the daemon, never holding
//! up the next record, one run at a time, batches meanwhile coalescing
//! into one more run.

use crate::util::*;
use crate::watch::{news, tree, wait_kind, Daemon, WAIT};
use std::fs;

#[test]
fn on_batch_never_delays_recording_and_runs_coalesce() {
    let (tmp, root) = tree(&["a"]);
    let (log, gate) = (tmp.path().join("hook.log"), tmp.path().join("gate"));
    // Each run says what it stands for, then waits for the gate.
    let cmd = format!(
        "echo \"start $RRR_BATCHES $RRR_BATCH_SIZE $RRR_NEWEST_EPOCH $RRR_PRINCIPAL\" >> {log}; \
         while [ ! -e {gate} ]; do sleep 0.05; done; echo end >> {log}",
        log = log.display(),
        gate = gate.display()
    );
    // A start in the second the tree was made records its files again (a
    // record, so a run): start in a later second, so that runs are ours.
    let made = fs::metadata(root.join("a")).unwrap().modified().unwrap();
    let made_secs = made.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let next_second = std::time::UNIX_EPOCH + std::time::Duration::from_millis((made_secs + 1) * 1000 + 100);
    wait_for("the next second", WAIT, || std::time::SystemTime::now() >= next_second);
    let d = Daemon::start(&root, &["--on-batch", &cmd, "--on-batch-timeout", "120"]);
    let lines = || fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_string).collect::<Vec<_>>();
    write(&root, "f0", "x");
    wait_kind(&root, "f0", "new");
    wait_for("the first run", WAIT, || !lines().is_empty());
    let principal = root.join("RECENT-1h.yaml");
    assert_eq!(lines(), [format!("start 1 1 {} {}", news(&root)["f0"].0, principal.display())]);
    // The run is held at the gate: every file is still recorded, each in its own batch.
    for i in 1..=5 {
        write(&root, &format!("f{i}"), "x");
        wait_kind(&root, &format!("f{i}"), "new");
    }
    assert_eq!(lines().len(), 1, "a second run started while the first went on: {:?}", lines());
    fs::write(&gate, "").unwrap();
    wait_for("the coalesced run", WAIT, || lines().len() >= 4);
    let newest = news(&root)["f5"].0.clone();
    assert_eq!(lines()[1..], ["end".to_string(), format!("start 5 5 {newest} {}", principal.display()), "end".into()]);
    // Another batch, another run.
    write(&root, "g", "x");
    wait_for("a run for the next batch", WAIT, || lines().len() >= 6);
    assert!(lines()[4].starts_with("start 1 1 "), "{:?}", lines());
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert_eq!(lines().len(), 6, "{:?}", lines());
}
