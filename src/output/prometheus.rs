//! The Prometheus text format of node-exporter's textfile collector, shared
//! by the mirror's health report (`mirror::health`, `mirror::textfile`) and
//! the watch daemon's heartbeat (`origin::watch::heartbeat`): one metric's
//! HELP, TYPE and samples ([`metric`]), a label value escaped
//! ([`label_value`]), and whether a textfile failure is worth a warning
//! ([`no_textfile_collector`]). What each side reports stays on its side.

use std::fmt::Write as _;
use std::path::Path;

/// A label value escaped as the text format wants it (backslash, double
/// quote and newline).
pub(crate) fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// One metric: HELP, TYPE and a sample per row (labels, value).
pub(crate) fn metric(out: &mut String, name: &str, kind: &str, help: &str, rows: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, v) in rows {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {v}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    }
}

/// The textfile directory of Debian's prometheus-node-exporter, which the
/// packaged units and the cron examples name.
const DEFAULT_TEXTFILE_DIR: &str = "/var/lib/prometheus/node-exporter";

/// A textfile that cannot be written because it belongs in the default
/// directory and that is missing: the host runs no node-exporter, nobody
/// would read the file, and a warning every pass (a cron mail every
/// minute) helps nobody. A missing directory the operator chose, or any
/// other failure, is still worth a warning.
pub(crate) fn no_textfile_collector(file: &Path) -> bool {
    let dir = Path::new(DEFAULT_TEXTFILE_DIR);
    file.parent() == Some(dir) && matches!(dir.symlink_metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}
