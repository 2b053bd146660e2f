//! The `--on-pass` hook's side of a pass: whether a pass calls for it
//! (it changed something or failed) and the `RRR_*` variables that tell
//! the hook what the pass did. Running the hook is [`crate::hook`]'s.
//!
//! The variables: `RRR_LOCALROOT`, `RRR_REMOTE`, `RRR_STATUS` (`ok`,
//! `partial`: refused events, failing paths or deletes left pending, or
//! `failed`), `RRR_EXIT` (the pass's exit status), `RRR_TRANSFERRED`,
//! `RRR_BYTES`, `RRR_DELETED`, `RRR_REFUSED`, `RRR_FAILING`,
//! `RRR_ERRORS`, `RRR_COMPLETE` (`1` or `0`), `RRR_BOOTSTRAP`,
//! `RRR_SECONDS`, `RRR_ERROR` (the first error's message, or empty), and
//! `RRR_UPSTREAM` (with several upstreams, the one the pass read).

use crate::mirror::PassReport;

/// Whether a pass calls for the hook: it changed something or failed.
pub(crate) fn wanted(rep: Option<&PassReport>) -> bool {
    match rep {
        None => true,
        Some(r) => {
            r.transferred > 0
                || r.deleted > 0
                || !r.refused.is_empty()
                || !r.failing.is_empty()
                || !r.errors.is_empty()
                || r.deletes_pending > 0
                || r.bootstrap
        }
    }
}

/// The `RRR_*` variables of a pass (`rep`), or of a pass that failed with
/// `error` before it could report, after `seconds` (its one error counts
/// in `RRR_ERRORS`, its time in `RRR_SECONDS`).
pub(crate) fn environment(
    localroot: &str,
    remote: &str,
    exit: i32,
    rep: Option<&PassReport>,
    error: Option<&str>,
    seconds: f64,
) -> Vec<(String, String)> {
    let status = match (exit, rep) {
        (0, Some(_)) => "ok",
        (1, Some(_)) => "partial",
        _ => "failed",
    };
    let n = |f: fn(&PassReport) -> u64| rep.map_or(0, f).to_string();
    let flag = |f: fn(&PassReport) -> bool| if rep.is_some_and(f) { "1" } else { "0" }.to_string();
    let error = error.map(str::to_string).or_else(|| rep.and_then(|r| r.errors.first().cloned())).unwrap_or_default();
    [
        ("RRR_LOCALROOT", localroot.to_string()),
        ("RRR_REMOTE", remote.to_string()),
        ("RRR_STATUS", status.to_string()),
        ("RRR_EXIT", exit.to_string()),
        ("RRR_TRANSFERRED", n(|r| r.transferred)),
        ("RRR_BYTES", n(|r| r.bytes)),
        ("RRR_DELETED", n(|r| r.deleted)),
        ("RRR_REFUSED", n(|r| r.refused.len() as u64)),
        ("RRR_FAILING", n(|r| r.failing.len() as u64)),
        ("RRR_ERRORS", rep.map_or(u64::from(!error.is_empty()), |r| r.errors.len() as u64).to_string()),
        ("RRR_COMPLETE", flag(|r| r.complete)),
        ("RRR_BOOTSTRAP", flag(|r| r.bootstrap)),
        ("RRR_SECONDS", format!("{:.3}", rep.map_or(seconds, |r| r.seconds))),
        ("RRR_ERROR", error.lines().next().unwrap_or("").to_string()),
        // Several upstreams: the one the pass read (empty with one).
        ("RRR_UPSTREAM", rep.and_then(|r| r.upstream.clone()).unwrap_or_default()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_says_what_the_pass_did() {
        let rep = PassReport {
            transferred: 3,
            bytes: 10,
            complete: true,
            upstream: Some("b::m/RECENT.recent".into()),
            ..PassReport::default()
        };
        let env = environment("/m", "h::m/RECENT.recent", 0, Some(&rep), None, 9.0);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("RRR_STATUS"), Some("ok"));
        assert_eq!(get("RRR_TRANSFERRED"), Some("3"));
        assert_eq!(get("RRR_COMPLETE"), Some("1"));
        assert_eq!(get("RRR_LOCALROOT"), Some("/m"));
        assert_eq!(get("RRR_UPSTREAM"), Some("b::m/RECENT.recent"));
        let env = environment("/m", "r", 2, None, Some("rsync failed with code 5: x\nmore"), 6.4);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!((get("RRR_STATUS"), get("RRR_ERROR")), (Some("failed"), Some("rsync failed with code 5: x")));
        assert_eq!((get("RRR_ERRORS"), get("RRR_SECONDS")), (Some("1"), Some("6.400")), "a failed pass's own");
        assert!(wanted(None) && wanted(Some(&rep)) && !wanted(Some(&PassReport::default())));
    }
}
