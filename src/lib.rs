//! rrr: keep a huge tree in sync on many mirrors from a cascade of small
//! index files, the recentfiles (a successor of Perl's File::Rsync::Mirror::Recent).
//!
//! # Map
//!
//! The one map of the source tree is README.md's "Layout" section; each
//! module's `//!` says what it owns. In short: the pure core is the crate
//! `recentfile` (re-exported here as [`epoch`], [`interval`], [`recentfile`],
//! [`update`], [`aggregate`], [`query`], [`done`]); [`origin`] and
//! [`mirror`] are the two sides, side by side, [`monitor`] measures
//! freshness across mirrors; [`ops`] has one module per subcommand above
//! them; below them the edges, each side effect in one place: [`store`],
//! [`trust`], [`output`], [`sys`] (the only module allowed `unsafe`),
//! `tree`, `collection`, [`hook`], [`pattern`], [`perl_compat`], [`exit`].
//!
//! Modules shown without a link are internal (`pub(crate)`).

#![warn(missing_docs)]

pub use ::recentfile::format as recentfile;
pub use ::recentfile::{aggregate, done, epoch, interval, query, update};

pub(crate) mod collection;
pub mod exit;
pub mod hook;
pub mod mirror;
pub mod monitor;
pub mod ops;
pub mod origin;
pub mod output;
pub mod pattern;
pub mod perl_compat;
pub mod store;
pub mod sys;
pub(crate) mod tree;
pub mod trust;
pub mod verify;
