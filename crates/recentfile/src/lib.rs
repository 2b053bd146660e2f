//! The recentfiles of File::Rsync::Mirror::Recent (CPAN's `RECENT-1h.yaml`
//! … `RECENT-Z.yaml`), for any Rust program that reads or writes them.
//!
//! A recentfile lists change events `{epoch, path, type: new|delete}`,
//! newest first, in strictly decreasing, unique epochs; a collection is a
//! cascade of them (1h, 6h, 1d, … Z). This crate is the pure core of
//! `rrr`: data in, data out, no lock, no clock, no process. It reads what
//! the Perl tools write and writes what YAML::Syck 1.34 writes, byte for
//! byte; epochs are kept as their exact decimal text.
//!
//! - [`epoch`]: exact decimal epochs, the reference's comparator and bump;
//! - [`interval`]: `1h` … `1Y`, `Z`;
//! - [`format`](mod@format): the model ([`Recentfile`], [`Event`]) and its YAML
//!   (YAML::Syck-identical) and JSON readers and writers;
//! - [`update`]: recording events in a file (the pure half of an update);
//! - [`aggregate`]: merging a smaller file into the next larger one;
//! - [`beacon`]: the signed beacon `RECENT.beacon.json` and the rules a mirror applies to it;
//! - [`query`]: news (each path's newest event) and the overview table;
//! - [`done`]: which epochs a mirror has (the done-set of one file).
//!
//! ```
//! use recentfile::{parse_bytes, Format};
//! use recentfile::query::{News, NewsFilter};
//!
//! let yaml = b"---
//! meta:
//!   filenameroot: RECENT
//!   interval: 1h
//!   protocol: 1
//!   serializer_suffix: .yaml
//! recent:
//!   - epoch: 1700000400.5
//!     path: id/T/TI/TICK/Tick-2.tar.gz
//!     type: new
//!   - epoch: 1700000300.25
//!     path: id/T/TI/TICK/Tick-1.tar.gz
//!     type: delete
//! ";
//! let rf = parse_bytes(yaml, Format::Yaml)?;
//! assert_eq!(rf.events.len(), 2);
//!
//! // What a mirror that has everything up to 1700000300.25 still needs:
//! let filter = NewsFilter { after: Some("1700000300.25".parse()?), ..NewsFilter::default() };
//! let news = News::of([&rf]).finish(&filter);
//! assert_eq!(news[0].path, "id/T/TI/TICK/Tick-2.tar.gz");
//! assert_eq!(news.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod aggregate;
pub mod beacon;
pub mod done;
pub mod epoch;
pub mod format;
pub mod interval;
pub mod path;
pub mod query;
pub mod update;

pub use epoch::Epoch;
pub use format::{parse_bytes, serialize, Event, EventKind, Format, Recentfile};
pub use interval::Interval;
pub use path::RelPath;
