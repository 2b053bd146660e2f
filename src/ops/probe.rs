//! `rrr probe URL…`: the freshness of mirrors measured from the origin
//! ([`crate::monitor::probe`]): a table, `--json` (one object per mirror)
//! or `--prometheus`. Exit 0 when every mirror is fresh, 1 when one is
//! stale, 3 when one could not be read (the worst decides), 2 on usage
//! errors (docs/decisions.md#exit-codes).

use crate::monitor::probe::{self, check_url, Report, Request};
use crate::ops::{Ctx, Exit};
use anyhow::Result;
use std::time::Duration;

/// How `rrr probe` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A table for people.
    Table,
    /// One JSON object per mirror.
    Json,
    /// Prometheus text.
    Prometheus,
}

/// What `rrr probe` was asked.
#[derive(Clone, Debug)]
pub struct Options {
    /// The mirrors' URLs.
    pub urls: Vec<String>,
    /// The origin's URL, if lag is to be measured behind it.
    pub origin: Option<String>,
    /// The trace directory relative to each URL.
    pub trace_dir: String,
    /// Per mirror time bound.
    pub timeout: Duration,
    /// Lag beyond which a mirror is stale, seconds.
    pub max_lag: f64,
    /// Output format.
    pub format: Format,
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), ToString::to_string)
}

/// Probe and print; the exit code from the worst mirror.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    for u in opts.urls.iter().chain(&opts.origin) {
        check_url(u)?;
    }
    probe::probe_filters(&opts.trace_dir)?;
    let req = Request {
        urls: opts.urls.clone(),
        origin: opts.origin.clone(),
        trace_dir: opts.trace_dir.clone(),
        timeout: opts.timeout,
        max_lag: opts.max_lag,
        now: ctx.clock().now_f64(),
    };
    let reports = probe::probe(&req);
    let mut out = ctx.out();
    match opts.format {
        Format::Json => {
            for r in &reports {
                writeln!(out, "{}", serde_json::to_string(r)?)?;
            }
        }
        Format::Prometheus => write!(out, "{}", probe::prometheus(&reports))?,
        Format::Table => {
            let human = |t: Option<i64>| t.map_or_else(|| "-".into(), |t| crate::output::human::time(t as f64));
            let dur = |s: Option<f64>| s.map_or_else(|| "-".into(), crate::output::human::duration);
            writeln!(
                out,
                "{:<11} {:>5} {:<20} {:<6} {:>10} {:<24} MIRROR",
                "STATUS", "SCORE", "ORIGIN TIME", "SOURCE", "LAG", "UPSTREAM"
            )?;
            for r in &reports {
                writeln!(
                    out,
                    "{:<11} {:>5} {:<20} {:<6} {:>10} {:<24} {}{}",
                    r.status,
                    r.score,
                    human(r.origin_time),
                    r.origin_source.unwrap_or("-"),
                    dur(r.lag),
                    opt(&r.upstream),
                    r.url,
                    r.error.as_ref().map(|e| format!("  ({e})")).unwrap_or_default()
                )?;
            }
        }
    }
    out.flush()?;
    Ok(exit_of(&reports))
}

/// 3 when one is unreachable, else 1 when one is stale, else 0.
fn exit_of(reports: &[Report]) -> Exit {
    if reports.iter().any(|r| r.status == "unreachable") {
        Exit::Unknown
    } else if reports.iter().any(|r| r.status == "stale") {
        Exit::Differences
    } else {
        Exit::Ok
    }
}
