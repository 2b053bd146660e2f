//! `rrr news`: its arguments and their conversion into `ops::news::Options`.

use clap::{Args, ValueEnum};
use rrr::epoch::Epoch;
use rrr::ops::news::{Options, Source};
use rrr::query::NewsFilter;
use rrr::recentfile::EventKind;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct NewsArgs {
    /// The principal (RECENT.recent, a recentfile, or the tree's root).
    #[arg(long, value_name = "PRINCIPAL", required_unless_present = "remote", conflicts_with = "remote")]
    pub local: Option<PathBuf>,
    /// A remote principal (rmirror's SRC forms): fetch its recentfiles, then list.
    #[arg(long, value_name = "SRC")]
    pub remote: Option<String>,
    /// With --remote: fetch into a hidden temp dir under DIR/.rrr instead of the system temp dir.
    #[arg(long, value_name = "DIR", requires = "remote")]
    pub localroot: Option<PathBuf>,
    /// With --remote: trust only recentfiles vouched for by the origin's
    /// beacon signed with a key in FILE (repeatable; see rmirror --trust-key).
    #[arg(long = "trust-key", value_name = "FILE", requires = "remote")]
    pub trust_key: Vec<PathBuf>,
    /// Only events strictly newer than EPOCH.
    #[arg(long, value_name = "EPOCH")]
    pub after: Option<Epoch>,
    /// Only events strictly older than EPOCH.
    #[arg(long, value_name = "EPOCH")]
    pub before: Option<Epoch>,
    /// At most N lines.
    #[arg(long, value_name = "N")]
    pub max: Option<usize>,
    /// Drop paths whose newest event is a delete.
    #[arg(long)]
    pub skip_deletes: bool,
    /// Only this path.
    #[arg(long, alias = "contains_path", value_name = "PATH")]
    pub contains_path: Option<std::ffi::OsString>,
    /// Only the event with exactly this epoch.
    #[arg(long, value_name = "EPOCH")]
    pub contains_epoch: Option<String>,
    /// Only events of this type (new or delete).
    #[arg(long, value_name = "TYPE", value_enum)]
    pub contains_type: Option<EventType>,
    /// JSON Lines: {"epoch","type","path"}.
    #[arg(long)]
    pub json: bool,
    /// The Perl rrr-news output (localtime and path).
    #[arg(long, hide = true)]
    pub perl_format: bool,
}

/// `--contains-type`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EventType {
    New,
    Delete,
}

impl From<NewsArgs> for Options {
    fn from(a: NewsArgs) -> Options {
        let source = match (a.local, a.remote) {
            (_, Some(src)) => Source::Remote { src, localroot: a.localroot, trust_keys: a.trust_key },
            (Some(local), None) => Source::Local(local),
            (None, None) => unreachable!("clap requires --local or --remote"),
        };
        let filter = NewsFilter {
            after: a.after,
            before: a.before,
            max: a.max,
            skip_deletes: a.skip_deletes,
            contains_path: a.contains_path.as_deref().map(rrr::recentfile::RelPath::from),
            contains_epoch: a.contains_epoch,
            contains_type: a.contains_type.map(|t| match t {
                EventType::New => EventKind::New,
                EventType::Delete => EventKind::Delete,
            }),
        };
        Options { source, filter, json: a.json, perl_format: a.perl_format }
    }
}
