//! The README's first command, end to end: `bin/demo` builds an origin,
//! serves it with a loopback rsync daemon, runs `rrr watch`, mirrors with
//! `rrr rmirror`, changes the origin and checks the mirror caught up.

use std::path::Path;
use std::process::Command;

#[test]
fn demo_runs_end_to_end() {
    let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("bin/demo"))
        .env("RRR", crate::util::rrr_bin())
        .env("TERM", "dumb")
        .output()
        .expect("run bin/demo");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "demo failed: {text}");
    assert!(text.contains("the mirror is identical to the origin"), "{text}");
    assert!(text.contains("delete\tauthors/id/A/AN/ANDK/Demo-ANDK-7.tar.gz"), "watch recorded the delete: {text}");
    assert!(text.contains("new\tauthors/id/N/NE/NEWBIE/First-0.01.tar.gz"), "watch recorded the upload: {text}");
    assert!(text.contains("RRR OK"), "{text}");
}
