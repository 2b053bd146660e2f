//! Paths below a root, whatever their length, without following a
//! symlink on the way down: [`reach`] (what the kernel takes: the path
//! itself or `/proc/self/fd/N/<name>`), [`lstat`] and [`read_dir`]. The
//! tree walk and the ignore set that use them are `crate::tree`, above
//! the collection.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The longest path the kernel takes in one piece (`PATH_MAX` without
/// its NUL).
const PATH_MAX: usize = 4095;

/// A path under the root that the kernel takes, whatever the length of
/// `root/rel`: itself when short enough, else `/proc/self/fd/N/<last
/// component>`, N being the parent directory opened one component at a
/// time (a relative path may be 4096 bytes, so the root joined to it can
/// pass `PATH_MAX`). Valid while this value lives.
pub struct Reach {
    path: std::path::PathBuf,
    _parent: Option<std::os::fd::OwnedFd>,
}

impl Reach {
    /// The path to give to the kernel.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `root/rel` as a path the kernel takes (see [`Reach`]). A symlink on the
/// way down is refused (`ELOOP`), as the walk never follows one.
pub fn reach(root: &Path, rel: impl AsRef<[u8]>) -> std::io::Result<Reach> {
    use nix::fcntl::{open, openat, OFlag};
    use nix::sys::stat::Mode;
    use std::os::fd::AsRawFd;
    let rel = rel.as_ref();
    let direct = if rel.is_empty() { root.to_path_buf() } else { root.join(std::ffi::OsStr::from_bytes(rel)) };
    if direct.as_os_str().len() <= PATH_MAX {
        return Ok(Reach { path: direct, _parent: None });
    }
    let (parent, last) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&rel[..0], rel),
    };
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut fd = open(root, flags, Mode::empty())?;
    for comp in parent.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
        fd = openat(&fd, std::ffi::OsStr::from_bytes(comp), flags | OFlag::O_NOFOLLOW, Mode::empty())?;
    }
    let path = Path::new("/proc/self/fd").join(fd.as_raw_fd().to_string()).join(std::ffi::OsStr::from_bytes(last));
    Ok(Reach { path, _parent: Some(fd) })
}

/// `lstat` of `root/rel`, whatever its length.
pub fn lstat(root: &Path, rel: impl AsRef<[u8]>) -> std::io::Result<std::fs::Metadata> {
    std::fs::symlink_metadata(reach(root, rel)?.path())
}

/// The listing of the directory `root/rel`, whatever its length (the
/// entries' metadata is read relative to it).
pub fn read_dir(root: &Path, rel: impl AsRef<[u8]>) -> std::io::Result<std::fs::ReadDir> {
    std::fs::read_dir(reach(root, rel)?.path())
}
