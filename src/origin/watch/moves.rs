//! The two halves of a directory's rename, paired by the backend's cookie
//! (pure: no filesystem, no clock). A directory moved out waits here for
//! its move in elsewhere in the tree; what never finds its other half left
//! the tree. The daemon (`events`) asks this table and moves the watches
//! and the batch's entries accordingly.

use super::rules::is_under;
use crate::recentfile::RelPath;
use std::collections::HashMap;

/// Directories moved out whose other half is awaited, at most (past it
/// they are taken as moved out of the tree).
pub const MAX_PENDING_OUT: usize = 1000;

/// Directories moved out, by the cookie of the rename, waiting for the
/// other half to tell a rename within the tree.
#[derive(Debug, Default)]
pub struct PendingMoves(HashMap<u32, RelPath>);

impl PendingMoves {
    /// `dir` moved out under `cookie`. Returns a directory that waited
    /// under the same cookie (it left the tree).
    pub fn moved_out(&mut self, cookie: u32, dir: RelPath) -> Option<RelPath> {
        self.0.insert(cookie, dir)
    }

    /// The other half of a move in under `cookie`, if it waits here.
    pub fn pair(&mut self, cookie: u32) -> Option<RelPath> {
        self.0.remove(&cookie)
    }

    /// The directories waiting at or around `path` (at it, under it, or
    /// above it): something else happened there, so their moves were out
    /// of the tree. They no longer wait.
    pub fn take_around(&mut self, path: &RelPath) -> Vec<RelPath> {
        let cookies: Vec<u32> =
            self.0.iter().filter(|(_, a)| is_under(path, a) || is_under(a, path)).map(|(c, _)| *c).collect();
        cookies.into_iter().filter_map(|c| self.0.remove(&c)).collect()
    }

    /// Every directory waiting (they left the tree); none waits after.
    pub fn take_all(&mut self) -> Vec<RelPath> {
        std::mem::take(&mut self.0).into_values().collect()
    }

    /// More wait than [`MAX_PENDING_OUT`].
    pub fn over_limit(&self) -> bool {
        self.0.len() > MAX_PENDING_OUT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RelPath {
        RelPath::from(s)
    }

    #[test]
    fn halves_pair_by_cookie_and_the_rest_left_the_tree() {
        let mut m = PendingMoves::default();
        assert_eq!(m.moved_out(7, p("a")), None);
        assert_eq!(m.moved_out(8, p("x/y")), None);
        assert_eq!(m.pair(9), None);
        assert_eq!(m.pair(7), Some(p("a")));
        assert_eq!(m.pair(7), None, "a half pairs once");
        // The same cookie again: the earlier one left the tree.
        assert_eq!(m.moved_out(8, p("z")), Some(p("x/y")));
        assert_eq!(m.take_all(), vec![p("z")]);
        assert_eq!(m.take_all(), Vec::<RelPath>::new());
    }

    #[test]
    fn anything_at_or_around_a_waiting_place_settles_it() {
        let mut m = PendingMoves::default();
        m.moved_out(1, p("a/b"));
        m.moved_out(2, p("c"));
        assert_eq!(m.take_around(&p("ab")), Vec::<RelPath>::new(), "a sibling named alike is not around");
        assert_eq!(m.take_around(&p("a")), vec![p("a/b")], "made again above it");
        assert_eq!(m.take_around(&p("c/new")), vec![p("c")], "something below it");
        assert_eq!(m.take_all(), Vec::<RelPath>::new());
    }

    #[test]
    fn the_limit() {
        let mut m = PendingMoves::default();
        for c in 0..=MAX_PENDING_OUT as u32 {
            assert!(!m.over_limit());
            m.moved_out(c, p(&format!("d{c}")));
        }
        assert!(m.over_limit());
    }
}
