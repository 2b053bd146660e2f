//! The rmirror config file: several trees in one run, like the Perl HOWTO's
//! loop over `authors/` and `modules/`. TOML, one `[[tree]]` table per
//! tree; top-level keys are defaults for every tree.
//!
//! ```toml
//! interval = 20                      # seconds between rounds with --loop
//! max_files_per_connection = 20000
//!
//! [[tree]]
//! remote = "rsync://cpan-rsync.perl.org/CPAN/authors/RECENT.recent"
//! localroot = "/srv/CPAN/authors"
//! max_delete = 1000
//!
//! [[tree]]
//! remote = "rsync://cpan-rsync.perl.org/CPAN/modules/RECENT.recent"
//! localroot = "/srv/CPAN/modules"
//! skip_deletes = true
//! rsync_options = ["--bwlimit=5000"]
//! timeout = 600                      # seconds an rsync may move no data
//! exclude = ["*.tmp", "/incoming/"]    # rsync's --exclude syntax
//! on_pass = "/usr/local/bin/rrr-notify"  # see rrr::hook
//! ```
//!
//! Unknown keys are errors (a typo must not silently drop an option).

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A tree's options after defaults (`None`: rmirror's own default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeOptions {
    pub skip_deletes: Option<bool>,
    pub max_delete: Option<u64>,
    pub max_files_per_connection: Option<u64>,
    pub rsync_options: Option<Vec<String>>,
    pub password_file: Option<PathBuf>,
    pub max_recentfile_size: Option<u64>,
    pub exclude: Option<Vec<String>>,
    pub on_pass: Option<String>,
    pub timeout: Option<u64>,
}

/// One `[[tree]]`. The option fields repeat those of [`MirrorConfig`]
/// (the defaults) rather than sharing a `#[serde(flatten)]` struct:
/// serde's `deny_unknown_fields` does not work through `flatten`, and a
/// misspelt key must be an error.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Tree {
    pub remote: String,
    pub localroot: PathBuf,
    pub state: Option<PathBuf>,
    pub skip_deletes: Option<bool>,
    pub max_delete: Option<u64>,
    pub max_files_per_connection: Option<u64>,
    pub rsync_options: Option<Vec<String>>,
    pub password_file: Option<PathBuf>,
    pub max_recentfile_size: Option<u64>,
    pub exclude: Option<Vec<String>>,
    pub on_pass: Option<String>,
    pub timeout: Option<u64>,
}

/// The whole file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MirrorConfig {
    pub interval: Option<f64>,
    pub skip_deletes: Option<bool>,
    pub max_delete: Option<u64>,
    pub max_files_per_connection: Option<u64>,
    pub rsync_options: Option<Vec<String>>,
    pub password_file: Option<PathBuf>,
    pub max_recentfile_size: Option<u64>,
    pub exclude: Option<Vec<String>>,
    pub on_pass: Option<String>,
    pub timeout: Option<u64>,
    #[serde(rename = "tree", default)]
    pub trees: Vec<Tree>,
}

impl MirrorConfig {
    /// Parse the text of `file` (named in errors).
    pub fn parse(text: &str, file: &Path) -> Result<MirrorConfig, String> {
        let cfg: MirrorConfig =
            toml::from_str(text).map_err(|e| format!("cannot read config {}: {e}", file.display()))?;
        if cfg.trees.is_empty() {
            return Err(format!("config {}: no [[tree]] tables", file.display()));
        }
        for pat in cfg.exclude.iter().chain(cfg.trees.iter().filter_map(|t| t.exclude.as_ref())).flatten() {
            crate::pattern::Pattern::parse(pat).map_err(|e| format!("config {}: {e}", file.display()))?;
        }
        let mut roots = std::collections::HashSet::new();
        for t in &cfg.trees {
            if !roots.insert(t.localroot.clone()) {
                return Err(format!("config {}: localroot {} appears twice", file.display(), t.localroot.display()));
            }
        }
        Ok(cfg)
    }

    /// A tree's options with the file's defaults filled in.
    pub fn effective(&self, t: &Tree) -> TreeOptions {
        let (d, o) = (self, t);
        TreeOptions {
            skip_deletes: o.skip_deletes.or(d.skip_deletes),
            max_delete: o.max_delete.or(d.max_delete),
            max_files_per_connection: o.max_files_per_connection.or(d.max_files_per_connection),
            rsync_options: o.rsync_options.clone().or_else(|| d.rsync_options.clone()),
            password_file: o.password_file.clone().or_else(|| d.password_file.clone()),
            max_recentfile_size: o.max_recentfile_size.or(d.max_recentfile_size),
            exclude: o.exclude.clone().or_else(|| d.exclude.clone()),
            on_pass: o.on_pass.clone().or_else(|| d.on_pass.clone()),
            timeout: o.timeout.or(d.timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_trees_with_defaults() {
        let text = r#"
interval = 10
max_delete = 5
max_recentfile_size = 1000
timeout = 60
[[tree]]
remote = "rsync://h/CPAN/authors/RECENT.recent"
localroot = "/srv/a"
[[tree]]
remote = "h::CPAN/modules/RECENT.recent"
localroot = "/srv/m"
max_delete = 7
skip_deletes = true
"#;
        let c = MirrorConfig::parse(text, Path::new("m.toml")).unwrap();
        assert_eq!(c.interval, Some(10.0));
        assert_eq!(c.effective(&c.trees[0]).max_delete, Some(5));
        assert_eq!(c.effective(&c.trees[1]).max_delete, Some(7));
        assert_eq!(c.effective(&c.trees[1]).skip_deletes, Some(true));
        assert_eq!(c.effective(&c.trees[1]).max_recentfile_size, Some(1000));
        assert_eq!(c.effective(&c.trees[0]).timeout, Some(60));
    }

    #[test]
    fn errors_name_the_file() {
        let e =
            MirrorConfig::parse("[[tree]]\nremote = \"x\"\nlocalroot = \"/a\"\nmax_dlete = 1\n", Path::new("m.toml"));
        assert!(e.unwrap_err().contains("m.toml"));
        assert!(MirrorConfig::parse("interval = 3\n", Path::new("m.toml")).unwrap_err().contains("no [[tree]]"));
        let dup = "[[tree]]\nremote=\"a\"\nlocalroot=\"/x\"\n[[tree]]\nremote=\"b\"\nlocalroot=\"/x\"\n";
        assert!(MirrorConfig::parse(dup, Path::new("m.toml")).unwrap_err().contains("twice"));
    }
}
