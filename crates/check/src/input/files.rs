//! Opening the files `llmscope check` is given, safely (issue 17).
//!
//! - [`read_text`] is the one bounded reader every input file goes through
//!   ([`llmscope_core::files`]): regular files only (a FIFO would block for ever, `/dev/zero`
//!   never ends), at most a size limit ([`DEFAULT_MAX_BYTES`] unless raised).
//! - [`walk`] expands directories into their checkable files (`.promql`, `.json`, `.yaml`,
//!   `.yml`), sorted. It follows a symbolic link to a directory once: every directory is
//!   identified by device and inode, and a second visit (a symlink loop, or two links to one
//!   place) is skipped with a note, so the walk is linear in the tree and always ends.
//!   Non-regular files inside a directory are skipped with a note; a non-regular file named
//!   on the command line is an error (see [`read_text`]).

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use llmscope_core::files::{DEFAULT_MAX_BYTES, FileError, read_bytes, read_text};
use llmscope_core::files::{io_at, kind};

/// The files a walk found, and what it skipped (with why).
#[derive(Debug, Default, PartialEq)]
pub struct Walk {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<String>,
}

/// A file itself, or the checkable files under a directory (sorted, each directory once).
pub fn walk(path: &Path) -> Result<Walk, FileError> {
    let mut w = Walk::default();
    let meta = std::fs::metadata(path).map_err(io_at(path))?;
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
            .map_err(io_at(&dir))?
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
