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
//! - [`store`]: the lock directory protocol, atomic writes, the principal symlink.

pub mod aggregate;
pub mod clock;
pub mod collection;
pub mod epoch;
pub mod interval;
pub mod ops;
pub mod origin;
pub mod progress;
pub mod query;
pub mod recentfile;
pub mod rsync;
pub mod store;
pub mod tree;
pub mod update;
pub mod watch;
