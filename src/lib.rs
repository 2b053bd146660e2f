//! rrr: keep a huge tree in sync on many mirrors from a cascade of small
//! index files, the recentfiles (a successor of Perl's File::Rsync::Mirror::Recent).
//!
//! # Map
//!
//! **The pure core** is the crate `recentfile` (crates/recentfile): data in,
//! data out, no paths, clock or processes. Its modules keep their paths here:
//! - [`epoch`]: exact decimal epochs, the reference's comparator and bump;
//! - [`interval`]: `1h` … `1Y`, `Z`;
//! - [`recentfile`]: the model, YAML::Syck-identical YAML and JSON, the
//!   validation of every upstream file;
//! - [`update`], [`aggregate`]: recording events, merging into larger files;
//! - [`query`]: news and the overview table; [`done`]: a mirror's done-sets.
//!
//! **The origin side**, [`origin`]: the writer of the index under the lock,
//! the pure recording rules of `rrr watch` (`origin::watch_rules`) and its
//! inotify instance (`origin::watcher`).
//!
//! **The mirror side**, [`mirror`]: one pass (fetch the principal, decide,
//! transfer, delete, install the recentfiles, save the state), with
//! [`mirror::remote`] (SRC forms, fetching into a hidden temp dir),
//! `mirror::ownership` (pure: which trees rrr may write into and delete
//! from), `mirror::status` (what `status` and `check` say),
//! `mirror::progress` (a long rsync's bar, log lines and heartbeat) and
//! [`mirror::trigger`] (the pipe through which `rrr trigger` wakes a loop).
//!
//! **The commands**, [`ops`]: one module per subcommand, each an `Options`
//! and `run(&Options, &Ctx) -> Result<Exit>` ([`ops::trigger`] among them);
//! [`ops::mirrors`] is what rmirror, status and check share, and runs
//! `rmirror --config` with every tree on its own thread. The binary
//! (bin/rrr) only parses arguments into them.
//!
//! **The edges**, each side effect in one place:
//! - [`store`]: the lock protocol shared with the Perl tools, atomic writes,
//!   reading recentfiles from disk, the principal symlink;
//! - `sys`: the system layer: `sys::proc` (the one `/proc` reader),
//!   `sys::child` (the one child runner: PDEATHSIG, process group, stop
//!   forwarding, stderr tail, timeout), `sys::rsync` (the builder, running
//!   and failure classes, stderr classification, the stall watchdog);
//! - `tree`: the walk and the one ignore set; `collection`: a collection on
//!   disk; [`signals`]: SIGINT/SIGTERM; [`clock`]: the one clock (`--now`);
//! - [`log`]: the one channel for messages; [`progress`]: bars, only on a
//!   terminal; `human`: times and sizes for people; `notify`: sd_notify;
//!   [`hook`]: `--on-pass`; [`config`]: rmirror's one option model (command
//!   line, `[[tree]]` table, top-level keys, built-in default) and its TOML
//!   file; [`pattern`]: `--exclude` with rsync's rules;
//! - [`manual`]: help and man page text; [`perl_compat`]: the Perl tools'
//!   command lines.
//!
//! Modules shown without a link are internal (`pub(crate)`).

#![warn(missing_docs)]

pub use ::recentfile::format as recentfile;
pub use ::recentfile::{aggregate, done, epoch, interval, query, update};

pub mod clock;
pub(crate) mod collection;
pub mod config;
pub mod hook;
pub(crate) mod human;
pub mod log;
pub mod manual;
pub mod mirror;
pub(crate) mod notify;
pub mod ops;
pub mod origin;
pub mod pattern;
pub mod perl_compat;
pub mod progress;
pub mod signals;
pub mod store;
pub(crate) mod sys;
pub(crate) mod tree;
