//! The system layer's signal handling where no other module pins it: a
//! stopped `rrr watch` names the signal that stopped it (the handler
//! records which one arrived).

use crate::util::*;
use crate::watch::{tree, WAIT};
use std::fs;
use std::process::Stdio;

#[test]
fn a_watch_stop_names_the_signal_that_asked_for_it() {
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let (tmp, root) = tree(&["a.txt"]);
        let log = tmp.path().join("watch.log");
        let daemon = Rrr::new()
            .args(["watch", s(&root), "--json-log"])
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn();
        let read_log = || fs::read_to_string(&log).unwrap_or_default();
        wait_for("the daemon to start", WAIT, || read_log().contains("\"kind\":\"start\""));
        daemon.signal(signal);
        daemon.assert_exit(0);
        let stop = read_log().lines().find(|l| l.contains("\"kind\":\"stop\"")).map(str::to_string);
        let stop = stop.unwrap_or_else(|| panic!("no stop line after {name}:\n{}", read_log()));
        assert!(stop.contains(&format!("\"signal\":\"{name}\"")), "{stop}");
    }
}
