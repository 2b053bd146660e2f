//! The `--files-from` list rrr hands rsync.

use std::io::{self, Write};
use std::path::Path;

/// Writes `paths` NUL-separated (with a trailing NUL) into a new hidden
/// file `.rrr-files-from-*` in `dir`, for `--from0 --files-from=FILE`.
/// The file is removed when the returned value is dropped.
pub fn write_files_from(dir: &Path, paths: &[&[u8]]) -> io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new().prefix(".rrr-files-from-").tempfile_in(dir)?;
    {
        let mut w = io::BufWriter::new(file.as_file_mut());
        for p in paths {
            if p.contains(&0) {
                let shown = String::from_utf8_lossy(p);
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("path {shown:?} contains a NUL byte")));
            }
            w.write_all(p)?;
            w.write_all(b"\0")?;
        }
        w.flush()?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn write_files_from_nul_separated() {
        let dir = tempfile::tempdir().unwrap();
        let f = write_files_from(dir.path(), &[b"a", b"b c/d"]).unwrap();
        let name = f.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".rrr-files-from-"), "{name}");
        assert_eq!(f.path().parent().unwrap(), dir.path());
        assert_eq!(fs::read(f.path()).unwrap(), b"a\0b c/d\0");
        assert!(write_files_from(dir.path(), &[b"x\0y"]).is_err());
    }
}
