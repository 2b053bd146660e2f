//! The rsync command line: [`Rsync`], a builder over the `rsync` program
//! (or `RRR_RSYNC`), whose `Display` is the shell-quoted command line
//! without the environment, so a `RSYNC_PASSWORD` never reaches a log.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::time::Duration;

/// A command line for `rsync`, to be run once or many times.
#[derive(Debug, Clone)]
pub struct Rsync {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    pub(super) envs: Vec<(String, OsString)>,
    pub(super) stall_limit: Option<Duration>,
}

impl Default for Rsync {
    fn default() -> Self {
        Rsync::new()
    }
}

impl Rsync {
    /// `rsync` from PATH, or the program named by env RRR_RSYNC if set.
    pub fn new() -> Rsync {
        let program =
            std::env::var_os("RRR_RSYNC").filter(|p| !p.is_empty()).unwrap_or_else(|| OsString::from("rsync"));
        Rsync::with_program(program)
    }

    /// A specific rsync binary, ignoring `RRR_RSYNC`.
    pub fn with_program(program: impl AsRef<OsStr>) -> Rsync {
        Rsync { program: program.as_ref().to_owned(), args: Vec::new(), envs: Vec::new(), stall_limit: None }
    }

    /// rrr's own `--timeout`: stop rsync (SIGTERM, then SIGKILL) once its
    /// processes moved no data and used no CPU for `limit` (what `/proc` shows of its processes: see `watchdog`),
    /// and fail with [`RsyncFailure::Timeout`]. It guards what rsync's
    /// `--timeout` guards without its cost: with `--timeout` a default
    /// rsyncd sends a keep-alive at once, and Nagle's algorithm makes it
    /// wait for our delayed ACK, 40 ms on every connection.
    pub fn stall_limit(&mut self, limit: Duration) -> &mut Self {
        self.stall_limit = Some(limit);
        self
    }

    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(a.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, it: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(it.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for rsync, e.g. `RSYNC_PASSWORD`.
    /// Environment variables are never shown by `Display`. `LANG` and
    /// `LC_ALL` are always `C`. Only the tests set one: a mirror passes
    /// its password as `--password-file`.
    #[cfg(test)]
    pub fn env(&mut self, k: &str, v: impl AsRef<OsStr>) -> &mut Self {
        self.envs.retain(|(key, _)| key != k);
        self.envs.push((k.to_owned(), v.as_ref().to_owned()));
        self
    }
}

/// The shell-quoted command line: program and arguments, no environment.
impl fmt::Display for Rsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::sys::child::shell_quote;
        f.write_str(&shell_quote(&self.program.to_string_lossy()))?;
        for a in &self.args {
            write!(f, " {}", shell_quote(&a.to_string_lossy()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_and_hides_env() {
        let mut r = Rsync::with_program("rsync");
        r.args(["--times", "--files-from=/tmp/a b", "it's", "", "rsync://h:873/m/"])
            .arg("$HOME;*")
            .env("RSYNC_PASSWORD", "s3cret");
        let shown = r.to_string();
        assert_eq!(shown, r#"rsync --times '--files-from=/tmp/a b' 'it'\''s' '' rsync://h:873/m/ '$HOME;*'"#);
        assert!(!shown.contains("s3cret"));
    }
}
