//! rmirror's options: one model for every tree, whether it comes from the
//! command line or from a config file.
//!
//! A tree's options come from four layers, the first that sets an option
//! wins (docs/decisions.md#options): the command line, the tree's
//! `[[tree]]` table, the file's top-level keys, the built-in defaults.
//! Each layer is an [`OptionLayer`]; [`merge`] stacks them and
//! `resolve` turns the result into the one typed per-tree struct the
//! mirror runs on (`mirror::Config`: a parsed remote, compiled
//! patterns, durations, counts), validated once.
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

use crate::mirror::remote::{Remote, RsyncSettings};
use crate::mirror::Config;
use crate::pattern::Pattern;
use serde::Deserialize;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

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

/// The per-tree options one layer sets (`None`: not set here, the next
/// layer decides). The same struct is the command line's layer, a
/// `[[tree]]` table and the file's top-level defaults, so an option is
/// added in one place and works in every layer.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OptionLayer {
    /// Seconds between pass starts with `--loop` (at least 1).
    pub interval: Option<f64>,
    /// Do not apply delete events.
    pub skip_deletes: Option<bool>,
    /// Deletes a run may apply; the rest stays pending.
    pub max_delete: Option<u64>,
    /// Paths per rsync call (at least 1).
    pub max_files_per_connection: Option<u64>,
    /// Passed to every rsync call, in order; a layer's list replaces the next one's.
    pub rsync_options: Option<Vec<String>>,
    /// rsync's `--password-file` (daemon sources).
    pub password_file: Option<PathBuf>,
    /// Remote recentfiles larger than this many bytes are refused unread.
    pub max_recentfile_size: Option<u64>,
    /// rsync `--exclude` patterns; a layer's list replaces the next one's.
    pub exclude: Option<Vec<String>>,
    /// Run through `/bin/sh -c` after a pass that changed something or failed.
    pub on_pass: Option<String>,
    /// Seconds an `on_pass` hook may run.
    pub on_pass_timeout: Option<f64>,
    /// Seconds an rsync may move no data (0: never stopped).
    pub timeout: Option<u64>,
    /// A whole-tree pass when the last one is this old (`7d`, `1W`).
    pub full_every: Option<String>,
    /// Whole-tree passes compare files of the same size and mtime by
    /// content (rsync `--checksum`).
    pub checksum: Option<bool>,
}

/// Stack layers, highest precedence first: each option from the first
/// layer that sets it.
pub fn merge(layers: &[&OptionLayer]) -> OptionLayer {
    fn first<T: Clone>(layers: &[&OptionLayer], get: impl Fn(&OptionLayer) -> &Option<T>) -> Option<T> {
        layers.iter().find_map(|l| get(l).clone())
    }
    OptionLayer {
        interval: first(layers, |l| &l.interval),
        skip_deletes: first(layers, |l| &l.skip_deletes),
        max_delete: first(layers, |l| &l.max_delete),
        max_files_per_connection: first(layers, |l| &l.max_files_per_connection),
        rsync_options: first(layers, |l| &l.rsync_options),
        password_file: first(layers, |l| &l.password_file),
        max_recentfile_size: first(layers, |l| &l.max_recentfile_size),
        exclude: first(layers, |l| &l.exclude),
        on_pass: first(layers, |l| &l.on_pass),
        on_pass_timeout: first(layers, |l| &l.on_pass_timeout),
        timeout: first(layers, |l| &l.timeout),
        full_every: first(layers, |l| &l.full_every),
        checksum: first(layers, |l| &l.checksum),
    }
}

/// Which tree: the remote principal, the local tree, the state file.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    /// The remote principal (SRC), parsed by `resolve`.
    pub remote: String,
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
/// defaults filling what no layer set; an error names the option.
pub(crate) fn resolve(tree: &TreeSpec, o: &OptionLayer, run: RunFlags) -> Result<Config, String> {
    let remote = Remote::parse(&tree.remote).map_err(|e| format!("{e:#}"))?;
    let interval = o.interval.unwrap_or(DEFAULT_INTERVAL);
    if !(interval >= MIN_INTERVAL && interval.is_finite()) {
        return Err(format!(
            "interval {interval}: must be at least {MIN_INTERVAL} s (a shorter one hammers the upstream)"
        ));
    }
    let max_files = o.max_files_per_connection.unwrap_or(DEFAULT_MAX_FILES_PER_CONNECTION);
    if max_files == 0 {
        return Err("max_files_per_connection 0: must be at least 1".to_string());
    }
    let on_pass_timeout = o.on_pass_timeout.unwrap_or(crate::hook::DEFAULT_TIMEOUT.as_secs_f64());
    if !(on_pass_timeout >= 0.0 && on_pass_timeout.is_finite()) {
        return Err(format!("on_pass_timeout {on_pass_timeout}: must be a number of seconds"));
    }
    let full_every = match &o.full_every {
        Some(spec) => Some(Duration::from_secs(
            crate::interval::Interval::parse(spec).map_err(|e| format!("full_every: {e}"))?.seconds(),
        )),
        None => None,
    };
    let excludes = o.exclude.iter().flatten().map(|p| Pattern::parse(p)).collect::<Result<_, _>>()?;
    Ok(Config {
        remote,
        localroot: tree.localroot.clone(),
        state_file: tree.state_file(),
        skip_deletes: o.skip_deletes.unwrap_or(false),
        max_delete: o.max_delete,
        accept_deletes: run.accept_deletes,
        checksum: o.checksum.unwrap_or(false),
        max_files_per_connection: usize::try_from(max_files).unwrap_or(usize::MAX),
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
        max_recentfile_size: o.max_recentfile_size.unwrap_or(crate::mirror::remote::DEFAULT_MAX_RECENTFILE_SIZE),
        excludes,
        interval: Duration::from_secs_f64(interval),
        on_pass: o.on_pass.clone(),
        on_pass_timeout: Duration::from_secs_f64(on_pass_timeout),
        full_every,
    })
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

impl MirrorConfig {
    /// Parse the text of `file` (named in errors).
    pub fn parse(text: &str, file: &Path) -> Result<MirrorConfig, String> {
        let named = |e: String| format!("config {}: {e}", file.display());
        let mut top: toml::Table =
            toml::from_str(text).map_err(|e| format!("cannot read config {}: {e}", file.display()))?;
        let trees = match top.remove("tree") {
            Some(toml::Value::Array(a)) => a,
            Some(_) => return Err(named("`tree` must be [[tree]] tables".to_string())),
            None => Vec::new(),
        };
        if trees.is_empty() {
            return Err(named("no [[tree]] tables".to_string()));
        }
        let base = file.parent().unwrap_or(Path::new(""));
        let mut defaults: OptionLayer = toml::Value::Table(top).try_into().map_err(|e| named(format!("{e}")))?;
        defaults.password_file = defaults.password_file.map(|p| base.join(p));
        let mut tables = Vec::with_capacity(trees.len());
        for (ix, t) in trees.into_iter().enumerate() {
            let n = ix + 1;
            let toml::Value::Table(mut t) = t else {
                return Err(named(format!("tree {n} is not a table")));
            };
            let mut take = |key: &str| -> Result<Option<String>, String> {
                match t.remove(key) {
                    None => Ok(None),
                    Some(toml::Value::String(s)) => Ok(Some(s)),
                    Some(v) => Err(named(format!("tree {n}: {key} must be a string, not {}", v.type_str()))),
                }
            };
            let (remote, localroot, state) = (take("remote")?, take("localroot")?, take("state")?);
            let (Some(remote), Some(localroot)) = (remote.clone(), localroot.clone()) else {
                let missing = if remote.is_none() { "remote" } else { "localroot" };
                return Err(named(format!("tree {n}: no {missing}{}", typo_hint(&t))));
            };
            let mut options: OptionLayer =
                toml::Value::Table(t).try_into().map_err(|e| named(format!("tree {n} ({localroot}): {e}")))?;
            options.password_file = options.password_file.map(|p| base.join(p));
            let tree = TreeSpec { remote, localroot: base.join(localroot), state: state.map(|s| base.join(s)) };
            tables.push(TreeTable { tree, options });
        }
        let cfg = MirrorConfig { defaults, trees: tables };
        // Every tree's options must resolve: an error names it now, before
        // any tree runs.
        for t in &cfg.trees {
            let merged = merge(&[&t.options, &cfg.defaults]);
            resolve(&t.tree, &merged, RunFlags::default())
                .map_err(|e| named(format!("tree {}: {e}", t.tree.localroot.display())))?;
        }
        Ok(cfg)
    }

    /// Every tree with its options merged: `cli` over the tree's table over
    /// the file's defaults.
    pub fn merged<'a>(&'a self, cli: &'a OptionLayer) -> impl Iterator<Item = (&'a TreeSpec, OptionLayer)> + 'a {
        self.trees.iter().map(move |t| (&t.tree, merge(&[cli, &t.options, &self.defaults])))
    }
}

/// The keys of a `[[tree]]` table that are not options.
const TREE_KEYS: [&str; 3] = ["remote", "localroot", "state"];

/// For a table that lacks `remote` or `localroot`: the unknown key that
/// is probably it misspelt (`locaroot`), named, or nothing.
fn typo_hint(rest: &toml::Table) -> String {
    let unknown: Vec<&String> = rest
        .keys()
        .filter(|k| {
            let one: toml::Table = [((*k).clone(), rest[k.as_str()].clone())].into_iter().collect();
            toml::Value::Table(one).try_into::<OptionLayer>().is_err_and(|e| e.to_string().contains("unknown field"))
        })
        .collect();
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
    /// The remote's own tree when SRC is a local path.
    pub origin: Option<PathBuf>,
}

/// Refuse trees that would write into each other or into their own
/// origin: a localroot inside another's (the outer tree's whole-tree pass
/// deletes the inner one's files), or inside another tree's state
/// directory, or a state file inside another tree, or a localroot that is,
/// holds or lies in its local remote's tree.
pub fn check_footprints(trees: &[Footprint]) -> Result<(), String> {
    let overlap = |a: &Path, b: &Path| a.starts_with(b) || b.starts_with(a);
    for (i, t) in trees.iter().enumerate() {
        if let Some(o) = &t.origin {
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
        TreeSpec { remote: "rsync://h/M/RECENT.recent".into(), localroot: "/srv/m".into(), state: None }
    }

    /// Each option once through each layer: the command line beats the
    /// tree's table, the table the file's defaults, the defaults the
    /// built-in value.
    #[test]
    fn precedence_of_every_option() {
        type Set = fn(&mut OptionLayer, u64);
        type Get = fn(&Config) -> String;
        let table: &[(&str, Set, Get, &str)] = &[
            ("interval", |l, v| l.interval = Some(v as f64), |c| c.interval.as_secs().to_string(), "20"),
            ("skip_deletes", |l, v| l.skip_deletes = Some(v % 4 == 3), |c| c.skip_deletes.to_string(), "false"),
            ("checksum", |l, v| l.checksum = Some(v % 4 == 3), |c| c.checksum.to_string(), "false"),
            ("max_delete", |l, v| l.max_delete = Some(v), |c| format!("{:?}", c.max_delete), "None"),
            (
                "max_files_per_connection",
                |l, v| l.max_files_per_connection = Some(v),
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
                |l, v| l.exclude = Some(vec![format!("*.x{v}")]),
                |c| c.excludes.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(","),
                "",
            ),
            ("on_pass", |l, v| l.on_pass = Some(format!("hook{v}")), |c| format!("{:?}", c.on_pass), "None"),
            (
                "on_pass_timeout",
                |l, v| l.on_pass_timeout = Some(v as f64),
                |c| c.on_pass_timeout.as_secs().to_string(),
                "600",
            ),
            ("timeout", |l, v| l.timeout = Some(v), |c| c.rsync.timeout.to_string(), "300"),
            (
                "full_every",
                |l, v| l.full_every = Some(format!("{v}d")),
                |c| format!("{:?}", c.full_every.map(|d| d.as_secs() / 86_400)),
                "None",
            ),
        ];
        for (name, set, get, builtin) in table {
            // Layer values 3 (cli), 5 (table), 7 (defaults); a boolean is
            // `v % 4 == 3`: true, false, true, so each layer shows against
            // the next one, and the built-in false against the defaults.
            let (cli, tab, def) = (layer(|l| set(l, 3)), layer(|l| set(l, 5)), layer(|l| set(l, 7)));
            let none = OptionLayer::default();
            let got = |layers: &[&OptionLayer]| get(&resolve(&tree(), &merge(layers), RunFlags::default()).unwrap());
            let expect = |v| get(&resolve(&tree(), &layer(|l| set(l, v)), RunFlags::default()).unwrap());
            assert_eq!(got(&[&cli, &tab, &def]), expect(3), "{name}: the command line wins");
            assert_eq!(got(&[&none, &tab, &def]), expect(5), "{name}: the tree's table beats the defaults");
            assert_eq!(got(&[&none, &none, &def]), expect(7), "{name}: the file's defaults beat the built-in");
            assert_eq!(got(&[&none, &none, &none]), *builtin, "{name}: the built-in default");
            assert_ne!(expect(3), expect(5), "{name}: the table must tell the layers apart");
            assert_ne!(expect(5), expect(7), "{name}: the table must tell the layers apart");
        }
    }

    #[test]
    fn interval_below_one_second_is_refused() {
        for bad in [0.0, 0.5, -1.0, f64::NAN] {
            let e = resolve(&tree(), &layer(|l| l.interval = Some(bad)), RunFlags::default()).unwrap_err();
            assert!(e.contains("at least 1 s"), "{bad}: {e}");
        }
        assert!(resolve(&tree(), &layer(|l| l.interval = Some(1.0)), RunFlags::default()).is_ok());
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
        assert_eq!(e, "config m.toml: tree 1: no localroot; unknown key `locaroot`: did you mean `localroot`?");
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\ninterval = 3\nroot = \"/a\"\n");
        assert!(e.ends_with("tree 1: no localroot; unknown key `root`"), "{e}");
        assert_eq!((edit_distance("remote", "remot"), edit_distance("state", "localroot")), (1, 8));
        let e = parse("interval = 0\n[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\n");
        assert!(e.contains("m.toml") && e.contains("/a") && e.contains("at least 1 s"), "{e}");
        let e = parse("[[tree]]\nremote = \"h::M/RECENT.recent\"\nlocalroot = \"/a\"\nexclude = [\"\"]\n");
        assert!(e.contains("matches nothing"), "{e}");
    }

    #[test]
    fn overlapping_trees_are_refused() {
        let fp = |root: &str, state: Option<&str>, origin: Option<&str>| Footprint {
            localroot: root.into(),
            state_dir: state.map(PathBuf::from),
            origin: origin.map(PathBuf::from),
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
}
