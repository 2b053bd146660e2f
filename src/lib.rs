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
//! - [`origin`]: the origin side, the writer of the index under the lock,
//!   with the pure recording rules of `rrr watch` ([`origin::watch_rules`])
//!   and its inotify instance ([`origin::watcher`]).
//!
//! The mirror: [`done`] (pure: which epoch intervals a mirror has),
//! [`remote`] (SRC forms, fetching recentfiles into a hidden temp dir),
//! [`ownership`] (pure: which trees a mirror may write into and delete from),
//! [`mirror`] (one pass: transfers, deletes, state), `ops::rmirror` (the loop,
//! lock and signals).

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
pub mod ownership;
pub mod pass_progress;
pub mod pattern;
pub mod perl_compat;
pub mod progress;
pub mod remote;
pub mod rsync;
pub mod signals;
pub mod status;
pub mod store;
pub mod tree;
