//! The system layer: what rrr asks of the operating system beyond plain
//! files, each in one place: reading `/proc` (`proc`), running child
//! processes (`child`) and rsync (`rsync`), paths of any length below a
//! root (`tree`), SIGINT/SIGTERM/SIGUSR1/SIGHUP ([`signals`]), the one
//! clock ([`clock`], `--now`, and local time as libc breaks it down),
//! returning freed heap (`memory`), sd_notify (`notify`) and the bytes
//! a process received from the network (`netbytes`).
//!
//! The one module of the `rrr` crate allowed `unsafe` (`lib.rs` denies it
//! elsewhere), each block with the reason it holds; the rest of the crate
//! calls the operating system through std and `nix`, or through the safe
//! functions here. (The core crate `recentfile` and the tests are other
//! crates, with rules of their own.)
//!
//! Linux only, as rrr is (inotify, `/proc`, `PR_SET_PDEATHSIG`).

#![allow(unsafe_code)]

pub(crate) mod child;
pub mod clock;
pub(crate) mod memory;
pub(crate) mod netbytes;
pub(crate) mod notify;
pub(crate) mod proc;
pub(crate) mod rsync;
pub mod signals;
pub(crate) mod tree;
