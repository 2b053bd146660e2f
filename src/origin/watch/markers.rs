//! The markers and the promise they carry (pure: times in, times out).
//! Every heartbeat written is a marker; when its event comes back through
//! the backend's queue, which is FIFO, every change made before the write
//! has been received. Once those are recorded, the marker's write time
//! becomes `synced_to`: every change before it is in the index (the next
//! start-up compares files modified at or after it). Events lost (a queue
//! overflow, a batch dropped for its size) hold `synced_to` back to the
//! lower bound a rescan then starts from, until that rescan is done.

use std::collections::VecDeque;

/// Markers written whose event has not come back, at most (a heartbeat
/// written while the backend falls far behind is not waited for).
const MAX_WAITING: usize = 1000;

/// The markers' state, as the daemon keeps it.
#[derive(Debug)]
pub struct Markers {
    /// Write times of markers whose event has not arrived yet.
    waiting: VecDeque<f64>,
    /// Write time of the newest marker received.
    last: f64,
    synced_to: f64,
    /// Events were lost: the pending rescan looks at files modified since
    /// this time, and `synced_to` stays below it until then.
    rescan_floor: Option<f64>,
}

impl Markers {
    /// A daemon started at `started` (the wall time): as if a marker
    /// written then had come back.
    pub fn new(started: f64) -> Markers {
        Markers { waiting: VecDeque::new(), last: started, synced_to: started, rescan_floor: None }
    }

    /// A marker was written at `t`.
    pub fn written(&mut self, t: f64) {
        if self.waiting.len() < MAX_WAITING {
            self.waiting.push_back(t);
        }
    }

    /// A marker's event came back.
    pub fn received(&mut self) {
        self.last = self.waiting.pop_front().unwrap_or(self.last);
    }

    /// Whether markers written have not come back yet.
    pub fn waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Write time of the newest marker received.
    pub fn last(&self) -> f64 {
        self.last
    }

    pub fn synced_to(&self) -> f64 {
        self.synced_to
    }

    /// Move `synced_to` up to the last marker received, but not past the
    /// oldest change still being written (`writing_floor`) nor a pending
    /// rescan's floor.
    pub fn advance(&mut self, writing_floor: Option<f64>) {
        let t = writing_floor.map_or(self.last, |f| f.min(self.last));
        self.synced_to = self.rescan_floor.map_or(t, |f| f.min(t));
    }

    /// Events were lost here: the rescan must look back to the last marker
    /// received before them. (A heartbeat written while the rest of the
    /// backlog is read arrives after the loss, and its time is later than
    /// the lost changes.)
    pub fn events_lost(&mut self) {
        self.lower_floor(self.last);
    }

    /// A batch was dropped: every change since `synced_to` was in it or is
    /// still to come.
    pub fn batch_dropped(&mut self) {
        self.lower_floor(self.synced_to);
    }

    fn lower_floor(&mut self, t: f64) {
        self.rescan_floor = Some(self.rescan_floor.map_or(t, |f| f.min(t)));
    }

    /// Where a rescan starts: the pending floor, or the last marker.
    pub fn rescan_from(&self) -> f64 {
        self.rescan_floor.map_or(self.last, |f| f.min(self.last))
    }

    /// The rescan is done: `synced_to` is no longer held back.
    pub fn rescanned(&mut self) {
        self.rescan_floor = None;
    }

    /// The floor a pending rescan starts from, if one is pending.
    #[cfg(test)]
    pub fn rescan_floor(&self) -> Option<f64> {
        self.rescan_floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synced_to_follows_markers_received_in_order() {
        let mut m = Markers::new(100.0);
        m.written(102.0);
        m.written(104.0);
        assert!(m.waiting());
        m.advance(None);
        assert_eq!(m.synced_to(), 100.0, "nothing came back yet");
        m.received();
        m.advance(None);
        assert_eq!((m.last(), m.synced_to()), (102.0, 102.0));
        // A change still being written holds it back.
        m.received();
        m.advance(Some(103.0));
        assert_eq!((m.last(), m.synced_to()), (104.0, 103.0));
        assert!(!m.waiting());
        // An event of a marker not waited for keeps the last one.
        m.received();
        assert_eq!(m.last(), 104.0);
    }

    #[test]
    fn lost_events_hold_synced_to_back_until_the_rescan() {
        let mut m = Markers::new(100.0);
        m.written(102.0);
        m.received();
        m.events_lost();
        m.written(104.0);
        m.received();
        m.advance(None);
        assert_eq!(m.synced_to(), 102.0, "held at the marker before the loss");
        assert_eq!(m.rescan_from(), 102.0);
        m.batch_dropped();
        assert_eq!(m.rescan_floor(), Some(102.0), "the lower bound stays");
        m.rescanned();
        m.advance(None);
        assert_eq!((m.synced_to(), m.rescan_from()), (104.0, 104.0));
        // A dropped batch: the rescan looks back to synced_to.
        m.written(106.0);
        m.received();
        m.batch_dropped();
        m.advance(None);
        assert_eq!((m.rescan_from(), m.synced_to()), (104.0, 104.0));
    }

    #[test]
    fn at_most_so_many_markers_wait() {
        let mut m = Markers::new(0.0);
        for i in 0..MAX_WAITING + 5 {
            m.written(i as f64);
        }
        for _ in 0..MAX_WAITING {
            m.received();
        }
        assert!(!m.waiting());
    }
}
