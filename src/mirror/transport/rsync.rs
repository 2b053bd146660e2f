//! The rsync transport (see [`super`]): where the collection lives (the
//! SRC forms), fetching its recentfiles into a hidden temporary directory,
//! the `--files-from` transfer of a list of paths ([`RsyncTransport`]), and
//! reading rsync's itemized output ([`Itemized::line`]).
//!
//! SRC names the remote principal:
//!
//! | form                                           | transport     |
//! |------------------------------------------------|---------------|
//! | `rsync://HOST[:PORT]/MODULE/PATH/RECENT.recent` | rsync daemon  |
//! | `HOST::MODULE/PATH/RECENT.recent`              | rsync daemon  |
//! | `HOST:PATH/RECENT.recent`                      | rsync over ssh|
//! | `/local/path/RECENT.recent`, `dir/RECENT.recent` | local       |
//!
//! It is split at its last `/` into the remote root (any rsync source
//! prefix) and the name: `RECENT.recent` (the principal symlink) or a
//! recentfile name such as `RECENT-1h.yaml`.
//!
//! Fetches go into one [`tempfile::TempDir`] under `<localroot>/.rrr/`
//! (hidden, same filesystem, so installing is a rename), removed when it is
//! dropped, i.e. on every exit path but kill -9; the next run removes the
//! leftovers of a killed one (`clean_stale`). The principal symlink's
//! target must be a bare recentfile name (no `/`), and names are only ever
//! built from validated file names, never from remote meta
//! (`check_meta` refuses a `filenameroot` such as `../x`).

use super::{Call, FailedPath, Failure, Itemized, Outcome, PathsJob, Transport, TreeDeletes, TreeJob, LOST_FOUND};
use crate::collection::split_name;
use crate::interval::Interval;
use crate::recentfile::shown_path;
use crate::recentfile::Recentfile;
use crate::sys::rsync::{unescape, Output, Rsync, RsyncError, RsyncOutcome};
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::collections::HashSet;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How rsync reaches the remote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    Daemon,
    Ssh,
    Local,
}

/// A parsed SRC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Remote {
    /// The source as given (recorded in the state).
    pub src: String,
    /// The remote root without a trailing `/`: `rsync://h:1/mod/dir`, `h::mod`, `h:dir`, `/srv/x`.
    pub root: String,
    /// `RECENT.recent` or a recentfile name.
    pub name: String,
    pub transport: Reach,
}

impl Remote {
    /// Parse SRC (see the module docs).
    pub fn parse(src: &str) -> Result<Remote> {
        if src.is_empty() {
            bail!("empty --remote");
        }
        if src.contains('\n') || src.contains('\0') {
            bail!("--remote {src:?} contains a newline or NUL");
        }
        // `http://h/x` would be read as host "http" over ssh.
        if let Some((scheme, _)) = src.split_once("://") {
            let is_scheme = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
            if is_scheme && scheme != "rsync" {
                bail!(
                    "--remote {src:?} is not an rsync source: use rsync://HOST[:PORT]/MODULE/PATH/RECENT.recent, \
                     HOST::MODULE/PATH/RECENT.recent, HOST:PATH/RECENT.recent (ssh) or a local path"
                );
            }
        }
        let transport = if src.starts_with("rsync://") {
            Reach::Daemon
        } else {
            let head = src.split('/').next().unwrap_or("");
            if head.contains("::") {
                Reach::Daemon
            } else if head.contains(':') {
                Reach::Ssh
            } else {
                Reach::Local
            }
        };
        let (root, name) = match src.rfind('/') {
            Some(i) => (&src[..i], &src[i + 1..]),
            None if transport == Reach::Local => (".", src),
            None => bail!("--remote {src:?}: expected .../RECENT.recent or .../RECENT-1h.yaml"),
        };
        if transport == Reach::Daemon && src.starts_with("rsync://") && root.matches('/').count() < 3 {
            bail!("--remote {src:?}: expected rsync://HOST[:PORT]/MODULE/[PATH/]RECENT.recent");
        }
        check_name(name).with_context(|| format!("--remote {src:?}"))?;
        let root = if root.is_empty() { "/" } else { root };
        Ok(Remote { src: src.to_string(), root: root.to_string(), name: name.to_string(), transport })
    }

    /// The rsync source for a file of the remote root.
    pub fn source(&self, name: &str) -> String {
        if self.root.ends_with('/') {
            format!("{}{name}", self.root)
        } else {
            format!("{}/{name}", self.root)
        }
    }

    /// The rsync source for the whole tree: `root/`.
    pub fn tree_source(&self) -> String {
        format!("{}/", self.root.trim_end_matches('/'))
    }

    /// The source and the list prefix for `--files-from` transfers. An
    /// rsync daemon with `use chroot = no` (rsync 3.5.0) reports every
    /// `--files-from` entry as vanished when the source is a directory below
    /// the module (`rsync://h/CPAN/authors/`), the usual CPAN layout. So for
    /// a daemon path below the module, the source is the module root and each
    /// entry is `authors/./id/...`: the `/./` marker keeps `authors/` out of
    /// the destination path.
    pub fn files_from_base(&self) -> (String, String) {
        if self.transport == Reach::Daemon {
            let (module_start, rest) = match self.root.strip_prefix("rsync://") {
                Some(r) => match r.find('/') {
                    Some(i) => ("rsync://".len() + i + 1, &r[i + 1..]),
                    None => return (self.tree_source(), String::new()),
                },
                None => match self.root.find("::") {
                    Some(i) => (i + 2, &self.root[i + 2..]),
                    None => return (self.tree_source(), String::new()),
                },
            };
            if let Some(j) = rest.find('/') {
                let sub = rest[j + 1..].trim_matches('/');
                if !sub.is_empty() {
                    let module_root = format!("{}/", &self.root[..module_start + j]);
                    return (module_root, format!("{sub}/./"));
                }
            }
        }
        (self.tree_source(), String::new())
    }

    /// SRC in one spelling per place, to tell whether two remotes are the
    /// same (docs/decisions.md#ownership): `rsync://h/M/p`, `h::M/p` and `rsync://h:873/M/p`
    /// are all `rsync://h:873/M/p`; a user name and doubled slashes are
    /// dropped, the host is lower-cased; a local path is made absolute
    /// (its directory resolved when it exists).
    pub fn normalized(&self) -> String {
        fn collapse(p: &str) -> String {
            let parts: Vec<&str> = p.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
            parts.join("/")
        }
        fn host_port(hp: &str, default_port: &str) -> String {
            let hp = hp.rsplit_once('@').map_or(hp, |(_, h)| h);
            let (host, port) = if let Some(rest) = hp.strip_prefix('[') {
                match rest.split_once(']') {
                    Some((h, p)) => (format!("[{h}]"), p.strip_prefix(':').unwrap_or("")),
                    None => (hp.to_string(), ""),
                }
            } else {
                match hp.split_once(':') {
                    Some((h, p)) => (h.to_string(), p),
                    None => (hp.to_string(), ""),
                }
            };
            let port = if port.is_empty() { default_port } else { port };
            format!("{}:{port}", host.to_ascii_lowercase())
        }
        match self.transport {
            Reach::Daemon => {
                let (hp, rest) = match self.src.strip_prefix("rsync://") {
                    Some(r) => r.split_once('/').unwrap_or((r, "")),
                    None => self.src.split_once("::").unwrap_or((&self.src, "")),
                };
                format!("rsync://{}/{}", host_port(hp, "873"), collapse(rest))
            }
            Reach::Ssh => {
                let (hp, path) = self.src.split_once(':').unwrap_or((&self.src, ""));
                let host = hp.rsplit_once('@').map_or(hp, |(_, h)| h).to_ascii_lowercase();
                let lead = if path.starts_with('/') { "/" } else { "" };
                format!("{host}:{lead}{}", collapse(path))
            }
            Reach::Local => {
                let root = Path::new(&self.root);
                let root = fs::canonicalize(root).or_else(|_| std::path::absolute(root)).unwrap_or(root.into());
                format!("/{}/{}", collapse(&root.to_string_lossy()), self.name)
            }
        }
    }

    /// Whether SRC names the principal symlink rather than a recentfile.
    pub fn is_link(&self) -> bool {
        self.name.ends_with(".recent")
    }
}

/// A name that may be fetched and installed: `<root>.recent` or a
/// recentfile name, no `/`, no leading `.`, no control characters.
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') || name.chars().any(|c| c.is_control()) {
        bail!("{name:?} is not a recentfile name");
    }
    if let Some(root) = name.strip_suffix(".recent") {
        if root.is_empty() {
            bail!("{name:?} is not a recentfile name");
        }
        return Ok(());
    }
    let (_, iv, suffix) =
        split_name(name).with_context(|| format!("{name:?} is not a recentfile name like RECENT-1h.yaml"))?;
    Interval::parse(iv).map_err(anyhow::Error::msg).with_context(|| format!("{name:?}"))?;
    if suffix != ".yaml" && suffix != ".json" {
        bail!("{name:?}: unsupported serializer suffix {suffix:?}");
    }
    Ok(())
}

/// What a remote principal says about its collection, after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub filenameroot: String,
    pub suffix: String,
    /// The principal first, then the larger files.
    pub intervals: Vec<Interval>,
}

impl Layout {
    pub fn name_of(&self, iv: &Interval) -> String {
        format!("{}-{}{}", self.filenameroot, iv.spec(), self.suffix)
    }
}

/// Validate the meta of a fetched principal named `name` and derive the
/// collection's file names. Refused: a `filenameroot` or `interval` that
/// disagrees with the file name (`filenameroot: ../x`), a bad aggregator.
pub(crate) fn check_meta(name: &str, rf: &Recentfile) -> Result<Layout> {
    check_name(name)?;
    if let Some(p) = &rf.meta.protocol {
        if p.trim() != "1" {
            bail!(
                "remote {name}: protocol {:?} is not supported (rrr reads protocol 1); refusing to mirror it",
                crate::recentfile::shown_path(p)
            );
        }
    }
    let (root, iv, suffix) = split_name(name).with_context(|| format!("{name:?} is not a recentfile name"))?;
    if let Some(fr) = &rf.meta.filenameroot {
        if fr != root {
            bail!(
                "remote {name}: meta filenameroot {:?} does not match the file name (refusing to build names from it)",
                crate::recentfile::escape_path(fr)
            );
        }
    }
    let principal = Interval::parse(iv).map_err(anyhow::Error::msg).with_context(|| name.to_string())?;
    let aggregator: Vec<Interval> = rf
        .meta
        .aggregator
        .iter()
        .map(|s| Interval::parse(s))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("remote {name}: meta aggregator"))?;
    let intervals = crate::interval::cascade(&principal, &aggregator)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("remote {name}: meta aggregator"))?;
    Ok(Layout { filenameroot: root.to_string(), suffix: suffix.to_string(), intervals })
}

/// Settings every rsync call of a mirror shares.
#[derive(Clone, Debug, Default)]
pub(crate) struct RsyncSettings {
    pub password_file: Option<PathBuf>,
    /// `--rsync-option` values, passed through in order.
    pub extra: Vec<String>,
    /// End an rsync that moved no data for this many seconds (0: never):
    /// rrr's watchdog ([`Rsync::stall_limit`]), or rsync's `--timeout`
    /// where `/proc` cannot show rsync's activity.
    pub timeout: u64,
    /// `--contimeout` seconds (daemon sources only).
    pub contimeout: u64,
}

impl RsyncSettings {
    /// A new rsync command with the options every call uses.
    pub fn command(&self, transport: Reach) -> Rsync {
        let mut r = Rsync::new();
        if self.timeout > 0 {
            let limit = std::time::Duration::from_secs(self.timeout);
            if crate::sys::rsync::stall_limit_works() {
                // rsync's own --timeout costs 40 ms a connection (Rsync::stall_limit).
                r.stall_limit(limit);
            } else {
                r.arg(format!("--timeout={}", self.timeout));
            }
        }
        if transport == Reach::Daemon {
            r.arg(format!("--contimeout={}", self.contimeout));
            // rsync's handshake is many small writes; with Nagle's
            // algorithm each waits for the peer's delayed ACK (40 ms on
            // Linux), which made a daemon connection cost ~0.12 s on
            // loopback whatever it carried. The daemon side only follows
            // its own `socket options` (README.mirror).
            r.arg("--sockopts=TCP_NODELAY");
            if let Some(p) = &self.password_file {
                r.arg(format!("--password-file={}", p.display()));
            }
        }
        r.args(&self.extra);
        r
    }
}

/// The default of `--max-recentfile-size`: far above CPAN's Z (about
/// 100 MB for a million events), far below what would hurt a mirror host.
pub const DEFAULT_MAX_RECENTFILE_SIZE: u64 = 512 << 20;

/// A hidden temporary directory for fetched recentfiles.
pub(crate) struct FetchDir {
    dir: tempfile::TempDir,
    /// [`FetchDir::fetch_index_until`] ran: every recentfile the remote has is
    /// here, so a name missing here is missing at the remote.
    whole_index: std::sync::atomic::AtomicBool,
    /// The mirror's own copies of the recentfiles (its localroot): passed
    /// to rsync as `--copy-dest`, so a recentfile that changed at the
    /// remote is fetched as a delta against the copy installed by the last
    /// pass instead of whole (the principal can be megabytes, and over a
    /// slow link its full transfer dominated an incremental pass).
    basis: Option<PathBuf>,
    /// An rsync whose files are in place but which is still finishing
    /// ([`FetchDir::fetch_index_until`], [`FetchDir::fetch_until_landed`]);
    /// joined by `settle`, waited for by [`wait_finished`].
    finishing: Finishing,
    /// How that rsync ended, if it failed.
    failed: std::sync::Mutex<Option<String>>,
    /// Names rsync did not fetch because of `--max-size` ([`FetchWatch::max_size`]).
    oversized: Arc<Mutex<BTreeSet<String>>>,
}

/// What a fetch of recentfiles is watched with.
pub(crate) struct FetchWatch<'w> {
    /// `--max-recentfile-size`: passed to rsync as `--max-size`, so that a
    /// larger file is refused before its bytes arrive, not after (a hostile
    /// or broken upstream cannot fill the disk or the link with it).
    pub max_size: u64,
    /// Called with what rsync said (a line), or with its pid whenever it
    /// has been quiet for [`FetchWatch::quiet`]:
    /// a long fetch (a slow link, a large principal) reports progress and
    /// keeps the heartbeat, whether rsync prints lines (an operator's
    /// `--info=progress2`) or nothing.
    pub on_output: &'w mut dyn FnMut(Output<'_>),
    /// How long rsync may be silent before `on_output` hears of it.
    pub quiet: std::time::Duration,
}

impl FetchWatch<'_> {
    /// rsync's `--max-size`, and its line naming each file it skips for it.
    fn limit(&self, r: &mut Rsync) {
        r.arg(format!("--max-size={}", self.max_size));
        r.arg("--info=skip1");
    }
}

/// A fetch still finishing after its files landed, shared with the
/// [`super::Mirror`] so that it can wait for it ([`wait_finished`]).
pub(crate) type Finishing = Arc<Mutex<Option<std::thread::JoinHandle<Result<(), RsyncError>>>>>;

/// Wait until the fetch in `f` (if any) has ended, leaving its result to
/// [`FetchDir::settle`].
pub(crate) fn wait_finished(f: &Finishing) {
    while f.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|h| !h.is_finished()) {
        std::thread::sleep(LANDED_POLL);
    }
}

/// The remotes (normalised) whose daemon refused a connection for its
/// `max connections` while a call of ours was still finishing: for the
/// rest of the process, their fetches run to their end before anything
/// else starts, so a pass never competes with itself for the daemon's
/// slots. Public rsync servers run near their limits.
static NO_OVERLAP: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Whether a fetch from `remote` may return while its call finishes.
pub(crate) fn overlap_allowed(remote: &Remote) -> bool {
    !NO_OVERLAP.lock().unwrap_or_else(|e| e.into_inner()).contains(&remote.normalized())
}

/// Stop overlapping calls to `remote`; true when they were allowed until now.
pub(crate) fn forbid_overlap(remote: &Remote) -> bool {
    NO_OVERLAP.lock().unwrap_or_else(|e| e.into_inner()).insert(remote.normalized())
}

/// How often a running fetch is looked at for its files.
const LANDED_POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// The prefix of fetch directories under `<localroot>/.rrr/`.
const FETCH_PREFIX: &str = "fetch-";

impl FetchDir {
    pub fn new(state_dir: &Path) -> Result<FetchDir> {
        fs::create_dir_all(state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
        let dir = tempfile::Builder::new()
            .prefix(FETCH_PREFIX)
            .tempdir_in(state_dir)
            .with_context(|| format!("cannot create a temp dir in {}", state_dir.display()))?;
        Ok(FetchDir {
            dir,
            whole_index: std::sync::atomic::AtomicBool::new(false),
            basis: None,
            finishing: Finishing::default(),
            oversized: Arc::default(),
            failed: std::sync::Mutex::new(None),
        })
    }

    /// Use the files of `dir` (if it exists) as rsync basis files.
    pub fn with_basis(mut self, dir: &Path) -> FetchDir {
        self.basis = std::path::absolute(dir).ok().filter(|d| d.is_dir());
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Fetch `names` of the remote root in one rsync call (symlinks stay
    /// symlinks). A name missing at the remote is simply absent afterwards.
    pub fn fetch(&self, remote: &Remote, settings: &RsyncSettings, names: &[&str]) -> Result<(), RsyncError> {
        self.settle_quietly();
        let mut r = self.command(remote, settings);
        for n in names {
            r.arg(remote.source(n));
        }
        r.arg(format!("{}/", self.dir.path().display()));
        r.run().map(|_| ())
    }

    /// Fetch the whole index in one rsync call: the principal symlink and
    /// every recentfile of the collection SRC names (the remote root's
    /// top level, `<root>.recent`, `<root>-*.yaml`, `<root>-*.json`; no
    /// recursion). One connection instead of one for the link, one for
    /// its target and one for the larger files: the link's target is not
    /// known before the link is read. Returns false, fetching nothing,
    /// when the collection's name holds a character rsync's patterns
    /// treat specially.
    ///
    /// Returns as soon as `landed(self)` says what the caller needs is in
    /// place, or when rsync ended (with its error, if it failed). rsync
    /// renames a file into place only once it has all of it, so a landed
    /// file is one the origin has already read and sent. What is left of
    /// the call then is rsync's teardown (with a default rsyncd, 65 ms on
    /// loopback, 40 of them a delayed ACK), which overlaps the caller's
    /// next step; [`FetchDir::settle`] waits for it.
    pub fn fetch_index_until(
        &self,
        remote: &Remote,
        settings: &RsyncSettings,
        watch: &mut FetchWatch<'_>,
        mut landed: impl FnMut(&FetchDir) -> bool,
    ) -> Result<bool, RsyncError> {
        let Some(root) = index_root(&remote.name) else { return Ok(false) };
        self.settle_quietly();
        let mut r = self.command(remote, settings);
        watch.limit(&mut r);
        r.args(["--dirs", "--exclude=*/"]);
        // `-*.json` takes the beacon; `-*.json.sig` its signature, which
        // a tier republishes with it (mirror::freshness).
        let sig = format!("/{root}-*.json.sig");
        for p in [format!("/{root}.recent"), format!("/{root}-*.yaml"), format!("/{root}-*.json"), sig] {
            r.arg(format!("--include={p}"));
        }
        r.arg("--exclude=*");
        r.arg(remote.tree_source());
        r.arg(format!("{}/", self.dir.path().display()));
        self.run_until(r, overlap_allowed(remote), watch, &mut landed)?;
        self.whole_index.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }

    /// [`FetchDir::fetch`] that returns once every one of `names` is in
    /// place (or rsync ended), leaving the call's teardown to overlap the
    /// caller's next step, as [`FetchDir::fetch_index_until`] does. A name
    /// the remote lacks never lands: the call then runs to its end.
    pub fn fetch_until_landed(
        &self,
        remote: &Remote,
        settings: &RsyncSettings,
        names: &[&str],
        watch: &mut FetchWatch<'_>,
    ) -> Result<(), RsyncError> {
        self.settle_quietly();
        let mut r = self.command(remote, settings);
        watch.limit(&mut r);
        for n in names {
            r.arg(remote.source(n));
        }
        r.arg(format!("{}/", self.dir.path().display()));
        self.run_until(r, overlap_allowed(remote), watch, &mut |d: &FetchDir| names.iter().all(|n| d.landed(n)))
    }

    /// Run `r` on its own thread until it ends (its error, if it failed) or,
    /// with `overlap`, `landed(self)`; in the latter case it goes on
    /// finishing, for [`FetchDir::settle`].
    ///
    /// rsync's silences reach `watch` (a long fetch: heartbeat and progress
    /// lines), and the files `--max-size` kept out are noted for
    /// [`FetchDir::read_landed`]'s error.
    fn run_until(
        &self,
        r: Rsync,
        overlap: bool,
        watch: &mut FetchWatch<'_>,
        landed: &mut dyn FnMut(&FetchDir) -> bool,
    ) -> Result<(), RsyncError> {
        // What rsync said: a line (`Ok`), or its pid after a silence.
        let (quiet_tx, quiet_rx) = std::sync::mpsc::channel::<Result<String, u32>>();
        let oversized = self.oversized.clone();
        let quiet = watch.quiet;
        // rsync's death signal follows this thread, which waits for it; the
        // thread is the tree's (its stop, its log lines).
        let running = crate::sys::signals::spawn_in_tree(move || {
            r.run_watched(Some(quiet), &mut |out| match out {
                Output::Line(line) => {
                    if let Some(name) = line.strip_suffix(" is over max-size") {
                        let name = name.rsplit('/').next().unwrap_or(name).to_string();
                        oversized.lock().unwrap_or_else(|e| e.into_inner()).insert(name);
                    }
                    let _ = quiet_tx.send(Ok(line.to_string()));
                }
                Output::Quiet { pid } => {
                    let _ = quiet_tx.send(Err(pid));
                }
            })
            .map(|_| ())
        });
        loop {
            for said in quiet_rx.try_iter() {
                match &said {
                    Ok(line) => (watch.on_output)(Output::Line(line)),
                    Err(pid) => (watch.on_output)(Output::Quiet { pid: *pid }),
                }
            }
            if running.is_finished() {
                return running.join().unwrap_or_else(|_| Err(internal_error("an rsync thread panicked")));
            }
            if overlap && landed(self) {
                *self.finishing.lock().unwrap_or_else(|e| e.into_inner()) = Some(running);
                return Ok(());
            }
            std::thread::sleep(LANDED_POLL);
        }
    }

    /// Wait until every one of `names` is in place, or a finishing
    /// fetch ended (its error, if it failed; a name the remote
    /// lacks then simply stays missing). Without one, returns at once.
    pub fn wait_landed(&self, names: &[String]) -> Result<()> {
        loop {
            let done =
                self.finishing.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_none_or(|h| h.is_finished());
            if done {
                return self.settle();
            }
            if names.iter().all(|n| self.landed(n)) {
                return Ok(());
            }
            std::thread::sleep(LANDED_POLL);
        }
    }

    /// Wait for a finishing fetch (if any) to end; its failure is this
    /// call's error, and every later one's.
    pub fn settle(&self) -> Result<()> {
        let handle = self.finishing.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            if let Err(e) = h.join().unwrap_or_else(|_| Err(internal_error("an rsync thread panicked"))) {
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{e}"));
            }
        }
        match self.failed.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(e) => bail!("the rsync that fetched the recentfiles failed after they arrived: {e}"),
            None => Ok(()),
        }
    }

    /// Empty the directory, once its fetch has ended: what an upstream that
    /// failed left here is never read as another upstream's.
    pub fn clear(&self) -> Result<()> {
        self.settle_quietly();
        *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.whole_index.store(false, std::sync::atomic::Ordering::Relaxed);
        self.oversized.lock().unwrap_or_else(|e| e.into_inner()).clear();
        for e in fs::read_dir(self.path()).with_context(|| format!("cannot read {}", self.path().display()))? {
            let p = e?.path();
            let res = match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&p),
                _ => fs::remove_file(&p),
            };
            res.with_context(|| format!("cannot remove {}", p.display()))?;
        }
        Ok(())
    }

    /// [`FetchDir::settle`] where only the waiting matters (before another
    /// fetch into the same directory, and before it is removed).
    fn settle_quietly(&self) {
        let _ = self.settle();
    }

    /// The fetch of this directory that may still be finishing.
    pub fn finishing(&self) -> Finishing {
        self.finishing.clone()
    }

    /// Whether a file or link `name` is in place, without waiting for a
    /// finishing fetch.
    pub fn landed(&self, name: &str) -> bool {
        fs::symlink_metadata(self.file(name)).is_ok()
    }

    /// Whether [`FetchDir::fetch_index_until`] fetched everything here.
    pub fn has_whole_index(&self) -> bool {
        self.whole_index.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether `name` was fetched (a file or link of that name is here),
    /// once any finishing fetch has ended.
    pub fn has(&self, name: &str) -> bool {
        self.settle_quietly();
        self.landed(name)
    }

    /// The fetch of recentfiles compares by content (`--checksum`), not by
    /// rsync's quick check: a principal rewritten within the second it was
    /// last fetched in, at the same size, is not our copy (the `--copy-dest`
    /// basis), although its size and mtime say so. The files are small but
    /// Z: and a whole index is fetched only by a whole-tree pass.
    fn command(&self, remote: &Remote, settings: &RsyncSettings) -> Rsync {
        let mut r = settings.command(remote.transport);
        r.args(["-lt", "--checksum"]);
        if let Some(b) = &self.basis {
            r.arg(format!("--copy-dest={}", b.display()));
        }
        r
    }

    /// Read the fetched recentfile `name`; `Ok(None)` when the remote has
    /// none. Refused before a byte is read: anything but a regular file,
    /// and a file over `limit` bytes (so a hostile upstream cannot make the
    /// mirror's memory grow with it). Waits for a finishing fetch first.
    pub fn read(&self, name: &str, limit: u64) -> Result<Option<Recentfile>> {
        self.settle()?;
        self.read_landed(name, limit)
    }

    /// [`FetchDir::read`] of a file known to be in place (see
    /// [`FetchDir::fetch_index_until`]), without waiting for the rest.
    pub fn read_landed(&self, name: &str, limit: u64) -> Result<Option<Recentfile>> {
        let p = self.file(name);
        let len = match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_file() => m.len(),
            Ok(_) => bail!("remote {name} is not a regular file"),
            Err(_) if self.oversized.lock().unwrap_or_else(|e| e.into_inner()).contains(name) => bail!(
                "remote {name} is larger than the limit of {limit} bytes (--max-recentfile-size); rsync \
                 refused to fetch it (--max-size), nothing of it was read"
            ),
            Err(_) => return Ok(None),
        };
        if len > limit {
            bail!(
                "remote {name} is {len} bytes, more than the limit of {limit} (--max-recentfile-size); refusing to read it"
            );
        }
        crate::store::read_file(&p).with_context(|| format!("remote {name}"))
    }

    /// The principal the fetched `<root>.recent` names: the bare name a
    /// symlink points to; or, when the remote has a regular file there
    /// (rrrgo's library replaces the link by a copy of the principal when
    /// it opens the collection through it), that copy, moved to the
    /// principal's own name from its meta (`<root>-<interval><suffix>`),
    /// over whatever was fetched under that name: the copy is what its
    /// writer updates. `None` when the remote has neither. Origin writers
    /// keep refusing such a tree; a mirror only reads it, and installs a
    /// symlink for its own downstream.
    pub fn resolve_principal(&self, link: &str, limit: u64) -> Result<Option<String>> {
        let p = self.file(link);
        match fs::symlink_metadata(&p) {
            Err(_) => return Ok(None),
            Ok(m) if m.file_type().is_symlink() => return self.link_target(link),
            Ok(m) if !m.is_file() => bail!("remote {link} is neither a symlink nor a regular file"),
            Ok(_) => {}
        }
        // Nothing of this fetch may land after the copy is moved.
        self.settle()?;
        let root = link.strip_suffix(".recent").with_context(|| format!("{link:?} is not a principal link"))?;
        let mut head = [0u8; 512];
        let n = std::io::Read::read(&mut fs::File::open(&p)?, &mut head)?;
        let suffix = if head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') { ".json" } else { ".yaml" };
        let probe = format!("{link}{suffix}");
        fs::rename(&p, self.file(&probe))?;
        let rf = self
            .read_landed(&probe, limit)
            .with_context(|| format!("remote {link} (a regular file, read as the principal)"))?
            .with_context(|| format!("remote {link} vanished"))?;
        let interval = rf.meta.interval.as_deref().with_context(|| {
            format!("remote {link} is a regular file whose meta names no interval: cannot tell which principal it is")
        })?;
        if rf.meta.serializer_suffix.as_deref().is_some_and(|s| s != suffix) {
            bail!("remote {link}: its meta serializer_suffix does not match its content ({suffix})");
        }
        let name = format!("{root}-{interval}{suffix}");
        check_name(&name).with_context(|| format!("remote {link} (a regular file)"))?;
        fs::rename(self.file(&probe), self.file(&name))?;
        tracing::debug!("remote {link} is a regular file, not a link: read as {name}");
        Ok(Some(name))
    }

    /// Whether the fetched `<root>.recent` and the principal it names are
    /// in place (a regular file there is the principal itself).
    pub fn link_landed(&self, link: &str) -> bool {
        match fs::symlink_metadata(self.file(link)) {
            Ok(m) if m.file_type().is_symlink() => {
                matches!(self.link_target(link), Ok(Some(t)) if self.landed(&t))
            }
            Ok(m) => m.is_file(),
            Err(_) => false,
        }
    }

    /// Resolve the fetched `<root>.recent`: the bare name it points to.
    pub fn link_target(&self, link: &str) -> Result<Option<String>> {
        let p = self.file(link);
        let meta = match fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(_) => return Ok(None),
        };
        if !meta.file_type().is_symlink() {
            bail!("remote {link} is not a symlink");
        }
        let target = fs::read_link(&p)?;
        let target = target.to_str().with_context(|| format!("remote {link}: target is not UTF-8"))?.to_string();
        if target.contains('/') {
            bail!("remote {link}: symlink target {:?} contains '/' (must be a bare file name)", target);
        }
        check_name(&target).with_context(|| format!("remote {link}"))?;
        Ok(Some(target))
    }
}

impl Drop for FetchDir {
    /// A finishing rsync must not write into a removed directory.
    fn drop(&mut self) {
        self.settle_quietly();
    }
}

/// An [`RsyncError`] for trouble on our side of a call.
fn internal_error(what: &str) -> RsyncError {
    RsyncError {
        command: String::new(),
        code: None,
        signal: None,
        stderr: what.to_string(),
        class: crate::sys::rsync::RsyncFailure::Other,
        cause: None,
    }
}

/// The filenameroot of the recentfile or link `name`, if rsync's filter
/// patterns can name it literally (no `*?[]\`).
fn index_root(name: &str) -> Option<&str> {
    let root = match name.strip_suffix(".recent") {
        Some(r) => r,
        None => split_name(name)?.0,
    };
    let plain = !root.is_empty() && !root.contains(['*', '?', '[', ']', '\\']);
    plain.then_some(root)
}

/// Remove fetch directories a killed run left under `state_dir` (the
/// caller holds the mirror lock, so none is in use).
pub(crate) fn clean_stale(state_dir: &Path) {
    let Ok(rd) = fs::read_dir(state_dir) else { return };
    for de in rd.flatten() {
        let name = de.file_name();
        let name = name.to_str().unwrap_or("");
        if name == "tmp" {
            // rsync's --temp-dir: leftovers of a killed transfer.
            if let Ok(rd) = fs::read_dir(de.path()) {
                for f in rd.flatten() {
                    let _ = fs::remove_file(f.path());
                }
            }
        } else if name == "staging" {
            // mirror::staging: what a killed run staged is never installed.
            let _ = fs::remove_dir_all(de.path());
        } else if name.starts_with(FETCH_PREFIX) {
            let _ = fs::remove_dir_all(de.path());
        } else if name.starts_with(".rrr-files-from-") || name.ends_with(".new") {
            let _ = fs::remove_file(de.path());
        }
    }
}

/// rsync's `--out-format` for transfers: item codes, length, name.
pub(crate) const OUT_FORMAT: &str = "--out-format=%i %l %n";

/// rsync's `--temp-dir`: `<state_dir>/tmp` (same filesystem, so files are
/// still renamed into place), so that the temp files of a killed rsync are
/// not left all over the tree; emptied at start.
pub(crate) fn temp_dir(state_dir: &Path) -> Result<PathBuf> {
    let d = state_dir.join("tmp");
    fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    // Absolute: rsync resolves a relative --temp-dir against the
    // destination directory, not the cwd, so a relative --localroot
    // made every transfer fail ("The temp-dir does not exist").
    std::path::absolute(&d).with_context(|| format!("cannot resolve {}", d.display()))
}

/// The production [`Transport`]: rsync to a [`Remote`], with the settings
/// every call shares.
pub(crate) struct RsyncTransport {
    pub remote: Remote,
    pub settings: RsyncSettings,
    /// The last fetch, which may still be finishing while the next call
    /// starts ([`FetchDir::finishing`]).
    in_flight: std::cell::RefCell<Option<Finishing>>,
}

/// A prepared rsync: the command, and its `--files-from` list (removed
/// when the call is dropped).
struct Command {
    command: Rsync,
    _list: Option<tempfile::NamedTempFile>,
}

impl Call for Command {
    fn run(&self, seen: &mut Itemized) -> Result<Outcome, Failure> {
        self.command.run_with(&mut |line| seen.line(line)).map(Outcome::from)
    }

    fn run_watched(
        &self,
        seen: &mut Itemized,
        quiet: Option<std::time::Duration>,
        watch: &mut dyn FnMut(Output<'_>),
    ) -> Result<Outcome, Failure> {
        let run = self.command.run_watched(quiet, &mut |out| {
            if let Output::Line(line) = out {
                seen.line(line);
            }
            watch(out);
        });
        run.map(Outcome::from)
    }
}

impl RsyncTransport {
    /// rsync to `remote`; `no_overlap` is what earlier runs learnt
    /// ([`Transport::no_overlap_key`]): a daemon listed there gets its calls
    /// one after another from the start.
    pub fn new(
        remote: Remote,
        settings: RsyncSettings,
        no_overlap: &std::collections::BTreeMap<String, crate::epoch::Epoch>,
    ) -> Self {
        if remote.transport == Reach::Daemon && no_overlap.contains_key(&remote.normalized()) {
            // A lesson of an earlier run: this daemon's slots are few.
            forbid_overlap(&remote);
        }
        RsyncTransport { remote, settings, in_flight: Default::default() }
    }
}

impl Transport for RsyncTransport {
    fn serialize_after(&self, e: &Failure) -> bool {
        let news = e.is_connection_limit() && forbid_overlap(&self.remote);
        if news {
            if let Some(f) = &*self.in_flight.borrow() {
                wait_finished(f);
            }
        }
        news
    }

    fn no_overlap_key(&self) -> Option<String> {
        let daemon = self.remote.transport == Reach::Daemon;
        (daemon && !overlap_allowed(&self.remote)).then(|| self.remote.normalized())
    }

    /// One `--files-from` rsync of `job.paths` into the target.
    fn send_paths(&self, job: &PathsJob<'_>) -> Result<Box<dyn Call>> {
        let (source, prefix) = self.remote.files_from_base();
        let listed: Vec<Vec<u8>> = job.paths.iter().map(|p| [prefix.as_bytes(), p.as_bytes()].concat()).collect();
        let listed: Vec<&[u8]> = listed.iter().map(Vec::as_slice).collect();
        let list = crate::sys::rsync::write_files_from(job.state_dir, &listed)
            .with_context(|| format!("cannot write a --files-from list in {}", job.state_dir.display()))?;
        let mut r = self.settings.command(self.remote.transport);
        // An event is proof that its file changed: transfer it whatever its
        // size and mtime say (a rewrite within the same second at the same
        // size passes rsync's quick check). The delta algorithm still sends
        // only what differs from our copy (README.mirror, "Same size, same
        // second").
        r.args(["-rlt", "--safe-links", "--ignore-times", "--from0", OUT_FORMAT]);
        if job.replace_dirs {
            // A directory the origin replaced by a file (Mirror::place): every
            // listed path that is a directory here passed the same checks.
            r.arg("--force");
        }
        r.arg(format!("--temp-dir={}", temp_dir(job.state_dir)?.display()));
        r.arg(format!("--files-from={}", list.path().display()));
        r.arg(source);
        match job.staging {
            // Staged (mirror::staging): the tree's copy is the delta's
            // basis. `--copy-dest` rather than `--compare-dest` or
            // `--link-dest`: a file rsync found up to date is then copied
            // into the staging dir too (never with `--ignore-times`, but
            // whatever rsync decides, every listed file that arrives is
            // staged and checked; never a hard link into the tree).
            // Absolute: a relative one is taken from the destination.
            Some(staging) => {
                let tree = std::path::absolute(job.localroot)
                    .with_context(|| format!("cannot resolve {}", job.localroot.display()))?;
                let mut arg = b"--copy-dest=".to_vec();
                arg.extend(tree.as_os_str().as_bytes());
                r.arg(std::ffi::OsStr::from_bytes(&arg));
                r.arg(format!("{}/", staging.display()));
            }
            None => {
                r.arg(format!("{}/", job.localroot.display()));
            }
        }
        Ok(Box::new(Command { command: r, _list: Some(list) }))
    }

    /// The whole-tree rsync: `-rlt --safe-links`, the ignore set excluded,
    /// `--delete` within `--max-delete` unless `--skip-deletes`; what it
    /// did is read from `--stats` (a dry run lists it with [`OUT_FORMAT`]).
    ///
    /// No rule names rsync's temp files (`.NAME.XXXXXX`): that is also the
    /// name of an operator's `.env.sample`, which must be mirrored and
    /// never deleted (docs/decisions.md#ignore-set). A leftover of a
    /// transfer killed here is extraneous to the remote and goes with
    /// `--delete`; a temp file in flight on the remote may be copied and
    /// goes with the next whole-tree pass.
    ///
    /// Its temp files go beside their files, as rsync's own default: with
    /// `--temp-dir` every new file's inode was allocated near one directory
    /// and renamed out of it, which made a first mirror of many small files
    /// twice as slow on ext4 (10k files: 2.3-2.8 s against 0.9-1.7 s). rsync
    /// removes its temp file when stopped (and rrr's death stops it); one
    /// left by an rsync killed outright is deleted by the next whole-tree
    /// pass, which a killed one always owes. Only with `--skip-deletes`,
    /// which cannot delete them, does it keep [`temp_dir`] (not in a dry run).
    fn sync_tree(&self, job: &TreeJob<'_>) -> Result<Box<dyn Call>> {
        let mut r = self.settings.command(self.remote.transport);
        r.args(["-rlt", "--safe-links"]);
        if job.checksum {
            // `--checksum`: files of the same size and mtime are compared
            // by content (both sides read every such file).
            r.arg("--checksum");
        }
        if job.progress {
            // For the bar only: a line per file (the pass's progress reporter).
            r.arg("--info=progress2");
        }
        if job.dry_run {
            r.args(["--dry-run", OUT_FORMAT]);
        } else if job.itemize {
            // Each file received is named, to be checked (mirror::staging).
            r.arg(OUT_FORMAT);
        } else {
            // Counted from its summary: a line per file cost rsync a quarter
            // of a first mirror of small files (10k: 1.05 s against 0.80 s).
            r.arg("--stats");
        }
        match job.deletes {
            TreeDeletes::Delete { max } => {
                r.arg("--delete");
                if let Some(left) = max {
                    r.arg(format!("--max-delete={left}"));
                }
            }
            TreeDeletes::Keep if !job.dry_run => {
                r.arg(format!("--temp-dir={}", temp_dir(job.state_dir)?.display()));
            }
            TreeDeletes::Keep => {}
        }
        for x in bootstrap_excludes(job.filenameroot)
            .iter()
            .map(String::as_str)
            .chain(job.excludes.iter().map(|p| p.as_str()))
        {
            r.arg(format!("--exclude={x}"));
        }
        // rsync stops at a name it cannot build only after it listed the
        // directory, and then skips every delete of the pass: the directory
        // that holds a quarantined path is left out.
        for dir in quarantine_excludes(job.quarantined.iter().copied(), QUARANTINE_EXCLUDE_BYTES) {
            let mut arg = b"--exclude=/".to_vec();
            arg.extend(rsync_literal(dir));
            r.arg(std::ffi::OsStr::from_bytes(&arg));
        }
        r.arg(self.remote.tree_source());
        r.arg(format!("{}/", job.localroot.display()));
        Ok(Box::new(Command { command: r, _list: None }))
    }

    fn fetch(&self, dir: &FetchDir, names: &[&str], watch: &mut FetchWatch<'_>) -> Result<(), Failure> {
        *self.in_flight.borrow_mut() = Some(dir.finishing());
        dir.fetch_until_landed(&self.remote, &self.settings, names, watch)
    }

    fn fetch_index(
        &self,
        dir: &FetchDir,
        watch: &mut FetchWatch<'_>,
        landed: &mut dyn FnMut(&FetchDir) -> bool,
    ) -> Result<bool, Failure> {
        *self.in_flight.borrow_mut() = Some(dir.finishing());
        dir.fetch_index_until(&self.remote, &self.settings, watch, landed)
    }
}

impl From<RsyncOutcome> for Outcome {
    fn from(o: RsyncOutcome) -> Outcome {
        let paths = |v: Vec<crate::sys::rsync::FailedPath>| {
            v.into_iter().map(|f| FailedPath { path: f.path, message: f.message }).collect()
        };
        Outcome {
            vanished: o.vanished,
            failed: paths(o.failed),
            too_long: paths(o.too_long),
            deletion_skipped: o.deletion_skipped,
        }
    }
}

/// Reading rsync's [`OUT_FORMAT`] and `--stats` lines: one itemized line per
/// item it changed, so this counts what really arrived (not what was asked for).
impl Itemized {
    pub(crate) fn line(&mut self, line: &str) {
        if self.stats_line(line) {
            return;
        }
        if line.starts_with("IO error encountered -- skipping file deletion") {
            self.deletion_skipped = true;
            return;
        }
        if let Some(rest) = line.strip_prefix("*deleting") {
            self.deleted += 1;
            let name = rest.trim_start().split_once(' ').map_or("", |(_, n)| n);
            if !name.ends_with('/') {
                self.deleted_files += 1;
            }
            if self.listing {
                self.would.push(format!("delete {}", shown_path(unescape(name))));
            }
            return;
        }
        let mut it = line.splitn(3, ' ');
        let (Some(item), Some(len), Some(name)) = (it.next(), it.next(), it.next()) else { return };
        let b = item.as_bytes();
        if b.len() != 11 {
            return;
        }
        // `>f`: a file received; `cL` etc.: a symlink (or device) created.
        let received = b[0] == b'>' && b[1] == b'f';
        let created = b[0] == b'c' && b[1] != b'd';
        if received || created {
            self.files += 1;
            if received {
                self.bytes += len.parse::<u64>().unwrap_or(0);
                if let Some(r) = &mut self.received {
                    r.push(unescape(name));
                }
            }
            if self.listing {
                self.would.push(format!("new {}", shown_path(unescape(name))));
            }
        }
    }

    /// A line of rsync's `--stats` (a whole-tree pass that lists nothing:
    /// see [`Mirror::bootstrap_command`]), counted the way the itemized
    /// lines would be: regular files received and links, devices or
    /// specials created; their bytes; deletes. Returns whether it was one.
    fn stats_line(&mut self, line: &str) -> bool {
        fn number(s: &str) -> u64 {
            let digits: String = s.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
            digits.replace(',', "").parse().unwrap_or(0)
        }
        if let Some(rest) = line.strip_prefix("Number of regular files transferred:") {
            self.files += number(rest);
        } else if let Some(rest) = line.strip_prefix("Total transferred file size:") {
            self.bytes += number(rest);
        } else if let Some(rest) = line.strip_prefix("Number of deleted files:") {
            self.deleted += number(rest);
        } else if let Some(rest) = line.strip_prefix("Number of created files:") {
            // "424 (reg: 382, dir: 41, link: 1)": the regular ones are
            // among those transferred.
            let kinds = rest.split_once('(').map_or("", |(_, k)| k.trim_end_matches(')'));
            for kind in kinds.split(',') {
                if let Some((k, n)) = kind.split_once(':') {
                    if matches!(k.trim(), "link" | "dev" | "special") {
                        self.files += number(n);
                    }
                }
            }
        } else {
            return false;
        }
        true
    }
}

/// rsync filter rules for the bootstrap: the ignore set
/// (docs/decisions.md#ignore-set),
/// and a top-level `lost+found` (excluded files are never deleted).
pub(crate) fn bootstrap_excludes(filenameroot: &str) -> Vec<String> {
    let r = filenameroot;
    vec![
        "/.rrr/".to_string(),
        format!("/{LOST_FOUND}/"),
        format!("/{r}.recent"),
        format!("/{r}.recent.*"),
        format!("/{r}-*.yaml"),
        format!("/{r}-*.json"),
        // The beacon's signature (`RECENT-1h.yaml.beacon.json.sig`, the
        // beacon itself is a `.json`): rrr's own, installed by `mirror::trusted`.
        format!("/{r}-*.sig"),
        format!("/{r}-*.lock"),
        format!("/{r}-*.new"),
        ".~tmp~/".to_string(),
        ".FRMRecent-*".to_string(),
    ]
}

/// The most bytes the excludes of quarantined directories may add to a
/// whole-tree rsync's command line: well below the kernel's limit of all
/// arguments together (ARG_MAX, 2 MiB by default), where 500 directories
/// of 4 KB would fail to start rsync at all.
const QUARANTINE_EXCLUDE_BYTES: usize = 256 * 1024;

/// The directories a whole-tree pass leaves out for the quarantined
/// `paths` (docs/decisions.md#quarantine): each one's parent, none below
/// another; and when they take more than `budget` bytes, their ancestors
/// instead, one level up at a time (down to top-level directories), so
/// that many quarantined paths cannot keep rsync from starting.
fn quarantine_excludes<'p>(paths: impl Iterator<Item = &'p [u8]>, budget: usize) -> Vec<&'p [u8]> {
    let parents: Vec<&[u8]> = paths.filter_map(|p| p.iter().rposition(|&b| b == b'/').map(|i| &p[..i])).collect();
    let depth_of = |d: &[u8]| d.iter().filter(|&&b| b == b'/').count() + 1;
    let mut depth = parents.iter().map(|d| depth_of(d)).max().unwrap_or(0);
    loop {
        // Each directory cut to `depth` components.
        let mut cut: Vec<&[u8]> = parents
            .iter()
            .map(|d| match d.iter().enumerate().filter(|(_, &b)| b == b'/').nth(depth.saturating_sub(1)) {
                Some((i, _)) => &d[..i],
                None => *d,
            })
            .collect();
        cut.sort_unstable_by_key(|d| (d.len(), *d));
        cut.dedup();
        let mut kept: HashSet<&[u8]> = HashSet::new();
        let mut out = Vec::new();
        for d in cut {
            let under_kept = d.iter().enumerate().any(|(i, &b)| b == b'/' && kept.contains(&d[..i]));
            if !under_kept {
                kept.insert(d);
                out.push(d);
            }
        }
        if depth <= 1 || out.iter().map(|d| d.len() + 12).sum::<usize>() <= budget {
            out.sort_unstable();
            return out;
        }
        depth = out.iter().map(|d| depth_of(d)).max().unwrap_or(1).min(depth) - 1;
    }
}

/// `path` as an rsync filter pattern that matches only itself: a pattern
/// with a wildcard (`*?[`) takes `\\` as an escape, one without takes
/// every byte literally.
fn rsync_literal(path: &[u8]) -> Vec<u8> {
    if !path.iter().any(|b| b"*?[".contains(b)) {
        return path.to_vec();
    }
    let mut out = Vec::with_capacity(path.len() + 8);
    for &b in path {
        if b"*?[\\".contains(&b) {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn files_from_base_splits_below_the_module() {
        let r = Remote::parse("rsync://h:873/CPAN/authors/RECENT.recent").unwrap();
        assert_eq!(r.files_from_base(), ("rsync://h:873/CPAN/".to_string(), "authors/./".to_string()));
        let r = Remote::parse("h::CPAN/a/b/RECENT.recent").unwrap();
        assert_eq!(r.files_from_base(), ("h::CPAN/".to_string(), "a/b/./".to_string()));
        let r = Remote::parse("rsync://h/CPAN/RECENT.recent").unwrap();
        assert_eq!(r.files_from_base(), ("rsync://h/CPAN/".to_string(), String::new()));
        let r = Remote::parse("/srv/x/RECENT.recent").unwrap();
        assert_eq!(r.files_from_base(), ("/srv/x/".to_string(), String::new()));
    }

    use super::*;

    #[test]
    fn src_forms() {
        let r = Remote::parse("rsync://h:8873/CPAN/sub/RECENT.recent").unwrap();
        assert_eq!(
            (r.root.as_str(), r.name.as_str(), r.transport),
            ("rsync://h:8873/CPAN/sub", "RECENT.recent", Reach::Daemon)
        );
        assert_eq!(r.source("RECENT-1h.yaml"), "rsync://h:8873/CPAN/sub/RECENT-1h.yaml");
        assert_eq!(r.tree_source(), "rsync://h:8873/CPAN/sub/");
        let r = Remote::parse("h::CPAN/RECENT-1h.yaml").unwrap();
        assert_eq!((r.root.as_str(), r.name.as_str(), r.transport), ("h::CPAN", "RECENT-1h.yaml", Reach::Daemon));
        let r = Remote::parse("h:/srv/cpan/RECENT.recent").unwrap();
        assert_eq!((r.root.as_str(), r.transport), ("h:/srv/cpan", Reach::Ssh));
        let r = Remote::parse("/srv/cpan/RECENT.recent").unwrap();
        assert_eq!((r.root.as_str(), r.transport), ("/srv/cpan", Reach::Local));
        let r = Remote::parse("RECENT.recent").unwrap();
        assert_eq!(r.root, ".");
        for bad in
            ["", "rsync://h/RECENT.recent", "h::m/../RECENT", "/srv/x/notes.txt", "/srv/.recent", "/x/RECENT-1h.txt"]
        {
            assert!(Remote::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn non_rsync_urls_are_refused() {
        for bad in ["http://example.org/CPAN/RECENT.recent", "ftp://h/RECENT.recent", "ssh://h/x/RECENT.recent"] {
            let e = Remote::parse(bad).unwrap_err().to_string();
            assert!(e.contains("is not an rsync source"), "{bad}: {e}");
        }
        assert!(Remote::parse("rsync://h/CPAN/RECENT.recent").is_ok());
    }

    #[test]
    fn one_spelling_per_remote() {
        let n = |s: &str| Remote::parse(s).unwrap().normalized();
        let same = [
            "rsync://h/CPAN/authors/RECENT.recent",
            "h::CPAN/authors/RECENT.recent",
            "rsync://h:873/CPAN/authors/RECENT.recent",
            "rsync://user@H/CPAN//authors/RECENT.recent",
            "u@h::CPAN/./authors/RECENT.recent",
        ];
        for s in same {
            assert_eq!(n(s), "rsync://h:873/CPAN/authors/RECENT.recent", "{s}");
        }
        assert_ne!(n("rsync://h:8873/CPAN/authors/RECENT.recent"), n(same[0]));
        assert_ne!(n("rsync://h/CPAN/modules/RECENT.recent"), n(same[0]));
        assert_eq!(n("u@h:/srv/x/RECENT.recent"), "h:/srv/x/RECENT.recent");
        assert_eq!(n("rsync://[::1]:99/m/RECENT.recent"), "rsync://[::1]:99/m/RECENT.recent");
        let dir = tempfile::tempdir().unwrap();
        let a = format!("{}/RECENT.recent", dir.path().display());
        let b = format!("{}/./RECENT.recent", dir.path().display());
        assert_eq!(n(&a), n(&b));
    }

    #[test]
    fn unknown_protocol_is_refused() {
        let mut rf = Recentfile::default();
        rf.meta.aggregator = vec!["1h".into(), "Z".into()];
        rf.meta.protocol = Some("2".into());
        let e = check_meta("RECENT-1h.yaml", &rf).unwrap_err().to_string();
        assert!(e.contains("protocol \"2\" is not supported"), "{e}");
        rf.meta.protocol = Some("1".into());
        assert!(check_meta("RECENT-1h.yaml", &rf).is_ok());
        rf.meta.protocol = None;
        assert!(check_meta("RECENT-1h.yaml", &rf).is_ok(), "protocol 0 files have no meta");
    }

    #[test]
    fn fetched_files_over_the_limit_are_not_read() {
        let state = tempfile::tempdir().unwrap();
        let dir = FetchDir::new(state.path()).unwrap();
        fs::write(dir.file("RECENT-1h.json"), r#"{"meta":{"protocol":1},"recent":[]}"#).unwrap();
        assert!(dir.read("RECENT-1h.json", 1000).unwrap().is_some());
        let e = dir.read("RECENT-1h.json", 10).unwrap_err().to_string();
        assert!(e.contains("more than the limit of 10"), "{e}");
        assert!(dir.read("RECENT-6h.json", 10).unwrap().is_none());
    }

    #[test]
    fn meta_is_checked_against_the_name() {
        let mut rf = Recentfile::default();
        rf.meta.aggregator = vec!["1h".into(), "6h".into(), "Z".into()];
        rf.meta.filenameroot = Some("RECENT".into());
        let l = check_meta("RECENT-1h.yaml", &rf).unwrap();
        assert_eq!(l.intervals.len(), 3);
        assert_eq!(l.name_of(&l.intervals[2]), "RECENT-Z.yaml");
        rf.meta.filenameroot = Some("../x".into());
        let err = check_meta("RECENT-1h.yaml", &rf).unwrap_err();
        assert!(format!("{err:#}").contains("filenameroot"), "{err:#}");
        rf.meta.filenameroot = None;
        rf.meta.aggregator = vec!["../1h".into()];
        assert!(check_meta("RECENT-1h.yaml", &rf).is_err());
    }

    #[test]
    fn quarantined_directories_fit_a_command_line() {
        let paths: Vec<&[u8]> = vec![b"a/b/c/x", b"a/b/c/y", b"a/b/z", b"d/e/f", b"top"];
        // Each parent once, none below another (a/b/c is under a/b), a
        // top-level path none.
        assert_eq!(quarantine_excludes(paths.iter().copied(), 1000), [&b"a/b"[..], b"d/e"]);
        // Over the budget: one level up at a time.
        assert_eq!(quarantine_excludes(paths.iter().copied(), 8), [&b"a"[..], b"d"]);
        assert_eq!(quarantine_excludes(paths.iter().copied(), 0), [&b"a"[..], b"d"], "top-level at the least");
        // 600 directories of 4 KB: within the budget.
        let long: Vec<Vec<u8>> =
            (0..600).map(|i| format!("q/b{i:03}/{}/leaf", "d".repeat(4000)).into_bytes()).collect();
        let out = quarantine_excludes(long.iter().map(|p| p.as_slice()), QUARANTINE_EXCLUDE_BYTES);
        assert!(out.iter().map(|d| d.len() + 12).sum::<usize>() <= QUARANTINE_EXCLUDE_BYTES, "{}", out.len());
        assert_eq!(out.len(), 600, "one level up is enough: q/bNNN");
    }

    #[test]
    fn itemized_lines_count_what_arrived() {
        let mut s = Itemized::listing(true);
        for l in [
            "*deleting   0 old/x",
            "*deleting   0 old/",
            ".d..t...... 4096 ./",
            ">f+++++++++ 2 f",
            ">f..t...... 30 changed",
            "cL+++++++++ 1 l",
            "cd+++++++++ 4096 d/",
            ">f+++++++++ 3 d/with space",
            "Number of files: 3",
            "",
        ] {
            s.line(l);
        }
        assert_eq!((s.files, s.bytes, s.deleted), (4, 35, 2));
        assert_eq!(s.would, ["delete old/x", "delete old/", "new f", "new changed", "new l", "new d/with space"]);
    }

    #[test]
    fn received_files_are_named_when_asked() {
        let lines = [">f+++++++++ 2 a/f", "cL+++++++++ 1 l", ">f..t...... 3 caf\\#303\\#251", "cd+++++++++ 4096 d/"];
        let mut s = Itemized::default().receiving(true);
        for l in lines {
            s.line(l);
        }
        assert_eq!(s.received.unwrap(), [b"a/f".to_vec(), "café".as_bytes().to_vec()]);
        let mut s = Itemized::default();
        for l in lines {
            s.line(l);
        }
        assert_eq!((s.files, s.received), (3, None));
    }

    #[test]
    fn stats_count_like_itemized_lines() {
        let mut s = Itemized::listing(false);
        for l in [
            "",
            "Number of files: 10,425 (reg: 10,382, dir: 42, link: 1)",
            "Number of created files: 1,424 (reg: 1,382, dir: 39, link: 2, dev: 1)",
            "Number of deleted files: 3 (reg: 2, dir: 1)",
            "Number of regular files transferred: 1,383",
            "Total file size: 5,187,727 bytes",
            "Total transferred file size: 1,187,724 bytes",
            "Literal data: 187,724 bytes",
            "sent 215,965 bytes  received 7,469 bytes  148,956.00 bytes/sec",
        ] {
            s.line(l);
        }
        assert_eq!((s.files, s.bytes, s.deleted), (1383 + 3, 1_187_724, 3));
    }
}
