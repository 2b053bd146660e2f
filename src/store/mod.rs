//! Recentfiles on disk: reading with the file name in every error, the
//! locks ([`lock`]: the reference's lock directory, made safe to break,
//! and rrr's own flock run locks), atomic writes, and the principal
//! symlink.
//!
//! Every write goes to `<recentfile>.<pid>.new` (unique to the writer;
//! a Perl `rrr-server` ignores it as it does the reference's `.new`), is
//! fsynced, renamed, and the directory fsynced, so a crash at any instant
//! leaves a readable file.
//! Reading never locks: it relies on the atomic rename.

use crate::recentfile::read::Outline;
use crate::recentfile::{self, Format, ReadError, Recentfile};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub mod lock;
pub(crate) use lock::RunLock;
pub(crate) use lock::{remove_legacy_lock_dir, Lock};
pub use lock::{LockError, DEFAULT_LOCK_TIMEOUT, ORPHAN_LOCK_SECS};

/// A line for the operator (locks broken, long waits), through the log.
pub(crate) fn notice(msg: &str) {
    tracing::warn!("{msg}");
}

/// Read and validate one recentfile. `Ok(None)` when it does not exist.
///
/// A YAML file in Syck's layout is parsed as it streams in (the strict path
/// of [`recentfile::yaml`]); anything else is read whole and parsed by the
/// general readers, which also report every error with its line.
pub fn read_file(path: &Path) -> Result<Option<Recentfile>, ReadError> {
    let Some(file) = open_recentfile(path)? else { return Ok(None) };
    read_open(&file, path).map(Some)
}

/// [`read_file`], also giving the file as opened: a writer keeps it open
/// under the lock to tell later whether the name still refers to it
/// ([`same_file`]; the open file keeps its inode from being reused).
pub(crate) fn read_file_open(path: &Path) -> Result<Option<(Recentfile, fs::File)>, ReadError> {
    let Some(file) = open_recentfile(path)? else { return Ok(None) };
    read_open(&file, path).map(|rf| Some((rf, file)))
}

/// Whether `path` still names `file` (both `None`: still missing).
pub(crate) fn same_file(file: Option<&fs::File>, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.map(fs::File::metadata), fs::symlink_metadata(path)) {
        (None, Err(e)) => e.kind() == io::ErrorKind::NotFound,
        (Some(Ok(a)), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// What `overview` needs of one recentfile, without keeping its events
/// (see [`recentfile::yaml::outline`]); a file the fast scan does not take
/// is read in full. `Ok(None)` when it does not exist.
pub(crate) fn read_outline(path: &Path) -> Result<Option<Outline>, ReadError> {
    let Some(file) = open_recentfile(path)? else { return Ok(None) };
    if format_of(path).map_err(|m| ReadError::general(m).in_file(path))? == Format::Yaml {
        match recentfile::yaml::outline_file(&file) {
            Ok(Some(o)) => return Ok(Some(o)),
            Ok(None) => {}
            Err(e) => return Err(ReadError::io(e).in_file(path)),
        }
    }
    read_open(&file, path).map(|rf| Some(Outline::of(&rf)))
}

/// Open a recentfile for reading; `Ok(None)` when it does not exist. A
/// FIFO, device or directory, or a file over [`recentfile::read::MAX_FILE_BYTES`],
/// is an error before any byte is read (opened non-blocking, so a FIFO
/// cannot hang the reader).
fn open_recentfile(path: &Path) -> Result<Option<fs::File>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match fs::OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits()).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::io(e).in_file(path)),
    };
    let meta = file.metadata().map_err(|e| ReadError::io(e).in_file(path))?;
    if !meta.is_file() {
        return Err(ReadError::general("not a regular file".into()).in_file(path));
    }
    let limit = recentfile::read::MAX_FILE_BYTES;
    if meta.len() > limit {
        return Err(ReadError::general(format!("file is {} bytes (limit {limit})", meta.len())).in_file(path));
    }
    Ok(Some(file))
}

/// Read the recentfile open as `file` (`path` names it in errors), every
/// byte from this one open file.
fn read_open(file: &fs::File, path: &Path) -> Result<Recentfile, ReadError> {
    use std::io::Read;
    let format = format_of(path).map_err(|m| ReadError::general(m).in_file(path))?;
    if format == Format::Yaml {
        match recentfile::yaml::read_syck_file(file) {
            Ok(Some(rf)) => return Ok(rf),
            Ok(None) => {}
            Err(e) => return Err(ReadError::io(e).in_file(path)),
        }
    }
    // From the start: the strict path reads with pread and leaves the offset alone.
    let mut bytes = Vec::new();
    file.take(recentfile::read::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::io(e).in_file(path))?;
    recentfile::parse_bytes(&bytes, format).map_err(|e| e.in_file(path))
}

/// One recentfile of a cascade read for the union of its events, smallest
/// file first (`rrr verify`): see [`read_for_union`].
pub(crate) struct UnionRead {
    /// Its meta and events; with `beyond`, only the events that do not
    /// repeat the smaller file's byte for byte.
    pub rf: Recentfile,
    /// The other events repeat the smaller file's (they are in the union already).
    pub beyond: bool,
    /// The file as read, when every item of it is one the strict path
    /// takes: what the next larger file may be compared with.
    pub strict: Option<fs::File>,
}

/// Warn of each event the reader of `file` skipped.
pub(crate) fn warn_skipped(file: &Path, rf: &Recentfile) {
    for s in &rf.skipped {
        tracing::warn!(
            "{}: {}skipped event {} {}: {}",
            file.display(),
            s.line.map(|l| format!("line {l}: ")).unwrap_or_default(),
            s.epoch,
            crate::recentfile::shown_path(&s.path),
            s.reason
        );
    }
}

/// Free a million events off the caller's path: a CLI run exits right
/// after printing (freeing would add a tenth of a second), a long-lived
/// caller still gets the memory back.
pub(crate) fn drop_in_background<T: Send + 'static>(value: T) {
    // Without a thread, the failed spawn drops the closure and the value with it.
    let _ = std::thread::Builder::new().spawn(move || drop(value));
}

/// Read `path` for a union of the cascade: with `smaller` (the file read
/// before it, as [`UnionRead::strict`] gave it), its items that repeat
/// `smaller`'s byte for byte are not parsed again
/// ([`recentfile::yaml::read_syck_file_beyond`]); otherwise it is read
/// whole, as [`read_file`] reads it. `Ok(None)` when it does not exist.
pub(crate) fn read_for_union(path: &Path, smaller: Option<&fs::File>) -> Result<Option<UnionRead>, ReadError> {
    let Some(file) = open_recentfile(path)? else { return Ok(None) };
    if format_of(path).map_err(|m| ReadError::general(m).in_file(path))? == Format::Yaml {
        if let Some(smaller) = smaller {
            match recentfile::yaml::read_syck_file_beyond(&file, smaller) {
                Ok(Some(rf)) => return Ok(Some(UnionRead { rf, beyond: true, strict: Some(file) })),
                Ok(None) => {}
                Err(e) => return Err(ReadError::io(e).in_file(path)),
            }
        }
        match recentfile::yaml::read_syck_file(&file) {
            Ok(Some(rf)) => return Ok(Some(UnionRead { rf, beyond: false, strict: Some(file) })),
            Ok(None) => {}
            Err(e) => return Err(ReadError::io(e).in_file(path)),
        }
    }
    read_open(&file, path).map(|rf| Some(UnionRead { rf, beyond: false, strict: None }))
}

/// A recentfile read without its lock, ahead of need: aggregate reads the
/// cascade's largest file on another thread while it merges the smaller
/// ones, and takes that file's lock only in its turn (locks go smallest
/// first). Once the lock is held, [`EarlyRead::if_current`] says whether
/// the name still refers to what was read: writers replace a recentfile
/// only by a rename under the lock, and the open file keeps its inode
/// from being reused.
pub(crate) struct EarlyRead {
    /// The file as opened and its metadata then; `None`: it did not exist.
    read: Option<(fs::File, fs::Metadata, Recentfile)>,
}

/// Read `path` ahead of its lock (see [`EarlyRead`]).
pub(crate) fn read_early(path: &Path) -> Result<EarlyRead, ReadError> {
    let Some(file) = open_recentfile(path)? else { return Ok(EarlyRead { read: None }) };
    let meta = file.metadata().map_err(|e| ReadError::io(e).in_file(path))?;
    let rf = read_open(&file, path)?;
    Ok(EarlyRead { read: Some((file, meta, rf)) })
}

impl EarlyRead {
    /// What was read (`None`: the file did not exist).
    pub fn recentfile(&self) -> Option<&Recentfile> {
        self.read.as_ref().map(|(_, _, rf)| rf)
    }

    /// What [`read_file_open`] would give now, if `path` (checked under its
    /// lock) is still the file that was read, unchanged in size and mtime;
    /// `None`: read it again. The file comes as opened, for the writer's
    /// checks.
    pub fn if_current(self, path: &Path) -> Option<Option<(Recentfile, fs::File)>> {
        use std::os::unix::fs::MetadataExt;
        match (self.read, fs::metadata(path)) {
            (None, Err(e)) if e.kind() == io::ErrorKind::NotFound => Some(None),
            (Some((file, then, rf)), Ok(now)) => {
                let same = then.dev() == now.dev()
                    && then.ino() == now.ino()
                    && then.len() == now.len()
                    && then.modified().ok() == now.modified().ok();
                same.then_some(Some((rf, file)))
            }
            _ => None,
        }
    }
}

/// The serializer named by a file's suffix.
pub fn format_of(path: &Path) -> Result<Format, String> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let suffix = name.rfind('.').map(|i| &name[i..]).unwrap_or("");
    Format::from_suffix(suffix)
        .ok_or_else(|| format!("unsupported serializer suffix {suffix:?} (rrr reads .yaml and .json)"))
}

/// `<rfile>.<pid>.new`: the writer's temp file, unique to the process
/// (docs/decisions.md#format), so that two writers never write into one temp file,
/// even when a Perl writer broke a lock that rrr held. Its name keeps the
/// recentfile's as a prefix and ends in `.new`, so both rrr's ignore set
/// and the Perl `rrr-server` (which ignores names that start with a
/// recentfile's) skip it.
pub(crate) fn temp_path(rfile: &Path) -> PathBuf {
    let mut s = rfile.as_os_str().to_owned();
    s.push(format!(".{}.new", std::process::id()));
    PathBuf::from(s)
}

/// Why a guarded write did not rename its temp file into place.
#[derive(Debug)]
pub struct NotCommitted(pub String);

impl std::fmt::Display for NotCommitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotCommitted {}

/// Write `bytes` to `rfile` atomically: `<rfile>.<pid>.new`, fsync,
/// rename, fsync the directory. With `mtime` (the pinned clock), the file
/// gets that mtime. The caller holds the lock.
pub fn write_atomic(rfile: &Path, bytes: &[u8], mtime: Option<SystemTime>) -> Result<(), WriteError> {
    write_atomic_with(rfile, mtime, |w| w.write_all(bytes))
}

/// [`write_atomic`] with the content produced by `fill` (e.g. a serializer
/// writing in pieces, so that a big file is never in memory as a whole).
pub fn write_atomic_with(
    rfile: &Path,
    mtime: Option<SystemTime>,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteError> {
    write_atomic_guarded(rfile, mtime, fill, || Ok(()))
}

/// [`write_atomic_with`], asking `may_commit` just before the rename: an
/// `Err` (a [`NotCommitted`] as the source) leaves `rfile` as it was.
pub(crate) fn write_atomic_guarded(
    rfile: &Path,
    mtime: Option<SystemTime>,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    may_commit: impl FnOnce() -> Result<(), NotCommitted>,
) -> Result<(), WriteError> {
    remove_leftover_temps(rfile);
    let tmp = temp_path(rfile);
    let failed = |file: &Path, source| WriteError { file: file.to_path_buf(), committed: false, source };
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        fill(&mut f)?;
        if let Some(t) = mtime {
            f.set_modified(t)?;
        }
        f.sync_all()
    })();
    let renamed = written.map_err(|e| failed(&tmp, e)).and_then(|()| {
        may_commit().map_err(|why| failed(rfile, io::Error::other(why)))?;
        lock::failpoint("WRITE_RENAME");
        fs::rename(&tmp, rfile).map_err(|e| failed(rfile, e))
    });
    if let Err(e) = renamed {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(rfile).map_err(|source| WriteError { file: rfile.to_path_buf(), committed: true, source })
}

/// Remove `<rfile>.<pid>.new` files of writers that died before their
/// rename (their pid is no longer running), once per file and process:
/// a killed writer's temp file is never overwritten by the next one now.
fn remove_leftover_temps(rfile: &Path) {
    use std::os::unix::ffi::OsStrExt;
    static DONE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    {
        let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
        if done.iter().any(|p| p == rfile) {
            return;
        }
        done.push(rfile.to_path_buf());
    }
    let (Some(dir), Some(name)) = (rfile.parent(), rfile.file_name()) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let leftover = e.file_name();
        let pid = leftover
            .as_bytes()
            .strip_prefix(name.as_bytes())
            .and_then(|r| r.strip_prefix(b"."))
            .and_then(|r| r.strip_suffix(b".new"))
            .and_then(|r| std::str::from_utf8(r).ok())
            .and_then(|r| r.parse::<u32>().ok());
        if pid.is_some_and(|pid| !lock::process_alive(pid)) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// A failed [`write_atomic`]: the file that failed and the cause.
#[derive(Debug)]
pub struct WriteError {
    /// The temp file (creating, writing, syncing it) or the target (the
    /// rename, the directory sync).
    pub file: PathBuf,
    /// The rename happened: readers see the new content, but the directory
    /// sync failed, so a crash may still lose it.
    pub committed: bool,
    /// The cause (also the error's `source()`).
    pub source: io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.committed {
            write!(
                f,
                "{} was replaced, but syncing its directory failed, so a crash may still undo it",
                self.file.display()
            )
        } else {
            write!(f, "cannot write {}", self.file.display())
        }
    }
}

/// For callers that speak `io::Result`: the kind survives, the message
/// names the file.
impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        io::Error::new(e.source.kind(), format!("{e}: {}", e.source))
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// fsync the directory holding `file`, so that a rename into it is durable.
pub(crate) fn sync_dir(file: &Path) -> io::Result<()> {
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::File::open(dir)?.sync_all()
}

/// Make `<root>/<link_name>` a symlink to `target` (a bare file name),
/// atomically replacing a symlink that points elsewhere. A regular file at
/// that name is an error: rrr does not clobber what it did not create.
pub(crate) fn ensure_symlink(root: &Path, link_name: &str, target: &str) -> io::Result<()> {
    let link = root.join(link_name);
    match fs::symlink_metadata(&link) {
        Ok(m) if m.file_type().is_symlink() => {
            if fs::read_link(&link)?.as_os_str() == target {
                return Ok(());
            }
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a symlink; refusing to replace it", link.display()),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let tmp = root.join(format!("{link_name}.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    fs::rename(&tmp, &link)?;
    sync_dir(&link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn one_event_file(path: &Path, epoch: &str) {
        let rf = Recentfile::from_events(vec![recentfile::Event::new(
            crate::epoch::Epoch::parse(epoch).unwrap(),
            "a/b",
            recentfile::EventKind::New,
        )]);
        let producer =
            recentfile::Producer { program: "test".into(), time: crate::epoch::Epoch::parse("1.0").unwrap() };
        write_atomic(path, &recentfile::serialize(&rf, Format::Yaml, &producer), None).unwrap();
    }

    #[test]
    fn early_read_is_used_only_while_the_file_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let z = dir.path().join("RECENT-Z.yaml");
        one_event_file(&z, "100.5");
        let early = read_early(&z).unwrap();
        assert_eq!(early.if_current(&z).map(|r| r.map(|(rf, _)| rf)), Some(read_file(&z).unwrap()));
        // Replaced (by rename, as every writer does) after the early read.
        let early = read_early(&z).unwrap();
        one_event_file(&z, "200.5");
        assert_eq!(early.if_current(&z).map(|r| r.map(|(rf, _)| rf)), None);
        // Missing then and now; missing then, present now.
        let gone = dir.path().join("RECENT-1Y.yaml");
        assert_eq!(read_early(&gone).unwrap().if_current(&gone).map(|r| r.map(|(rf, _)| rf)), Some(None));
        let early = read_early(&gone).unwrap();
        one_event_file(&gone, "1.5");
        assert_eq!(early.if_current(&gone).map(|r| r.map(|(rf, _)| rf)), None);
    }

    #[test]
    fn only_regular_files_of_sane_size_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("RECENT-1h.yaml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = read_file(&fifo).unwrap_err().to_string();
        assert!(err.contains("RECENT-1h.yaml") && err.contains("not a regular file"), "{err}");
        let huge = dir.path().join("RECENT-6h.yaml");
        fs::File::create(&huge).unwrap().set_len(recentfile::read::MAX_FILE_BYTES + 1).unwrap();
        let err = read_file(&huge).unwrap_err().to_string();
        assert!(err.contains("RECENT-6h.yaml") && err.contains("limit"), "{err}");
    }

    #[test]
    fn temp_file_is_the_writers_own_and_ignored_by_every_reader() {
        let dir = tempfile::tempdir().unwrap();
        let rf = dir.path().join("RECENT-1h.yaml");
        let name = temp_path(&rf).file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(name, format!("RECENT-1h.yaml.{}.new", std::process::id()));
        assert!(crate::tree::IgnoreSet::new("RECENT", &[]).is_ignored(&name));
        // The Perl rrr-server ignores names that start with a recentfile's.
        assert!(name.starts_with("RECENT-1h.yaml"));
        // A dead writer's leftover goes with the next write; a live one's stays.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let (gone, kept) =
            (dir.path().join(format!("RECENT-1h.yaml.{dead}.new")), dir.path().join("RECENT-1h.yaml.1.new"));
        fs::write(&gone, "x").unwrap();
        fs::write(&kept, "x").unwrap();
        write_atomic(&rf, b"x", None).unwrap();
        assert!(!gone.exists() && kept.exists());
    }

    #[test]
    fn atomic_write_and_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let rf = dir.path().join("RECENT-1h.yaml");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        write_atomic(&rf, b"x", Some(t)).unwrap();
        assert_eq!(fs::read(&rf).unwrap(), b"x");
        assert_eq!(fs::metadata(&rf).unwrap().modified().unwrap(), t);
        assert!(!temp_path(&rf).exists());
        ensure_symlink(dir.path(), "RECENT.recent", "RECENT-1h.yaml").unwrap();
        ensure_symlink(dir.path(), "RECENT.recent", "RECENT-6h.yaml").unwrap();
        assert_eq!(fs::read_link(dir.path().join("RECENT.recent")).unwrap(), Path::new("RECENT-6h.yaml"));
        fs::remove_file(dir.path().join("RECENT.recent")).unwrap();
        fs::write(dir.path().join("RECENT.recent"), "data").unwrap();
        assert!(ensure_symlink(dir.path(), "RECENT.recent", "RECENT-1h.yaml").is_err());
    }
}
