//! Opening the files `llmscope check` is given, safely (issue 17).
//!
//! - [`read_text`] reads only regular files (a FIFO would block for ever, `/dev/zero` never
//!   ends), and at most a size limit ([`DEFAULT_MAX_BYTES`] unless raised): the size is checked
//!   before reading and the read itself stops one byte past the limit, so a file that grows
//!   while it is read is bounded too.
//! - [`walk`] expands directories into their checkable files (`.promql`, `.json`, `.yaml`,
//!   `.yml`), sorted. It follows a symbolic link to a directory once: every directory is
//!   identified by device and inode, and a second visit (a symlink loop, or two links to one
//!   place) is skipped with a note, so the walk is linear in the tree and always ends.
//!   Non-regular files inside a directory are skipped with a note; a non-regular file named
//!   on the command line is an error (see [`read_text`]).

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The default size limit of one input file: 64 MiB (the largest public dashboards are ~2 MB).
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {what}, not a regular file; give a file (a FIFO or device would never end)")]
    NotRegular { path: String, what: &'static str },
    #[error(
        "{path}: {size} bytes, over the {limit}-byte limit for one file; raise it with --max-file-size if the file is really this large"
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path}: not UTF-8 text (at byte {at})")]
    NotUtf8 { path: String, at: usize },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |source| FileError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// What a non-regular file is, for messages.
fn kind(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Reads the regular file `path` (symlinks followed), at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let shown = || path.display().to_string();
    // Checked before opening: opening a FIFO blocks until a writer comes.
    let meta = std::fs::metadata(path).map_err(io(path))?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: shown(),
            what: kind(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge {
            path: shown(),
            size: meta.len(),
            limit,
        });
    }
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(io(path))?;
    if buf.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: shown(),
            size: buf.len() as u64,
            limit,
        });
    }
    Ok(buf)
}

/// [`read_bytes`], as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read_bytes(path, limit)?).map_err(|e| FileError::NotUtf8 {
        path: path.display().to_string(),
        at: e.utf8_error().valid_up_to(),
    })
}

/// The files a walk found, and what it skipped (with why).
#[derive(Debug, Default, PartialEq)]
pub struct Walk {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<String>,
}

/// A file itself, or the checkable files under a directory (sorted, each directory once).
pub fn walk(path: &Path) -> Result<Walk, FileError> {
    let mut w = Walk::default();
    let meta = std::fs::metadata(path).map_err(io(path))?;
    if !meta.is_dir() {
        w.files.push(path.to_owned());
        return Ok(w);
    }
    let mut seen = HashSet::new();
    let mut stack = vec![path.to_owned()];
    // Depth first, in sorted order: children are pushed in reverse.
    while let Some(dir) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&dir) else {
            w.skipped.push(format!("{}: cannot be read", dir.display()));
            continue;
        };
        if meta.is_file() {
            w.files.push(dir);
            continue;
        }
        if !meta.is_dir() {
            w.skipped.push(format!(
                "{}: {}, not a regular file",
                dir.display(),
                kind(meta.file_type())
            ));
            continue;
        }
        if !seen.insert((meta.dev(), meta.ino())) {
            w.skipped.push(format!(
                "{}: a directory already read (a symbolic link loop or a second link to it)",
                dir.display()
            ));
            continue;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(io(&dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|e| checkable(e) || e.is_dir())
            .collect();
        entries.sort();
        stack.extend(entries.into_iter().rev());
    }
    Ok(w)
}

fn checkable(path: &Path) -> bool {
    let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
    matches!(ext, "promql" | "json" | "yaml" | "yml")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.promql");
        std::fs::write(&f, "up\n").unwrap();
        assert_eq!(read_text(&f, 100).unwrap(), "up\n");
        let e = read_text(&f, 2).unwrap_err().to_string();
        assert!(
            e.contains("over the 2-byte limit") && e.contains("--max-file-size"),
            "{e}"
        );
        let e = read_text(Path::new("/dev/zero"), 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a character device"), "{e}");
        let e = read_text(dir.path(), 100).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
    }

    #[test]
    fn symlink_loops_are_walked_once_and_files_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/q.promql"), "up").unwrap();
        std::fs::write(root.join("a/d.json"), "{}").unwrap();
        std::fs::write(root.join("a/notes.txt"), "no").unwrap();
        symlink(root.join("a"), root.join("a/b/loop")).unwrap();
        symlink(root.join("a/b"), root.join("a/again")).unwrap();
        let w = walk(root).unwrap();
        let rel: Vec<_> = w
            .files
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_str().unwrap().to_owned())
            .collect();
        // `a/again` (a link to `a/b`) sorts first, so `a/b` is the second visit.
        assert_eq!(rel, ["a/again/q.promql", "a/d.json"]);
        assert_eq!(w.skipped.len(), 2, "{:?}", w.skipped);
        assert!(w.skipped.iter().all(|s| s.contains("already read")));
    }

    #[test]
    fn a_fifo_is_skipped_in_a_walk_and_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.promql");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let w = walk(dir.path()).unwrap();
        assert!(w.files.is_empty());
        assert!(w.skipped[0].contains("FIFO"), "{:?}", w.skipped);
        let e = read_text(&fifo, 100).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
    }
}
