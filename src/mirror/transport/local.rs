//! The test transport: in-process copies from a local directory standing
//! for the origin's tree, no rsync and no daemon. It answers as a transport
//! must ([`super::Transport`]): a path the origin lacks is
//! [`Outcome::vanished`], a path listed in [`LocalDirs::unsendable`] is
//! [`Outcome::failed`] with its message, and [`LocalDirs::down`] makes
//! every call fail as a refused connection would. Paths are reported
//! relative to the collection's root.

use super::{Call, FailedPath, Failure, FetchDir, FetchWatch, Itemized, Outcome, PathsJob, Transport, TreeJob};
use crate::recentfile::RelPath;
use crate::sys::rsync::RsyncFailure;
use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The origin's tree at `origin`, and what it does wrong.
#[derive(Clone, Default)]
pub(crate) struct LocalDirs {
    pub origin: PathBuf,
    /// Paths the origin cannot send, with the message it gives.
    pub unsendable: HashMap<RelPath, String>,
    /// Every call fails as a refused connection.
    pub down: bool,
    /// The paths of every call, in order (what the pass asked for).
    pub calls: Arc<Mutex<Vec<Vec<RelPath>>>>,
}

struct Copy {
    dirs: LocalDirs,
    paths: Vec<RelPath>,
    localroot: PathBuf,
}

impl Transport for LocalDirs {
    fn send_paths(&self, job: &PathsJob<'_>) -> anyhow::Result<Box<dyn Call>> {
        let paths: Vec<RelPath> = job.paths.iter().map(|p| (*p).clone()).collect();
        self.calls.lock().unwrap().push(paths.clone());
        Ok(Box::new(Copy { dirs: self.clone(), paths, localroot: job.staging.unwrap_or(job.localroot).to_path_buf() }))
    }

    /// Not needed yet: the whole-tree pass is tested end to end (its
    /// recentfiles come through `rsync::FetchDir`, which no test transport
    /// stands in for).
    fn sync_tree(&self, _job: &TreeJob<'_>) -> anyhow::Result<Box<dyn Call>> {
        anyhow::bail!("the local test transport has no whole-tree pass")
    }

    /// Not needed yet: the pass-logic tests hand `Mirror::transfer` its
    /// recentfile.
    fn fetch(&self, _dir: &FetchDir, _names: &[&str], _watch: &mut FetchWatch<'_>) -> Result<(), Failure> {
        unimplemented!("the local test transport fetches no recentfiles")
    }

    fn fetch_index(
        &self,
        _dir: &FetchDir,
        _watch: &mut FetchWatch<'_>,
        _landed: &mut dyn FnMut(&FetchDir) -> bool,
    ) -> Result<bool, Failure> {
        unimplemented!("the local test transport fetches no recentfiles")
    }
}

impl Call for Copy {
    fn run(&self, seen: &mut Itemized) -> Result<Outcome, Failure> {
        if self.dirs.down {
            return Err(Failure {
                command: "local test transport".into(),
                code: Some(10),
                signal: None,
                stderr: "connection refused (test transport down)".into(),
                class: RsyncFailure::from_code(10),
                cause: None,
            });
        }
        let mut out = Outcome::default();
        for p in &self.paths {
            let rel = std::ffi::OsStr::from_bytes(p.as_bytes());
            if let Some(message) = self.dirs.unsendable.get(p) {
                out.failed.push(FailedPath { path: p.as_bytes().to_vec(), message: message.clone() });
                continue;
            }
            let from = self.dirs.origin.join(rel);
            let Ok(bytes) = fs::read(&from) else {
                out.vanished.push(p.as_bytes().to_vec());
                continue;
            };
            let to = self.localroot.join(rel);
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            let tmp = to.with_extension("local-transport.tmp");
            fs::write(&tmp, &bytes).unwrap();
            fs::rename(&tmp, &to).unwrap();
            seen.files += 1;
            seen.bytes += bytes.len() as u64;
        }
        Ok(out)
    }
}
