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
//! **The origin side**, [`origin`]: the writer of the index under the lock;
//! the engines of `update` (`origin::record`), `aggregate`
//! (`origin::aggregate`, which `init --aggregate` and the watch daemon
//! run too), `init` (`origin::index`) and `fsck` (`origin::index_check`);
//! [`origin::watch`], the `rrr watch` daemon (main loop, events, catch-up,
//! heartbeat, its log), with its pure recording rules (`watch::rules`,
//! `watch::markers`, `watch::moves`), the watcher seam (`watch::backend`)
//! and its one backend (`watch::inotify`; a fanotify one would be
//! `watch::fanotify`).
//!
//! **The mirror side**, [`mirror`]: one pass (fetch the principal, decide,
//! transfer, delete, install the recentfiles, save the state) in `pass`,
//! `transfer`, `deletes`, `safety`, `install` and `state` (over the run
//! lock, `mirror::run_lock`), over the leaf
//! `report` (the pass report and the types they share); one tree's run,
//! `--loop` included ([`mirror::looping`]), and a config's trees on their
//! threads (`mirror::fleet`); [`mirror::options`] (rmirror's one option
//! model: command line, `[[tree]]` table, top-level keys, built-in
//! default, and its TOML file); [`mirror::remote`] (SRC forms, fetching
//! into a hidden temp dir), `mirror::ownership` (pure: which trees rrr may
//! write into and delete from), `mirror::health` (what `status` and
//! `check` say), [`mirror::targets`] (the trees of a target or config and
//! their run records, what rmirror, status and check share),
//! `mirror::textfile` (the node-exporter textfile), `mirror::pass_progress`
//! (a long rsync's bar, log lines and heartbeat) and [`mirror::trigger_pipe`] (the pipe through which
//! `rrr trigger` wakes a loop).
//!
//! **The commands**, [`ops`]: one module per subcommand, each an `Options`
//! and `run(&Options, &Ctx) -> Result<Exit>` that converts options and
//! calls the engine ([`ops::rmirror`] calls `mirror::looping` or
//! `mirror::fleet`, [`ops::watch`] `origin::watch`). Their exit codes,
//! [`exit::Exit`], sit below both ops and the engines (ops re-exports
//! them). The binary (bin/rrr) only parses arguments into them.
//!
//! **The edges**, each side effect in one place:
//! - [`store`]: the lock protocol shared with the Perl tools, atomic writes,
//!   reading recentfiles from disk, the principal symlink;
//! - [`sys`]: the system layer: `sys::proc` (the one `/proc` reader),
//!   `sys::child` (the one child runner: PDEATHSIG, process group, stop
//!   forwarding, stderr tail, timeout), `sys::rsync` (the builder, running
//!   and failure classes, stderr classification, the stall watchdog),
//!   `sys::tree` (paths of any length, no symlink followed), [`sys::signals`]
//!   (SIGINT/SIGTERM/SIGUSR1), [`sys::clock`] (the one clock, `--now`,
//!   local time), `memory` (freed heap back to the kernel), `notify`
//!   (sd_notify), the only module allowed code the compiler cannot
//!   check; `collection`: a collection on disk; `tree`: the one ignore
//!   set and the walk of the tree that `init`, `fsck` and `watch` share;
//! - [`output`]: [`output::log`] (the one channel for messages),
//!   [`output::progress`] (bars, only on a terminal), `human` (times and
//!   sizes for people), [`output::manual`] (help and man page text),
//!   `output::prometheus` (node-exporter's text format, both sides);
//! - [`hook`]: runs `--on-pass` and `--on-batch` (a pass's `RRR_*`
//!   variables are `mirror::on_pass`'s); [`pattern`]: `--exclude` with rsync's rules; [`perl_compat`]:
//!   the Perl tools' command lines.
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
