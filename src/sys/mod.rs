//! The system layer: what rrr asks of the operating system beyond plain
//! files, each in one place: reading `/proc` ([`proc`]), running child
//! processes ([`child`]) and rsync ([`rsync`]).
//!
//! Linux only, as rrr is (inotify, `/proc`, `PR_SET_PDEATHSIG`).

pub(crate) mod child;
pub(crate) mod proc;
pub(crate) mod rsync;
