//! The system layer: what rrr asks of the operating system beyond plain
//! files, each in one place: reading `/proc` (`proc`), running child
//! processes (`child`) and rsync (`rsync`), the tree walk and the one
//! ignore set (`tree`), SIGINT/SIGTERM ([`signals`]), the one clock
//! ([`clock`], `--now`) and sd_notify (`notify`).
//!
//! Linux only, as rrr is (inotify, `/proc`, `PR_SET_PDEATHSIG`).

pub(crate) mod child;
pub mod clock;
pub(crate) mod notify;
pub(crate) mod proc;
pub(crate) mod rsync;
pub mod signals;
pub(crate) mod tree;
