//! rrr: keep a huge tree in sync on many mirrors from a cascade of small
//! index files, the recentfiles (a successor of Perl's File::Rsync::Mirror::Recent).
//!
//! Architecture map. The pure core takes data in and gives data out (no
//! filesystem, no clock, no processes):
//! - [`epoch`]: exact decimal epochs, the reference comparator and bump;
//! - [`interval`]: `1h` … `1Y`, `Z`;
//! - [`recentfile`]: the model, YAML::Syck-identical and JSON (de)serialization.
//!
//! Side effects live at the edge, each in one place:
//! - [`store`]: the lock directory protocol, atomic writes, the principal symlink;
//! - [`watcher`]: the inotify instance of `rrr watch` (pure rules in [`watch`]).
//!
//! The mirror: [`done`] (pure: which epoch intervals a mirror has),
//! [`mirror`] (one pass: transfers, deletes, state; with
//! [`mirror::remote`]: SRC forms, fetching recentfiles into a hidden temp dir;
//! [`mirror::ownership`]: pure, which trees a mirror may write into and delete
//! from; [`mirror::status`]: what `status` and `check` say about a state;
//! [`mirror::progress`]: a pass's progress), `ops::rmirror` (the loop, lock
//! and signals).

// The pure core lives in its own crate, `recentfile` (crates/recentfile);
// its modules keep their paths here (`rrr::epoch`, `rrr::recentfile`, …).
pub use ::recentfile::format as recentfile;
pub use ::recentfile::{aggregate, done, epoch, interval, query, update};

pub mod clock;
pub mod collection;
pub mod config;
pub mod hook;
pub mod human;
pub mod log;
pub mod manual;
pub mod mirror;
pub mod notify;
pub mod ops;
pub mod origin;
pub mod pattern;
pub mod perl_compat;
pub mod progress;
pub mod rsync;
pub mod signals;
pub mod store;
pub mod tree;
pub mod watch;
pub mod watcher;

// For src/ops/watch.rs, which a parallel branch of issue 15 is moving:
// drop once it says `crate::mirror::status`.
pub(crate) use mirror::status;
