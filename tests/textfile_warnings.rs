//! The `--prometheus` textfile of `rrr rmirror` in a directory that is
//! missing: the operator hears about it once per pass, not once per write.

use crate::util::fixture::Origin;
use crate::util::*;

/// A bootstrap pass rewrites the textfile at its heartbeat and after the
/// pass; a missing directory the operator chose is one warning, naming
/// the file, and the mirror is still made.
#[test]
fn missing_textfile_directory_warns_once_per_pass() {
    let origin = Origin::new([("id/A/a.tar.gz", "a\n")], &["init"]);
    let mirror = origin.mirror();
    let prom = origin.dir().join("no-such-dir/rrr.prom");
    let o = mirror.rmirror().args(["--prometheus", s(&prom)]).assert_ok();
    let err = stderr(&o);
    assert_eq!(err.matches("cannot write the Prometheus textfile").count(), 1, "{err}");
    assert!(err.contains(s(&prom)), "names the file: {err}");
    assert!(mirror.root.join("id/A/a.tar.gz").exists());
}
