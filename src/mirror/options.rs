//! rmirror's options: one model for every tree, whether it comes from the
//! command line or from a config file.
//!
//! A tree's options come from four layers, the first that sets an option
//! wins (docs/decisions.md#options): the command line, the tree's
//! `[[tree]]` table, the file's top-level keys, the built-in defaults.
//! Each layer is an [`OptionLayer`], whose fields are declared once and
//! serve as the clap arguments ([`CommandLine`], flattened into `rrr
//! rmirror`'s), the config keys and the typed values, each value checked
//! by its type as it is read (so an error names its layer, and in a file
//! its line); [`OptionLayer::merge`] stacks them and `resolve` turns the
//! result into the one per-tree struct the mirror runs on
//! (`mirror::Config`: a parsed remote, compiled patterns, durations,
//! counts, the built-in defaults filled in).
//!
//! The config file is TOML, one `[[tree]]` table per tree:
//!
//! ```toml
//! interval = 20                      # seconds between pass starts with --loop
//! max_files_per_connection = 20000
//!
//! [[tree]]
//! remote = "rsync://cpan-rsync.perl.org/CPAN/authors/RECENT.recent"
//! localroot = "/srv/CPAN/authors"
//! max_delete = 1000
//!
//! [[tree]]
//! remote = "rsync://cpan-rsync.perl.org/CPAN/modules/RECENT.recent"
//! localroot = "modules"              # relative: against this file's directory
//! skip_deletes = true
//! rsync_options = ["--bwlimit=5000"]
//! timeout = 600                      # seconds an rsync may move no data
//! exclude = ["*.tmp", "/incoming/"]    # rsync's --exclude syntax
//! on_pass = "/usr/local/bin/rrr-notify"  # see rrr::hook
//! ```
//!
//! Unknown keys are errors (a typo must not silently drop an option).
//! Relative paths (`localroot`, `state`, `password_file`) resolve against
//! the config file's directory, not the current one: a cron job and an
//! operator's shell must mean the same tree.

use crate::interval::Interval;
use crate::mirror::remote::{Remote, RsyncSettings, DEFAULT_MAX_RECENTFILE_SIZE};
use crate::mirror::Config;
use crate::pattern::Pattern;
use clap::parser::ValueSource;
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Built-in default: seconds between pass starts with `--loop` (what CPAN
/// mirrors use).
pub const DEFAULT_INTERVAL: f64 = 20.0;
/// The shortest loop interval: below it a mirror hammers its upstream.
pub const MIN_INTERVAL: f64 = 1.0;
/// Built-in default: paths per rsync call (the reference client's).
pub const DEFAULT_MAX_FILES_PER_CONNECTION: u64 = 20_000;
/// Built-in default: seconds an rsync may move no data before it is
/// stopped (docs/decisions.md#defaults: 300 s, watched by rrr instead
/// of rsync's `--timeout`).
pub const DEFAULT_TIMEOUT: u64 = 300;
/// rsync's `--contimeout`.
const CONNECT_TIMEOUT: u64 = 30;

/// A value type whose every check is in one function, `check`, which
/// both the command line (`FromStr`, clap's value parser) and a config
/// file (`Deserialize`, with the value's line) call: no option is
/// validated twice, nor once more in `resolve`.
macro_rules! checked {
    ($(#[$m:meta])* $name:ident($base:ty), $what:literal, |$v:ident| $check:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $base);

        impl $name {
            /// The one check of this value.
            fn check($v: $base) -> Result<$name, String> {
                $check.map(|()| $name($v))
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<$name, String> {
                let v: $base = s.parse().map_err(|_| format!("{s:?} is not {}", $what))?;
                $name::check(v)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                $name::check(<$base>::deserialize(d)?).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

checked!(
    /// A number of seconds: finite, not negative.
    Seconds(f64), "a number of seconds", |secs| if secs >= 0.0 && secs.is_finite() {
        Ok(())
    } else {
        Err(format!("{secs} is not a number of seconds"))
    }
);

checked!(
    /// The loop's interval: at least [`MIN_INTERVAL`] seconds.
    LoopInterval(f64), "a number of seconds", |secs| if secs >= MIN_INTERVAL && secs.is_finite() {
        Ok(())
    } else {
        Err(format!("{secs} s: must be at least {MIN_INTERVAL} s (a shorter loop hammers the upstream)"))
    }
);

checked!(
    /// A count of at least 1.
    AtLeastOne(u64), "a whole number", |n| if n >= 1 { Ok(()) } else { Err("must be at least 1".to_string()) }
);

/// A text value parsed once, kept as written (shown and compared as written).
macro_rules! parsed_text {
    ($(#[$m:meta])* $name:ident($parsed:ty), |$s:ident| $parse:expr) => {
        $(#[$m])*
        #[derive(Clone, Debug)]
        pub struct $name {
            /// As written.
            pub text: String,
            /// Parsed.
            pub value: $parsed,
        }

        impl PartialEq for $name {
            fn eq(&self, other: &$name) -> bool {
                self.text == other.text
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str($s: &str) -> Result<$name, String> {
                Ok($name { text: $s.to_string(), value: $parse? })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.text)
            }
        }
    };
}

parsed_text!(
    /// `full_every`, `verify_every`: an interval spec (`7d`, `1W`).
    FullEvery(Duration), |s| Interval::parse(s).map(|i| Duration::from_secs(i.seconds())).map_err(|e| e.to_string())
);

parsed_text!(
    /// `max_signature_age`: an interval spec (`1d`, `6h`).
    SignatureAge(Duration), |s| Interval::parse(s).map(|i| Duration::from_secs(i.seconds())).map_err(|e| e.to_string())
);

/// Built-in default of `max_signature_age`: a day (the origin's watch
/// re-signs every minute; `rrr beacon` from cron daily is the floor).
pub const DEFAULT_MAX_SIGNATURE_AGE: &str = "1d";

parsed_text!(
    /// `trace`, `timestamp`: a path inside the tree, relative to the
    /// localroot (`project/trace`, `indices/timestamp.txt`), never to the
    /// config file's directory: no `..`, `.`, absolute path, wildcard
    /// (it becomes an exclude pattern) or control character.
    TreePath(PathBuf), |s| tree_path(s)
);

parsed_text!(
    /// `trace_host`: the name of this mirror's trace file (a host name).
    TraceName(String), |s| crate::monitor::trace_write::check_trace_name(s).map(|()| s.to_string()).map_err(|e| e.to_string())
);

/// The one check of a [`TreePath`].
fn tree_path(s: &str) -> Result<PathBuf, String> {
    let p = Path::new(s);
    let normal = !s.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if !normal {
        return Err(format!("{s:?}: must be a relative path inside the tree, without '..' (e.g. project/trace)"));
    }
    if s.chars().any(|c| c.is_control() || "*?[\\".contains(c)) {
        return Err(format!("{s:?}: no wildcard, backslash or control character in a path rrr writes"));
    }
    if p.components().next().is_some_and(|c| c.as_os_str() == ".rrr") {
        return Err(format!("{s:?}: .rrr/ is rrr's state directory"));
    }
    Ok(p.components().collect())
}

parsed_text!(
    /// An `exclude` pattern (rsync's `--exclude` rules, `rrr::pattern`).
    Exclude(Pattern), |s| Pattern::parse(s)
);

/// Declares the per-tree options once: the struct given is the command
/// line's arguments (clap), a config table's keys (serde) and the typed
/// layer, and this macro generates from its fields what would otherwise
/// be written again per option: [`OptionLayer::merge`] (uv's
/// `CombineOptions`), the config keys, and the forgetting of the
/// defaults clap shows.
macro_rules! option_layer {
    ($(#[$sm:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $field:ident: Option<$ty:ty>,)* }) => {
        $(#[$sm])*
        pub struct $name { $($(#[$fm])* pub $field: Option<$ty>,)* }

        impl $name {
            /// The config keys, which are the field names.
            pub const KEYS: &[&str] = &[$(stringify!($field)),*];

            /// Stack layers, highest precedence first: each option from
            /// the first layer that sets it.
            pub fn merge(layers: &[&$name]) -> $name {
                $name { $($field: layers.iter().find_map(|l| l.$field.clone()),)* }
            }

            /// The layer without what clap filled in from a default it
            /// shows in `--help`: an option not given on the command line
            /// leaves the choice to the config file.
            fn without_defaults(mut self, m: &clap::ArgMatches) -> $name {
                $(if m.value_source(stringify!($field)) == Some(ValueSource::DefaultValue) {
                    self.$field = None;
                })*
                self
            }
        }
    };
}

option_layer! {
    /// The per-tree options one layer sets (`None`: not set here, the next
    /// layer decides). The same struct is the command line's layer
    /// ([`CommandLine`]), a `[[tree]]` table and the file's top-level
    /// defaults, so an option is declared in one place and works in every
    /// layer. A default shown in `--help` is the constant `resolve` uses.
    #[derive(Clone, Debug, Default, Deserialize, PartialEq, clap::Args)]
    #[serde(deny_unknown_fields)]
    #[command(next_help_heading = "Tree options (also keys of a --config file's tables)")]
    pub struct OptionLayer {
        /// Seconds between pass starts with --loop (at least 1).
        #[arg(long, value_name = "SECONDS", default_value = LoopInterval(DEFAULT_INTERVAL).to_string())]
        pub interval: Option<LoopInterval>,
        /// Do not apply delete events.
        #[arg(long, action = clap::ArgAction::SetTrue)]
        pub skip_deletes: Option<bool>,
        /// Apply at most N deletes in this run; the rest stays pending.
        #[arg(long, value_name = "N")]
        pub max_delete: Option<u64>,
        /// Paths per rsync call.
        #[arg(long, value_name = "N", default_value = AtLeastOne(DEFAULT_MAX_FILES_PER_CONNECTION).to_string())]
        pub max_files_per_connection: Option<AtLeastOne>,
        /// Pass OPT to every rsync call (repeatable), e.g. --rsync-option=--bwlimit=1000.
        #[arg(long = "rsync-option", value_name = "OPT", allow_hyphen_values = true)]
        pub rsync_options: Option<Vec<String>>,
        /// rsync --password-file (daemon sources).
        #[arg(long, value_name = "FILE")]
        pub password_file: Option<PathBuf>,
        /// Whole-tree passes (--full, --full-every, a bootstrap) compare files
        /// of the same size and mtime by content (rsync --checksum: reads
        /// every such file on both sides).
        #[arg(long, action = clap::ArgAction::SetTrue)]
        pub checksum: Option<bool>,
        /// End an rsync that moved no data and used no CPU for this many
        /// seconds (retried like any timeout; 0: never). rrr watches rsync
        /// itself: rsync's --timeout costs every connection to a default
        /// rsyncd 40 ms.
        #[arg(long, value_name = "SECONDS", default_value = DEFAULT_TIMEOUT.to_string())]
        pub timeout: Option<u64>,
        /// Refuse a remote recentfile larger than this many bytes, unread.
        #[arg(long, value_name = "BYTES", default_value = DEFAULT_MAX_RECENTFILE_SIZE.to_string())]
        pub max_recentfile_size: Option<u64>,
        /// Leave out paths matching PATTERN (rsync's --exclude rules): not
        /// transferred, deleted or republished; their events are skipped.
        #[arg(long, value_name = "PATTERN")]
        pub exclude: Option<Vec<Exclude>>,
        /// With --loop (or from cron): a whole-tree pass when the last one is
        /// older than DURATION (e.g. 7d, 1W), instead of a separate --full run.
        #[arg(long, value_name = "DURATION")]
        pub full_every: Option<FullEvery>,
        /// With --loop (or from cron): run `rrr verify` on the tree before a
        /// pass when the last one is older than DURATION (e.g. 1d, 7d); what
        /// it finds missing or different is fetched by that pass.
        #[arg(long, value_name = "DURATION")]
        pub verify_every: Option<FullEvery>,
        /// Run CMD through /bin/sh -c after every pass that changed something or
        /// failed, with the pass in RRR_* variables (README.mirror).
        #[arg(long, value_name = "CMD")]
        pub on_pass: Option<String>,
        /// Seconds an --on-pass hook may run before it is killed.
        #[arg(long, value_name = "SECONDS", default_value = Seconds(crate::hook::DEFAULT_TIMEOUT.as_secs_f64()).to_string())]
        pub on_pass_timeout: Option<Seconds>,
        /// Trust only recentfiles vouched for by the origin's beacon signed
        /// with a key in FILE (an OpenSSH public key file, `ssh-ed25519
        /// AAAA...`, or allowed_signers lines; repeatable, for key rotation).
        /// An unsigned upstream is then refused.
        #[arg(long = "trust-key", value_name = "FILE")]
        pub trust_key: Option<Vec<PathBuf>>,
        /// With --trust-key: an origin signature older than DURATION is
        /// stale (nothing deleted, check CRITICAL).
        #[arg(long, value_name = "DURATION", default_value = DEFAULT_MAX_SIGNATURE_AGE)]
        pub max_signature_age: Option<SignatureAge>,
        /// After each complete pass write an ftpsync trace into DIR (relative
        /// to the localroot, e.g. project/trace): this mirror's trace, the
        /// upstream's traces and _hierarchy. DIR is rrr's own: excluded from
        /// transfers, deletes and the republished recentfiles.
        #[arg(long, value_name = "DIR")]
        pub trace: Option<TreePath>,
        /// The name of this mirror's trace file and of its _hierarchy line
        /// (default: the host name).
        #[arg(long, value_name = "NAME")]
        pub trace_host: Option<TraceName>,
        /// After each complete pass write FILE (relative to the localroot,
        /// e.g. indices/timestamp.txt): the origin time this mirror holds,
        /// epoch first, for mirmon and mirrorbits. rrr's own, like --trace.
        #[arg(long, value_name = "FILE")]
        pub timestamp: Option<TreePath>,
    }
}

/// The command line's layer: [`OptionLayer`]'s arguments, flattened into
/// `rrr rmirror`'s, without the defaults clap shows (and fills in).
#[derive(Clone, Debug, Default)]
pub struct CommandLine(pub OptionLayer);

impl clap::FromArgMatches for CommandLine {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<CommandLine, clap::Error> {
        Ok(CommandLine(OptionLayer::from_arg_matches(m)?.without_defaults(m)))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = CommandLine::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for CommandLine {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        OptionLayer::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        OptionLayer::augment_args_for_update(cmd)
    }
}

/// Which tree: the remote principal, the local tree, the state file.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    /// The remote principal (SRC), parsed by `resolve`.
    pub remote: String,
    /// Further upstreams of the same collection (`--remote` repeated, or
    /// `remote = [..]`), in the order given after `remote`: each pass uses
    /// the freshest that answers (`mirror::upstreams`). Empty: one remote.
    pub more_remotes: Vec<String>,
    /// The local tree mirrored into.
    pub localroot: PathBuf,
    /// `None`: `<localroot>/.rrr/state.json`.
    pub state: Option<PathBuf>,
}

impl TreeSpec {
    /// The state file: `state`, or `<localroot>/.rrr/state.json`.
    pub fn state_file(&self) -> PathBuf {
        self.state.clone().unwrap_or_else(|| self.localroot.join(".rrr/state.json"))
    }
}

/// Settings of a run that are not per tree (command line only).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFlags {
    /// `--dry-run`: list, change nothing.
    pub dry_run: bool,
    /// Progress bars may be drawn.
    pub progress: bool,
    /// `--accept-deletes`: the next whole-tree pass may delete a mass of the tree.
    pub accept_deletes: bool,
}

/// The mirror's settings for `tree` from merged options, the built-in
/// defaults filling what no layer set. The options were checked as they
/// were read (each layer names its own errors); only the remote is
/// parsed here.
pub(crate) fn resolve(tree: &TreeSpec, o: &OptionLayer, run: RunFlags) -> Result<Config, String> {
    let remote = Remote::parse(&tree.remote).map_err(|e| format!("{e:#}"))?;
    let upstreams = upstreams_of(&remote, &tree.more_remotes)?;
    let on_pass_timeout = o.on_pass_timeout.map_or(crate::hook::DEFAULT_TIMEOUT, |s| Duration::from_secs_f64(s.0));
    // The trace directory and the timestamp file are rrr's own: excluded
    // like the user's patterns (never transferred, deleted, republished,
    // nor counted by verify), so a whole-tree pass keeps them.
    let mut excludes: Vec<Pattern> = o.exclude.iter().flatten().map(|e| e.value.clone()).collect();
    for own in [
        o.trace.as_ref().map(|t| format!("/{}/", t.value.display())),
        o.timestamp.as_ref().map(|t| format!("/{}", t.value.display())),
    ]
    .into_iter()
    .flatten()
    {
        excludes.push(Pattern::parse(&own).map_err(|e| format!("{own}: {e}"))?);
    }
    Ok(Config {
        remote,
        upstreams,
        localroot: tree.localroot.clone(),
        state_file: tree.state_file(),
        skip_deletes: o.skip_deletes.unwrap_or(false),
        max_delete: o.max_delete,
        accept_deletes: run.accept_deletes,
        checksum: o.checksum.unwrap_or(false),
        max_files_per_connection: usize::try_from(
            o.max_files_per_connection.map_or(DEFAULT_MAX_FILES_PER_CONNECTION, |n| n.0),
        )
        .unwrap_or(usize::MAX),
        rsync: RsyncSettings {
            password_file: o.password_file.clone(),
            extra: o.rsync_options.clone().unwrap_or_default(),
            timeout: o.timeout.unwrap_or(DEFAULT_TIMEOUT),
            contimeout: CONNECT_TIMEOUT,
        },
        dry_run: run.dry_run,
        attempts: 3,
        backoff: Duration::from_secs(2),
        progress: run.progress,
        max_recentfile_size: o.max_recentfile_size.unwrap_or(DEFAULT_MAX_RECENTFILE_SIZE),
        excludes,
        trace: o.trace.as_ref().map(|t| t.value.clone()),
        trace_host: o.trace_host.as_ref().map(|t| t.value.clone()),
        timestamp: o.timestamp.as_ref().map(|t| t.value.clone()),
        interval: Duration::from_secs_f64(o.interval.map_or(DEFAULT_INTERVAL, |i| i.0)),
        on_pass: o.on_pass.clone(),
        on_pass_timeout,
        full_every: o.full_every.as_ref().map(|f| f.value),
        verify_every: o.verify_every.as_ref().map(|f| f.value),
        trust_keys: o.trust_key.clone().unwrap_or_default(),
        max_signature_age: match &o.max_signature_age {
            Some(a) => a.value,
            None => DEFAULT_MAX_SIGNATURE_AGE.parse::<SignatureAge>().map(|a| a.value)?,
        },
    })
}

/// Every upstream of a tree, `first` first, each parsed; all must name the
/// same principal file (`RECENT.recent`, or the same recentfile): they are
/// copies of one collection, reached at other places
/// (docs/decisions.md#several-upstreams). The same place twice is refused.
pub(crate) fn upstreams_of(first: &Remote, more: &[String]) -> Result<Vec<Remote>, String> {
    let mut all = vec![first.clone()];
    for src in more {
        let r = Remote::parse(src).map_err(|e| format!("{e:#}"))?;
        if r.name != first.name {
            return Err(format!(
                "remote {src:?} names {}, but {:?} names {}: every upstream of a tree must name the same \
                 principal (the same collection at another place)",
                r.name, first.src, first.name
            ));
        }
        if let Some(same) = all.iter().find(|u| u.normalized() == r.normalized()) {
            return Err(format!("remote {src:?} is given twice (as {:?})", same.src));
        }
        all.push(r);
    }
    Ok(all)
}

/// One `[[tree]]` table: which tree, and the options its table sets.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeTable {
    /// `remote`, `localroot`, `state`.
    pub tree: TreeSpec,
    /// The other keys of the table.
    pub options: OptionLayer,
}

/// The whole file, its relative paths resolved against its directory.
#[derive(Clone, Debug, PartialEq)]
pub struct MirrorConfig {
    /// The top-level keys: defaults for every tree.
    pub defaults: OptionLayer,
    /// The `[[tree]]` tables, in file order.
    pub trees: Vec<TreeTable>,
}

/// A config file being read: its name and text, for errors that name
/// the file, the line and the layer (`[[tree]]` N or the top-level
/// defaults) a bad value is in.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// `config FILE line N (LAYER): MESSAGE`, the line where `span` starts.
    fn error(&self, span: Option<Range<usize>>, layer: &str, message: &str) -> String {
        match span {
            Some(span) => {
                let start = span.start.min(self.text.len());
                let line = self.text[..start].matches('\n').count() + 1;
                format!("config {} line {line} ({layer}): {message}", self.file.display())
            }
            None => format!("config {} ({layer}): {message}", self.file.display()),
        }
    }

    /// The text of the line where `span` starts, trimmed.
    fn line_at(&self, span: &Range<usize>) -> &str {
        let start = span.start.min(self.text.len());
        let from = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let to = self.text[start..].find('\n').map_or(self.text.len(), |i| start + i);
        self.text[from..to].trim()
    }

    /// One layer's options from its table, checked value by value; an
    /// error quotes the line of the bad key or value, which names the key.
    fn layer(&self, table: Spanned<DeTable<'_>>, layer: &str) -> Result<OptionLayer, String> {
        OptionLayer::deserialize(toml::de::Deserializer::from(table)).map_err(|e| {
            let message = match e.span() {
                Some(span) => format!("`{}`: {}", self.line_at(&span), e.message()),
                None => e.message().to_string(),
            };
            self.error(e.span(), layer, &message)
        })
    }
}

impl MirrorConfig {
    /// Parse the text of `file` (named in errors, with the line and the
    /// layer of a bad value).
    pub fn parse(text: &str, file: &Path) -> Result<MirrorConfig, String> {
        let src = Source { file, text };
        let named = |e: String| format!("config {}: {e}", file.display());
        let doc = DeTable::parse(text).map_err(|mut e| {
            e.set_input(Some(text));
            format!("cannot read config {}: {e}", file.display())
        })?;
        let doc_span = doc.span();
        let mut top = doc.into_inner();
        let trees = match top.remove("tree") {
            Some(v) => match v.into_inner() {
                DeValue::Array(a) => a.iter().cloned().collect::<Vec<_>>(),
                _ => return Err(named("`tree` must be [[tree]] tables".to_string())),
            },
            None => Vec::new(),
        };
        if trees.is_empty() {
            return Err(named("no [[tree]] tables".to_string()));
        }
        let base = file.parent().unwrap_or(Path::new(""));
        let mut defaults = src.layer(Spanned::new(doc_span, top), "top-level defaults")?;
        defaults.password_file = defaults.password_file.map(|p| base.join(p));
        defaults.trust_key = defaults.trust_key.map(|v| v.into_iter().map(|p| base.join(p)).collect());
        let mut tables = Vec::with_capacity(trees.len());
        for (ix, t) in trees.into_iter().enumerate() {
            let n = ix + 1;
            let span = t.span();
            let DeValue::Table(mut t) = t.into_inner() else {
                return Err(named(format!("tree {n} is not a table")));
            };
            let remotes = take_remotes(&mut t, &src, n)?;
            let mut take = |key: &str| -> Result<Option<(String, Range<usize>)>, String> {
                let Some(v) = t.remove(key) else { return Ok(None) };
                let at = v.span();
                match v.into_inner() {
                    DeValue::String(s) => Ok(Some((s.into_owned(), at))),
                    v => Err(src.error(
                        Some(at),
                        &format!("[[tree]] {n}"),
                        &format!("{key} must be a string, not {}", v.type_str()),
                    )),
                }
            };
            let (localroot, state) = (take("localroot")?, take("state")?);
            let remote = remotes.as_ref().map(|(r, at)| (r[0].clone(), at.clone()));
            let (Some((remote, remote_at)), Some((localroot, _))) = (remote.clone(), localroot.clone()) else {
                let missing = if remote.is_none() { "remote" } else { "localroot" };
                return Err(src.error(Some(span), &format!("[[tree]] {n}"), &format!("no {missing}{}", typo_hint(&t))));
            };
            let layer = format!("[[tree]] {n}, localroot {localroot}");
            let first = Remote::parse(&remote)
                .map_err(|e| src.error(Some(remote_at.clone()), &layer, &format!("remote: {e:#}")))?;
            let more_remotes: Vec<String> = remotes.map(|(r, _)| r[1..].to_vec()).unwrap_or_default();
            upstreams_of(&first, &more_remotes)
                .map_err(|e| src.error(Some(remote_at), &layer, &format!("remote: {e}")))?;
            let mut options = src.layer(Spanned::new(span, t), &layer)?;
            options.password_file = options.password_file.map(|p| base.join(p));
            options.trust_key = options.trust_key.map(|v| v.into_iter().map(|p| base.join(p)).collect());
            let tree = TreeSpec {
                remote,
                more_remotes,
                localroot: base.join(localroot),
                state: state.map(|(s, _)| base.join(s)),
            };
            tables.push(TreeTable { tree, options });
        }
        Ok(MirrorConfig { defaults, trees: tables })
    }

    /// Every tree with its options merged: `cli` over the tree's table over
    /// the file's defaults.
    pub fn merged<'a>(&'a self, cli: &'a OptionLayer) -> impl Iterator<Item = (&'a TreeSpec, OptionLayer)> + 'a {
        self.trees.iter().map(move |t| (&t.tree, OptionLayer::merge(&[cli, &t.options, &self.defaults])))
    }
}

/// A table's upstreams, and where `remote` is in the file.
type Remotes = (Vec<String>, Range<usize>);

/// A table's `remote`: one string, or an array of at least one string
/// (several upstreams), with where it is in the file.
fn take_remotes(t: &mut DeTable<'_>, src: &Source<'_>, n: usize) -> Result<Option<Remotes>, String> {
    let Some(v) = t.remove("remote") else { return Ok(None) };
    let at = v.span();
    let bad = |what: &str| src.error(Some(at.clone()), &format!("[[tree]] {n}"), what);
    match v.into_inner() {
        DeValue::String(s) => Ok(Some((vec![s.into_owned()], at))),
        DeValue::Array(a) => {
            let mut all = Vec::new();
            for item in a.iter() {
                match item.get_ref() {
                    DeValue::String(s) => all.push(s.to_string()),
                    v => return Err(bad(&format!("remote must be a string or strings, not {}", v.type_str()))),
                }
            }
            if all.is_empty() {
                return Err(bad("remote = []: name at least one upstream"));
            }
            Ok(Some((all, at)))
        }
        v => Err(bad(&format!("remote must be a string, not {}", v.type_str()))),
    }
}

/// The keys of a `[[tree]]` table that are not options.
const TREE_KEYS: [&str; 3] = ["remote", "localroot", "state"];

/// For a table that lacks `remote` or `localroot`: the unknown key that
/// is probably it misspelt (`locaroot`), named, or nothing.
fn typo_hint(rest: &DeTable<'_>) -> String {
    let unknown: Vec<&str> =
        rest.keys().map(|k| k.get_ref().as_ref()).filter(|k| !OptionLayer::KEYS.contains(k)).collect();
    let Some(key) = unknown.first() else { return String::new() };
    let close = TREE_KEYS.iter().find(|t| edit_distance(t, key) <= 2);
    match close {
        Some(t) => format!("; unknown key `{key}`: did you mean `{t}`?"),
        None => format!("; unknown key `{key}`"),
    }
}

/// Levenshtein distance of two short keys.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `path` made absolute with `.` and `..` folded and symlinks followed
/// as far as it exists, so two spellings of one directory compare equal
/// (a localroot need not exist yet).
pub fn canonical(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::from("/");
    for part in abs.components() {
        match part {
            // `out` has no symlinks in it, so `..` is its parent.
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// What one tree occupies on disk, canonical ([`canonical`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Footprint {
    /// The tree's localroot.
    pub localroot: PathBuf,
    /// The directory of its state file when `--state` puts it elsewhere.
    pub state_dir: Option<PathBuf>,
    /// The remote's own tree for each upstream that is a local path.
    pub origins: Vec<PathBuf>,
}

/// Refuse trees that would write into each other or into their own
/// origin: a localroot inside another's (the outer tree's whole-tree pass
/// deletes the inner one's files), or inside another tree's state
/// directory, or a state file inside another tree, or a localroot that is,
/// holds or lies in its local remote's tree.
pub fn check_footprints(trees: &[Footprint]) -> Result<(), String> {
    let overlap = |a: &Path, b: &Path| a.starts_with(b) || b.starts_with(a);
    for (i, t) in trees.iter().enumerate() {
        for o in &t.origins {
            if overlap(&t.localroot, o) {
                return Err(format!(
                    "localroot {} overlaps its own remote's tree {}: a mirror cannot be mirrored into itself",
                    t.localroot.display(),
                    o.display()
                ));
            }
        }
        for (j, u) in trees.iter().enumerate().filter(|(j, _)| *j != i) {
            if i < j && overlap(&t.localroot, &u.localroot) {
                return Err(format!(
                    "localroots {} and {} overlap: one tree's pass would delete the other's files",
                    t.localroot.display(),
                    u.localroot.display()
                ));
            }
            if let Some(s) = &u.state_dir {
                if overlap(&t.localroot, s) {
                    return Err(format!(
                        "localroot {} overlaps the state directory {} of the tree at {}",
                        t.localroot.display(),
                        s.display(),
                        u.localroot.display()
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(f: impl FnOnce(&mut OptionLayer)) -> OptionLayer {
        let mut l = OptionLayer::default();
        f(&mut l);
        l
    }

    fn tree() -> TreeSpec {
        TreeSpec {
            remote: "rsync://h/M/RECENT.recent".into(),
            more_remotes: Vec::new(),
            localroot: "/srv/m".into(),
            state: None,
        }
    }

    /// Each option once through each layer: the command line beats the
    /// tree's table, the table the file's defaults, the defaults the
    /// built-in value.
    #[test]
    fn precedence_of_every_option() {
        type Set = fn(&mut OptionLayer, u64);
        type Get = fn(&Config) -> String;
        let table: &[(&str, Set, Get, &str)] = &[
            ("interval", |l, v| l.interval = Some(LoopInterval(v as f64)), |c| c.interval.as_secs().to_string(), "20"),
            ("skip_deletes", |l, v| l.skip_deletes = Some(v % 4 == 3), |c| c.skip_deletes.to_string(), "false"),
            ("checksum", |l, v| l.checksum = Some(v % 4 == 3), |c| c.checksum.to_string(), "false"),
            ("max_delete", |l, v| l.max_delete = Some(v), |c| format!("{:?}", c.max_delete), "None"),
            (
                "max_files_per_connection",
                |l, v| l.max_files_per_connection = Some(AtLeastOne(v)),
                |c| c.max_files_per_connection.to_string(),
                "20000",
            ),
            ("rsync_options", |l, v| l.rsync_options = Some(vec![format!("--x={v}")]), |c| c.rsync.extra.join(","), ""),
            (
                "password_file",
                |l, v| l.password_file = Some(format!("/p{v}").into()),
                |c| format!("{:?}", c.rsync.password_file),
                "None",
            ),
            (
                "max_recentfile_size",
                |l, v| l.max_recentfile_size = Some(v),
                |c| c.max_recentfile_size.to_string(),
                "536870912",
            ),
            (
                "exclude",
                |l, v| l.exclude = Some(vec![format!("*.x{v}").parse().unwrap()]),
                |c| c.excludes.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(","),
                "",
            ),
            ("on_pass", |l, v| l.on_pass = Some(format!("hook{v}")), |c| format!("{:?}", c.on_pass), "None"),
            (
                "on_pass_timeout",
                |l, v| l.on_pass_timeout = Some(Seconds(v as f64)),
                |c| c.on_pass_timeout.as_secs().to_string(),
                "600",
            ),
            ("timeout", |l, v| l.timeout = Some(v), |c| c.rsync.timeout.to_string(), "300"),
            (
                "trust_key",
                |l, v| l.trust_key = Some(vec![format!("/k{v}").into()]),
                |c| format!("{:?}", c.trust_keys),
                "[]",
            ),
            (
                "max_signature_age",
                |l, v| l.max_signature_age = Some(format!("{v}h").parse().unwrap()),
                |c| c.max_signature_age.as_secs().to_string(),
                "86400",
            ),
            (
                "full_every",
                |l, v| l.full_every = Some(format!("{v}d").parse().unwrap()),
                |c| format!("{:?}", c.full_every.map(|d| d.as_secs() / 86_400)),
                "None",
            ),
            (
                "trace",
                |l, v| l.trace = Some(format!("p{v}/trace").parse().unwrap()),
                |c| format!("{:?}", c.trace),
                "None",
            ),
            (
                "trace_host",
                |l, v| l.trace_host = Some(format!("h{v}.example").parse().unwrap()),
                |c| format!("{:?}", c.trace_host),
                "None",
            ),
            (
                "timestamp",
                |l, v| l.timestamp = Some(format!("t{v}.txt").parse().unwrap()),
                |c| format!("{:?}", c.timestamp),
                "None",
            ),
            (
                "verify_every",
                |l, v| l.verify_every = Some(format!("{v}d").parse().unwrap()),
                |c| format!("{:?}", c.verify_every.map(|d| d.as_secs() / 86_400)),
                "None",
            ),
        ];
        let mut named: Vec<&str> = table.iter().map(|t| t.0).collect();
        let mut keys = OptionLayer::KEYS.to_vec();
        named.sort_unstable();
        keys.sort_unstable();
        assert_eq!(named, keys, "every option goes through the layers here");
        for (name, set, get, builtin) in table {
            // Layer values 3 (cli), 5 (table), 7 (defaults); a boolean is
            // `v % 4 == 3`: true, false, true, so each layer shows against
            // the next one, and the built-in false against the defaults.
            let (cli, tab, def) = (layer(|l| set(l, 3)), layer(|l| set(l, 5)), layer(|l| set(l, 7)));
            let none = OptionLayer::default();
            let got = |layers: &[&OptionLayer]| {
                get(&resolve(&tree(), &OptionLayer::merge(layers), RunFlags::default()).unwrap())
            };
            let expect = |v| get(&resolve(&tree(), &layer(|l| set(l, v)), RunFlags::default()).unwrap());
            assert_eq!(got(&[&cli, &tab, &def]), expect(3), "{name}: the command line wins");
            assert_eq!(got(&[&none, &tab, &def]), expect(5), "{name}: the tree's table beats the defaults");
            assert_eq!(got(&[&none, &none, &def]), expect(7), "{name}: the file's defaults beat the built-in");
            assert_eq!(got(&[&none, &none, &none]), *builtin, "{name}: the built-in default");
            assert_ne!(expect(3), expect(5), "{name}: the table must tell the layers apart");
            assert_ne!(expect(5), expect(7), "{name}: the table must tell the layers apart");
        }
    }

    /// An option not given on the command line is not set in its layer,
    /// although `--help` shows its default: the config file decides.
    #[test]
    fn the_command_line_sets_only_what_it_is_given() {
        use clap::{Args, FromArgMatches};
        let cmd = CommandLine::augment_args(clap::Command::new("rmirror"));
        let parse = |args: &[&str]| {
            let m = cmd.clone().try_get_matches_from(std::iter::once("rmirror").chain(args.iter().copied())).unwrap();
            CommandLine::from_arg_matches(&m).unwrap().0
        };
        assert_eq!(parse(&[]), OptionLayer::default());
        let given = parse(&["--interval", "20", "--checksum", "--exclude", "*.x", "--exclude", "/y/"]);
        assert_eq!(given.interval, Some(LoopInterval(20.0)), "given, although the default");
        assert_eq!((given.checksum, given.skip_deletes, given.timeout), (Some(true), None, None));
        assert_eq!(given.exclude.map(|e| e.len()), Some(2));
        let help = cmd.clone().render_long_help().to_string();
        assert!(help.contains("[default: 20]") && help.contains("[default: 300]"), "{help}");
    }

    /// One check per value, the same for the command line and a file.
    #[test]
    fn interval_below_one_second_is_refused() {
        for bad in ["0", "0.5", "-1", "NaN"] {
            let e = bad.parse::<LoopInterval>().unwrap_err();
            assert!(e.contains("at least 1 s"), "{bad}: {e}");
        }
        assert_eq!("1".parse::<LoopInterval>(), Ok(LoopInterval(1.0)));
        assert_eq!("x".parse::<LoopInterval>().unwrap_err(), "\"x\" is not a number of seconds");
        assert!("0".parse::<AtLeastOne>().is_err() && "-1".parse::<Seconds>().is_err());
        assert!("7x".parse::<FullEvery>().is_err() && "".parse::<Exclude>().is_err());
        let e = MirrorConfig::parse(
            "interval = 0.5\n[[tree]]\nremote = \"h::M/R.recent\"\nlocalroot = \"/a\"\n",
            Path::new("m"),
        );
        assert!(e.unwrap_err().contains("at least 1 s"));
    }

    /// `trace` and `timestamp` name a place inside the tree, relative to
    /// the localroot (not the config file), and become exclude patterns.
    #[test]
    fn trace_paths_stay_inside_the_tree() {
        for bad in ["", "/abs", "../up", "a/../b", "./x", "a/*/b", "a[1]", "a\\b", ".rrr", ".rrr/trace", "a\nb"] {
            assert!(bad.parse::<TreePath>().is_err(), "{bad:?}");
        }
        assert_eq!("project/trace/".parse::<TreePath>().unwrap().value, Path::new("project/trace"));
        assert!("_x".parse::<TraceName>().is_err() && "a b".parse::<TraceName>().is_err());
        let c = MirrorConfig::parse(
            "trace = \"project/trace\"\n[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"a\"\ntimestamp = \"t.txt\"\n",
            Path::new("/etc/rrr/m.toml"),
        )
        .unwrap();
        let cli = OptionLayer::default();
        let (t, o) = c.merged(&cli).next().unwrap();
        let cfg = resolve(t, &o, RunFlags::default()).unwrap();
        assert_eq!(cfg.trace.as_deref(), Some(Path::new("project/trace")), "relative to the localroot");
        let pats: Vec<&str> = cfg.excludes.iter().map(|p| p.as_str()).collect();
        assert_eq!(pats, ["/project/trace/", "/t.txt"]);
    }

    #[test]
    fn a_config_file_through_its_layers() {
        let text = r#"
interval = 10
max_delete = 5
max_recentfile_size = 1000
timeout = 60
password_file = "secret"
[[tree]]
remote = "rsync://h/CPAN/authors/RECENT.recent"
localroot = "a"
state = "../state/a.json"
[[tree]]
remote = "h::CPAN/modules/RECENT.recent"
localroot = "/srv/m"
max_delete = 7
skip_deletes = true
"#;
        let c = MirrorConfig::parse(text, Path::new("/etc/rrr/m.toml")).unwrap();
        let cli = layer(|l| l.timeout = Some(9));
        let got: Vec<Config> =
            c.merged(&cli).map(|(t, o)| resolve(t, &o, RunFlags::default()).unwrap()).collect::<Vec<_>>();
        assert_eq!(got[0].localroot, Path::new("/etc/rrr/a"), "relative to the config's directory");
        assert_eq!(got[0].state_file, Path::new("/etc/rrr/../state/a.json"));
        assert_eq!(got[0].rsync.password_file.as_deref(), Some(Path::new("/etc/rrr/secret")));
        assert_eq!(got[1].localroot, Path::new("/srv/m"));
        assert_eq!(got[1].state_file, Path::new("/srv/m/.rrr/state.json"));
        assert_eq!((got[0].max_delete, got[1].max_delete), (Some(5), Some(7)));
        assert!(!got[0].skip_deletes && got[1].skip_deletes);
        assert_eq!(got[1].max_recentfile_size, 1000);
        assert_eq!((got[0].rsync.timeout, got[1].rsync.timeout), (9, 9), "the command line beats the file");
        assert_eq!(got[0].interval, Duration::from_secs(10));
    }

    #[test]
    fn errors_name_the_file_and_the_tree() {
        let parse = |t: &str| MirrorConfig::parse(t, Path::new("m.toml")).unwrap_err();
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\nmax_dlete = 1\n");
        assert!(e.contains("m.toml") && e.contains("max_dlete"), "{e}");
        let e = parse("max_dlete = 1\n[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\n");
        assert!(e.contains("max_dlete"), "{e}");
        assert!(parse("interval = 3\n").contains("no [[tree]]"));
        assert!(parse("[[tree]]\nlocalroot = \"/a\"\n").contains("no remote"));
        // A missing key misspelt: the typo is named.
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocaroot = \"/a\"\n");
        assert_eq!(
            e,
            "config m.toml line 1 ([[tree]] 1): no localroot; unknown key `locaroot`: did you mean `localroot`?"
        );
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\ninterval = 3\nroot = \"/a\"\n");
        assert!(e.ends_with("([[tree]] 1): no localroot; unknown key `root`"), "{e}");
        assert_eq!((edit_distance("remote", "remot"), edit_distance("state", "localroot")), (1, 8));
        // A bad value: the file, its line and its layer.
        let e = parse("interval = 0\n[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\n");
        assert_eq!(
            e,
            "config m.toml line 1 (top-level defaults): `interval = 0`: 0 s: must be at least 1 s (a shorter loop hammers the upstream)"
        );
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\n\n[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/b\"\nexclude = [\"\"]\n");
        assert!(e.starts_with("config m.toml line 8 ([[tree]] 2, localroot /b): "), "{e}");
        assert!(e.contains("matches nothing"), "{e}");
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\ntimeout = \"5\"\n");
        assert!(
            e.starts_with("config m.toml line 4 ([[tree]] 1, localroot /a): `timeout = \"5\"`: invalid type"),
            "{e}"
        );
        let e = parse("[[tree]]\nremote = \"ftp://h/M/RECENT.recent\"\nlocalroot = \"/a\"\n");
        assert!(e.starts_with("config m.toml line 2 ([[tree]] 1, localroot /a): remote: "), "{e}");
    }

    /// `remote` as an array names several upstreams; each must name the
    /// same principal file, none twice; a string stays one upstream.
    #[test]
    fn several_upstreams_of_one_tree() {
        let parse = |remote: &str| {
            MirrorConfig::parse(&format!("[[tree]]\nremote = {remote}\nlocalroot = \"/a\"\n"), Path::new("m.toml"))
        };
        let c = parse(r#"["rsync://a/M/RECENT.recent", "b::M/x/RECENT.recent"]"#).unwrap();
        let cfg = resolve(&c.trees[0].tree, &c.trees[0].options, RunFlags::default()).unwrap();
        let srcs: Vec<&str> = cfg.upstreams.iter().map(|u| u.src.as_str()).collect();
        assert_eq!(srcs, ["rsync://a/M/RECENT.recent", "b::M/x/RECENT.recent"]);
        assert_eq!(cfg.remote.src, "rsync://a/M/RECENT.recent", "the first given until a pass chooses");
        let one = parse(r#""rsync://a/M/RECENT.recent""#).unwrap();
        let cfg = resolve(&one.trees[0].tree, &one.trees[0].options, RunFlags::default()).unwrap();
        assert_eq!(cfg.upstreams.len(), 1);
        let e = parse(r#"["rsync://a/M/RECENT.recent", "b::M/RECENT-1h.yaml"]"#).unwrap_err();
        assert!(
            e.starts_with("config m.toml line 2 ([[tree]] 1, localroot /a): remote: ") && e.contains("same principal"),
            "{e}"
        );
        let e = parse(r#"["rsync://a/M/RECENT.recent", "a::M/RECENT.recent"]"#).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
        assert!(parse("[]").unwrap_err().contains("at least one"));
        assert!(parse("[1]").unwrap_err().contains("must be a string"));
    }

    #[test]
    fn overlapping_trees_are_refused() {
        let fp = |root: &str, state: Option<&str>, origin: Option<&str>| Footprint {
            localroot: root.into(),
            state_dir: state.map(PathBuf::from),
            origins: origin.map(PathBuf::from).into_iter().collect(),
        };
        assert!(check_footprints(&[fp("/m/a", None, None), fp("/m/b", Some("/var/s"), None)]).is_ok());
        assert!(check_footprints(&[fp("/m/ab", None, None), fp("/m/a", None, None)]).is_ok(), "a prefix, not a parent");
        let e = check_footprints(&[fp("/m", None, None), fp("/m/inner", None, None)]).unwrap_err();
        assert!(e.contains("/m/inner") && e.contains("overlap"), "{e}");
        assert!(check_footprints(&[fp("/m/a", None, None), fp("/m/a", None, None)]).is_err(), "the same tree twice");
        assert!(check_footprints(&[fp("/m/a", None, None), fp("/m/b", Some("/m/a/s"), None)]).is_err());
        assert!(check_footprints(&[fp("/m/a/s", None, None), fp("/m/b", Some("/m/a"), None)]).is_err());
        assert!(check_footprints(&[fp("/srv/o", None, Some("/srv/o"))]).unwrap_err().contains("itself"));
        assert!(check_footprints(&[fp("/srv/o/sub", None, Some("/srv/o"))]).is_err());
        assert!(check_footprints(&[fp("/srv/m", None, Some("/srv/o"))]).is_ok());
        // Every local upstream counts, not only the first.
        let two = Footprint { origins: vec!["/srv/x".into(), "/srv/o".into()], ..fp("/srv/o/sub", None, None) };
        assert!(check_footprints(&[two]).unwrap_err().contains("/srv/o"));
    }

    #[test]
    fn canonical_folds_dots_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let want = std::fs::canonicalize(&real).unwrap();
        assert_eq!(canonical(&dir.path().join("link")), want);
        assert_eq!(canonical(&dir.path().join("real/x/../")), want);
        assert_eq!(canonical(&dir.path().join("link/new/deeper")), want.join("new/deeper"));
    }

    /// The config section lists exactly the keys the config reader takes.
    #[test]
    fn config_section_lists_every_key() {
        let err = MirrorConfig::parse(
            "no_such_key = 1\n[[tree]]\nremote = \"/o/RECENT.recent\"\nlocalroot = \"/m\"\n",
            std::path::Path::new("/etc/rrr/mirror.toml"),
        )
        .unwrap_err();
        let expected = err.split("expected one of").nth(1).unwrap_or_else(|| panic!("{err}"));
        let mut read: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        read.extend(["remote", "localroot", "state"]);
        read.sort_unstable();
        let mut documented: Vec<&str> =
            crate::output::manual::CONFIG_KEYS.iter().map(|(k, _)| k.split(' ').next().unwrap()).collect();
        documented.sort_unstable();
        assert_eq!(documented, read, "{err}");
        use clap::Args;
        let section = crate::output::manual::config_section(&CommandLine::augment_args(clap::Command::new("rmirror")));
        assert!(section.contains("\\fBfull_every = \"DURATION\"\\fR"), "{section}");
        assert!(
            section.contains("Seconds between pass starts with \\-\\-loop (at least 1). Default: 20.\n"),
            "{section}"
        );
    }
}
