//! `rrr news`: each path's newest event, newest first, reading only as many
//! recentfiles as the filter needs (an `--after` within the principal's
//! window reads the principal alone).

use crate::collection::Collection;
use crate::mirror::remote::{self, FetchDir, Remote, RsyncSettings};
use crate::mirror::trusted::{verify_fetched, Verifier};
use crate::ops::{Ctx, Exit};
use crate::query::{is_settled, News, NewsFilter};
use crate::recentfile::Recentfile;
use crate::trust::TrustKeys;
use anyhow::{Context, Result};
use recentfile::beacon::TrustError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the recentfiles are.
pub enum Source {
    /// A local principal (RECENT.recent, a recentfile, or the tree's root).
    Local(PathBuf),
    /// A remote principal (rmirror's SRC forms), fetched into a hidden temp
    /// dir under `<localroot>/.rrr/` when given, else the system temp dir.
    Remote {
        /// rmirror's SRC: `rsync://…`, `HOST::MODULE/…`, `HOST:PATH` or a path.
        src: String,
        /// The tree whose `.rrr/` holds the temp dir, if any.
        localroot: Option<PathBuf>,
        /// `--trust-key` files: each recentfile read is verified against
        /// the origin's signed beacon (`mirror::trusted`); none: not verified.
        trust_keys: Vec<PathBuf>,
    },
}

/// What `rrr news` was asked to list.
pub struct Options {
    /// Where the recentfiles are.
    pub source: Source,
    /// Which events count (`--after`, `--before`, `--max`, kinds, …).
    pub filter: NewsFilter,
    /// One JSON object per event instead of the lines for people.
    pub json: bool,
    /// The Perl rrr-news line: `localtime(epoch)` padded to 20, a space, the path.
    pub perl_format: bool,
}

/// Read the files of `coll` smallest first until the filter is settled.
pub(crate) fn collect(coll: &Collection, filter: &NewsFilter) -> Result<Vec<Recentfile>> {
    let mut files: Vec<Recentfile> = Vec::new();
    for iv in &coll.intervals {
        let Some(rf) = coll.read(iv)? else { continue };
        crate::store::warn_skipped(&coll.path_of(iv), &rf);
        files.push(rf);
        if is_settled(&files, filter) {
            break;
        }
    }
    Ok(files)
}

/// Print each path's newest event that passes the filter, newest first.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let files = match &opts.source {
        Source::Local(principal) => collect(&Collection::open(principal)?, &opts.filter)?,
        Source::Remote { src, localroot, trust_keys } => {
            let trust = match trust_keys.is_empty() {
                true => None,
                false => Some(TrustKeys::load(trust_keys)?),
            };
            let settings = RsyncSettings { timeout: 300, contimeout: 30, ..Default::default() };
            fetch_remote(src, localroot.as_deref(), &settings, &opts.filter, trust.as_ref())?
        }
    };
    print(&files, opts, &mut **ctx.out())?;
    crate::store::drop_in_background(files);
    Ok(Exit::Ok)
}

/// `rrr news --remote SRC`: fetch the remote principal, then the larger
/// files one by one only while the filter needs them, into a hidden temp
/// dir (under `<localroot>/.rrr/` when given, else the system temp dir),
/// removed afterwards. Remote meta is validated before names are built.
pub(crate) fn fetch_remote(
    src: &str,
    localroot: Option<&Path>,
    settings: &RsyncSettings,
    filter: &NewsFilter,
    trust: Option<&TrustKeys>,
) -> Result<Vec<Recentfile>> {
    let remote = Remote::parse(src)?;
    let mut fetcher = Fetcher { remote: &remote, settings };
    let base = match localroot {
        Some(l) => l.join(".rrr"),
        None => std::env::temp_dir(),
    };
    let dir = FetchDir::new(&base)?;
    dir.fetch(&remote, settings, &[&remote.name])?;
    let name = if remote.is_link() {
        let limit = remote::DEFAULT_MAX_RECENTFILE_SIZE;
        let t = dir.resolve_principal(&remote.name, limit)?.with_context(|| format!("{src} does not exist"))?;
        if !dir.landed(&t) {
            dir.fetch(&remote, settings, &[&t])?;
        }
        t
    } else {
        remote.name.clone()
    };
    let limit = remote::DEFAULT_MAX_RECENTFILE_SIZE;
    let principal = dir.read(&name, limit)?.with_context(|| format!("{} does not exist", remote.source(&name)))?;
    let layout = remote::check_meta(&name, &principal)?;
    if let Some(keys) = trust {
        verify_fetched(&mut fetcher, keys, &dir, &name, std::slice::from_ref(&name), limit)?;
    }
    let mut files = vec![principal];
    for iv in layout.intervals.iter().skip(1) {
        if is_settled(&files, filter) {
            break;
        }
        let n = layout.name_of(iv);
        dir.fetch(&remote, settings, &[&n])?;
        if let Some(keys) = trust {
            verify_fetched(&mut fetcher, keys, &dir, &name, std::slice::from_ref(&n), limit)?;
        }
        match dir.read(&n, limit)? {
            Some(rf) => {
                remote::check_meta(&n, &rf)?;
                files.push(rf);
            }
            None => break,
        }
    }
    Ok(files)
}

/// `news --remote`'s side of [`verify_fetched`]: plain fetches, and no
/// rollback floor (news keeps no state; a mirror's `State::trusted` is
/// rmirror's).
struct Fetcher<'a> {
    remote: &'a Remote,
    settings: &'a RsyncSettings,
}

impl Verifier for Fetcher<'_> {
    fn fetch_names(&mut self, dir: &FetchDir, names: &[&str]) -> Result<()> {
        Ok(dir.fetch(self.remote, self.settings, names)?)
    }

    fn source(&self, name: &str) -> String {
        self.remote.source(name)
    }

    fn accept_beacon(&mut self, _: &recentfile::beacon::Beacon, _: String) -> Result<(), TrustError> {
        Ok(())
    }
}

fn print(files: &[Recentfile], opts: &Options, out: &mut dyn Write) -> Result<()> {
    for e in News::of(files).finish(&opts.filter) {
        if opts.perl_format {
            out.write_all(&crate::perl_compat::perl_news_line(e.epoch.whole_seconds(), e.path.as_bytes()))?;
            out.write_all(b"\n")?;
        } else {
            crate::query::write_news_line(out, e, opts.json)?;
        }
    }
    Ok(())
}
