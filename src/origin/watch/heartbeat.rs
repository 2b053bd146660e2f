//! The heartbeat: `.rrr/watch.json` (pid, start, last heartbeat and
//! `synced_to`), written atomically every few seconds and watched by the
//! daemon itself, so that its event, arriving after every change made
//! before it (the kernel queue is FIFO), is a marker; how markers advance
//! `synced_to`; the node-exporter textfile written with each
//! heartbeat; the beacon and the origin's trace files (`--trace`,
//! `--timestamp`) refreshed on the beacon's schedule.

use super::watch_log::Log;
use super::{wall, Daemon};
use crate::epoch::Epoch;
use crate::origin::watch::rules::Heartbeat;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// The heartbeat (marker) period while events flow, and when idle.
const HEARTBEAT_ACTIVE: Duration = Duration::from_secs(2);
const HEARTBEAT_IDLE: Duration = Duration::from_secs(30);

pub(super) fn parse_heartbeat(path: &Path) -> Option<Result<Heartbeat, String>> {
    let text = fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| e.to_string()))
}

/// The watch daemon's node-exporter textfile: instants as Unix times,
/// counters since the daemon started, the root as label.
fn prometheus(root: &str, log: &Log, hb: &Heartbeat, watches: usize, pending: usize) -> String {
    use crate::output::prometheus::{label_value, metric};
    let l = format!("root=\"{}\"", label_value(root));
    let one = |v: f64| vec![(l.clone(), v)];
    let ts = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    let mut out = String::new();
    let gauges = [
        ("rrr_watch_started_timestamp_seconds", "Unix time the daemon started.", ts(&hb.started)),
        ("rrr_watch_heartbeat_timestamp_seconds", "Unix time of the daemon's last heartbeat.", ts(&hb.heartbeat)),
        (
            "rrr_watch_synced_to_timestamp_seconds",
            "Every change before this Unix time is in the index.",
            ts(&hb.synced_to),
        ),
        (
            "rrr_watch_last_batch_timestamp_seconds",
            "Unix time of the last recorded batch (0: none yet).",
            log.last_batch.get().unwrap_or(0.0),
        ),
        (
            "rrr_watch_last_aggregate_timestamp_seconds",
            "Unix time of the last aggregate that merged (0: none yet).",
            log.last_aggregate.get().unwrap_or(0.0),
        ),
        ("rrr_watch_watches", "Directories watched.", watches as f64),
        ("rrr_watch_pending_changes", "Changes waiting for the next batch.", pending as f64),
    ];
    for (name, help, v) in gauges {
        metric(&mut out, name, "gauge", help, &one(v));
    }
    metric(&mut out, "rrr_watch_batches_total", "counter", "Batches recorded.", &one(log.batches.get() as f64));
    let changes = vec![
        (format!("{l},type=\"new\""), log.news.get() as f64),
        (format!("{l},type=\"delete\""), log.deletes.get() as f64),
    ];
    metric(&mut out, "rrr_watch_changes_total", "counter", "Changes recorded (batches, rescans, start-up).", &changes);
    metric(&mut out, "rrr_watch_rescans_total", "counter", "Rescans of the tree.", &one(log.rescans.get() as f64));
    metric(
        &mut out,
        "rrr_watch_rerecorded_total",
        "counter",
        "Acknowledged events that had gone missing from the principal (an older copy renamed over it) and were recorded again.",
        &one(log.rerecorded.get() as f64),
    );
    let problems = vec![
        (format!("{l},level=\"warning\""), log.warnings.get() as f64),
        (format!("{l},level=\"error\""), log.errors.get() as f64),
    ];
    metric(&mut out, "rrr_watch_problems_total", "counter", "Warnings and errors logged.", &problems);
    out
}

impl Daemon<'_> {
    pub(super) fn next_heartbeat(&self) -> Instant {
        self.last_heartbeat + if self.active { HEARTBEAT_ACTIVE } else { HEARTBEAT_IDLE }
    }

    pub(super) fn on_marker(&mut self) {
        self.markers.received();
        if self.batch.pending() == 0 {
            self.advance_synced();
        }
    }

    pub(super) fn advance_synced(&mut self) {
        self.markers.advance(self.batch.writing_floor());
    }

    /// Write the heartbeat (also a marker).
    pub(super) fn heartbeat(&mut self) {
        self.last_heartbeat = self.now();
        self.active = false;
        let dir = self.root.join(".rrr");
        if !self.watcher.is_watched(&".rrr".into()) {
            let _ = fs::create_dir_all(&dir);
            let _ = self.watcher.add(&".rrr".into());
        }
        let now = wall();
        let hb = Heartbeat {
            pid: std::process::id(),
            started: Epoch::from_clock(self.started).into_string(),
            heartbeat: Epoch::from_clock(now).into_string(),
            synced_to: Epoch::from_clock(self.markers.synced_to()).into_string(),
        };
        let text = serde_json::to_string(&hb).unwrap_or_default() + "\n";
        let tmp = dir.join("watch.json.new");
        let res = (|| -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, dir.join("watch.json"))
        })();
        match res {
            Ok(()) => {
                self.markers.written(now);
                let wanted = self.opts.prometheus.is_some() || self.opts.metrics.is_some();
                let root = self.root.display().to_string();
                let text = if wanted {
                    prometheus(&root, &self.log, &hb, self.watcher.count(), self.batch.pending())
                } else {
                    String::new()
                };
                if let Some(served) = &self.opts.metrics {
                    let log = &self.log;
                    let (news, deletes, runs) = (log.news.get(), log.deletes.get(), log.aggregations.get());
                    let rrrgo = crate::monitor::metrics_http::rrrgo_metrics(
                        news,
                        deletes,
                        self.batch.pending() as u64,
                        Some(runs),
                    );
                    *served.lock().unwrap_or_else(|e| e.into_inner()) = format!("{text}{rrrgo}");
                }
                if let Some(file) = &self.opts.prometheus {
                    match crate::store::write_atomic(file, text.as_bytes(), None) {
                        Err(e) if crate::output::prometheus::no_textfile_collector(file) => {
                            tracing::debug!("no textfile collector here: {e}");
                        }
                        Err(e) => {
                            self.log.warn(format!("cannot write the Prometheus textfile {}: {e}", file.display()))
                        }
                        Ok(()) => {}
                    }
                }
            }
            Err(e) => self.log.error(format!("cannot write heartbeat {}: {e}", dir.join("watch.json").display())),
        }
        self.refresh_beacon();
        self.refresh_traces();
    }

    /// Rewrite the master trace and the timestamp file (`--trace`,
    /// `--timestamp`) on the beacon's schedule: when they would be older
    /// than its interval before the next heartbeat (their age read from the
    /// master trace's mtime, or the timestamp file's). They are in the
    /// ignore set: writing them is never an event.
    fn refresh_traces(&mut self) {
        let Some(probe) = self.opts.traces.probe_file(&self.root) else { return };
        let age = fs::metadata(&probe).ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        let interval = self.w.beacon.interval.unwrap_or(::recentfile::beacon::DEFAULT_INTERVAL);
        if age.is_some_and(|a| a + HEARTBEAT_IDLE < Duration::from_secs(interval)) {
            return;
        }
        let now = self.w.clock.now_f64().floor() as i64;
        if let Err(e) = self.opts.traces.write(&self.coll, now) {
            self.log.error(format!("cannot write the origin's trace files: {e:#}"));
        }
    }

    /// Rewrite the beacon when it would be older than its interval before
    /// the next heartbeat (its age read from its mtime: no state here).
    fn refresh_beacon(&mut self) {
        use crate::origin::beacon;
        if !beacon::active(&self.coll, self.w) {
            return;
        }
        let path = beacon::beacon_path(&self.coll);
        let age = fs::metadata(&path).ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        let interval = self.w.beacon.interval.unwrap_or_else(|| {
            fs::read(&path)
                .ok()
                .and_then(|b| ::recentfile::beacon::Beacon::parse(&b).ok())
                .map_or(::recentfile::beacon::DEFAULT_INTERVAL, |b| b.interval)
        });
        if age.is_some_and(|a| a + HEARTBEAT_IDLE < Duration::from_secs(interval)) {
            return;
        }
        if let Err(e) = beacon::refresh(&self.coll, self.w) {
            self.log.error(format!("cannot refresh the beacon {}: {e:#}", path.display()));
        }
    }
}
