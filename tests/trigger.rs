//! Push: `rrr trigger` (and SIGUSR1) wake a running `rmirror --loop`,
//! against a real rsync daemon; triggers during a pass coalesce into one
//! more pass; without a loop, exit 3.

use crate::util::fixture::{passes_counted, Mirror, Origin};
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// An origin of `n` files served by a daemon, and where the mirror goes.
struct Push {
    origin: Origin,
    target: Mirror,
}

impl Push {
    fn new(n: usize) -> Push {
        let origin = Origin::numbered(n, |i| format!("d/f{i}.txt"));
        let target = origin.mirror();
        Push { origin, target }
    }

    /// A new file at the origin, recorded.
    fn publish(&self, rel: &str) {
        write(&self.origin, rel, "new\n");
        ok(&["update", &principal(&self.origin), rel]);
    }

    /// `rmirror --loop` with a long interval: only a trigger makes it pass
    /// again soon. rsync runs through `wrapper` when given.
    fn start_loop(&self, wrapper: Option<&Path>) -> Running {
        // `rmirror --loop` first: the run lock records this command line,
        // and the trigger test finds the holder named by it.
        let t = &self.target;
        let mut cmd = Rrr::new();
        cmd.args(["rmirror", "--loop", "--interval", "300", "--json", "--remote", &t.remote, "--localroot", s(t)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(w) = wrapper {
            cmd.env("RRR_RSYNC", w);
        }
        cmd.spawn()
    }

    fn trigger(&self) -> std::process::Output {
        rrr(&["trigger", "--localroot", s(&self.target)])
    }
}

fn stop(child: Running) -> std::process::Output {
    child.signal(libc::SIGTERM);
    child.wait_with_output()
}

#[test]
fn trigger_and_sigusr1_wake_the_loop() {
    let p = Push::new(3);
    let o = p.trigger();
    assert_eq!(o.status.code(), Some(3), "no loop yet: {}", stderr(&o));
    assert!(stderr(&o).contains("no rmirror --loop runs on"), "{}", stderr(&o));

    let child = p.start_loop(None);
    wait_for("the first pass", Duration::from_secs(60), || passes_counted(&p.target) >= 1);
    // With a 300 s interval, the file arrives only if the trigger woke the loop.
    p.publish("d/pushed.txt");
    let o = p.trigger();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("woke the loop on"), "{}", stdout(&o));
    let pid = format!("woke the loop on {} (process {})", p.target.display(), child.id());
    assert!(stdout(&o).contains(&pid), "names the holder by its pid: {}", stdout(&o));
    assert!(!stdout(&o).contains("rmirror"), "not the loop's command line, for whoever triggers: {}", stdout(&o));
    wait_for("the triggered pass", Duration::from_secs(60), || passes_counted(&p.target) >= 2);
    assert!(p.target.join("d/pushed.txt").exists(), "the triggered pass took the new file");
    // Once that pass is over (a wake during a pass is one more pass after
    // it, which would pass for the signal's below).
    let o = rrr(&["trigger", "--json", "--localroot", s(&p.target)]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!((v["woken"].as_bool(), v["pid"].as_u64()), (Some(true), Some(u64::from(child.id()))), "{v}");
    assert!(!stdout(&o).contains("rmirror"), "{}", stdout(&o));
    wait_for("the pass of the second trigger", Duration::from_secs(60), || passes_counted(&p.target) >= 3);

    p.publish("d/signalled.txt");
    child.signal(libc::SIGUSR1);
    wait_for("the pass after SIGUSR1", Duration::from_secs(60), || passes_counted(&p.target) >= 4);
    assert!(p.target.join("d/signalled.txt").exists(), "the signalled pass took the new file");

    let o = stop(child);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let o = p.trigger();
    assert_eq!(o.status.code(), Some(3), "the loop is gone: {}", stdout(&o));
}

#[test]
fn triggers_during_a_pass_make_exactly_one_more_pass() {
    let p = Push::new(3);
    // rsync through a wrapper that, while `slow` exists, records each call
    // and holds it for 2 s: a pass long enough to trigger during it.
    let marks = p.origin.dir().join("marks");
    fs::create_dir(&marks).unwrap();
    let wrapper = p.origin.dir().join("rsync");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ -e {m}/slow ]; then touch {m}/call.$$; sleep 2; fi\nexec rsync \"$@\"\n",
            m = marks.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();

    let child = p.start_loop(Some(&wrapper));
    wait_for("the first pass", Duration::from_secs(60), || passes_counted(&p.target) >= 1);
    fs::write(marks.join("slow"), "").unwrap();
    p.publish("d/one.txt");
    assert_eq!(p.trigger().status.code(), Some(0));
    let calls = || fs::read_dir(&marks).unwrap().count() - 1;
    wait_for("the slow pass to start", Duration::from_secs(60), || calls() >= 1);
    assert_eq!(passes_counted(&p.target), 1, "the second pass is still running");
    for _ in 0..5 {
        let o = p.trigger();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    fs::remove_file(marks.join("slow")).unwrap();
    wait_for("the pass the triggers asked for", Duration::from_secs(60), || passes_counted(&p.target) >= 3);
    // Five triggers during one pass are one more pass, not five: with a
    // 300 s interval nothing else may follow.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(passes_counted(&p.target), 3, "triggers during a pass coalesce into one");
    assert!(p.target.join("d/one.txt").exists());
    let o = stop(child);
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["kind"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds.iter().filter(|k| *k == "pass").count(), 3, "{kinds:?}\n{}", stderr(&o));
}

#[test]
fn trigger_usage_and_config_trees() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("mirror.toml");
    let a = tmp.path().join("a");
    fs::write(
        &cfg,
        format!("[[tree]]\nremote = \"rsync://127.0.0.1:1/m/RECENT.recent\"\nlocalroot = \"{}\"\n", a.display()),
    )
    .unwrap();
    let o = rrr(&["trigger", "--config", s(&cfg)]);
    assert_eq!(o.status.code(), Some(3), "no loop: {}", stderr(&o));
    let o = rrr(&["trigger", "--config", s(&cfg), "--tree", s(&tmp.path().join("b"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no tree with localroot"), "{}", stderr(&o));
    let o = rrr(&["trigger", "--tree", s(&a)]);
    assert_eq!(o.status.code(), Some(2), "--tree needs --config: {}", stderr(&o));
    // Without write permission on the pipe it is an error, not "no loop".
    fs::create_dir_all(a.join(".rrr")).unwrap();
    fs::create_dir(a.join(".rrr/trigger")).unwrap();
    let o = rrr(&["trigger", "--localroot", s(&a)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(".rrr/trigger"), "{}", stderr(&o));
}
