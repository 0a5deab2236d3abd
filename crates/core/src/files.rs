//! Reading a file the user named — prompts, prices, teams, dashboards, rule files — bounded
//! (issues 17 and 31). The one place outside the I/O crates that touches the file system, and
//! only to read what a command line named.
//!
//! - Only regular files are read (symlinks followed): a FIFO would block for ever, `/dev/zero`
//!   never ends. The kind is checked before the file is opened, since opening a FIFO blocks until
//!   a writer comes.
//! - At most a size limit: the size is checked before reading and the read itself stops one byte
//!   past the limit, so a file that grows while it is read is bounded too.

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// The default size limit of one input file: 64 MiB (the largest public dashboards are ~2 MB).
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {what}, not a regular file; give a file (a FIFO or device would never end)")]
    NotRegular { path: String, what: &'static str },
    #[error("{path}: {size} bytes, over the {limit}-byte limit for one file; {raise}")]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        /// How to raise the limit, if it can be raised.
        raise: &'static str,
    },
    #[error("{path}: not UTF-8 text (at byte {at})")]
    NotUtf8 { path: String, at: usize },
    /// The OS error is part of the message, not a `source`: an error chain would say it twice.
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// An I/O error on `path`, as a [`FileError`].
pub fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |error| FileError::Io {
        path: path.display().to_string(),
        error,
    }
}

/// What a non-regular file is, for messages.
pub fn kind(ft: std::fs::FileType) -> &'static str {
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

/// How to raise the limit where a command takes `--max-file-size`.
pub const RAISE_WITH_FLAG: &str = "raise it with --max-file-size if the file is really this large";

/// Reads the regular file `path` (symlinks followed), at most `limit` bytes (raised with
/// `--max-file-size`).
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    read_bytes_bounded(path, limit, RAISE_WITH_FLAG)
}

/// [`read_bytes`] where `raise` says how the limit is raised (or why it is not).
pub fn read_bytes_bounded(
    path: &Path,
    limit: u64,
    raise: &'static str,
) -> Result<Vec<u8>, FileError> {
    let shown = || path.display().to_string();
    // Checked before opening: opening a FIFO blocks until a writer comes.
    let meta = std::fs::metadata(path).map_err(io_at(path))?;
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
            raise,
        });
    }
    let file = std::fs::File::open(path).map_err(io_at(path))?;
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(io_at(path))?;
    if buf.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: shown(),
            size: buf.len() as u64,
            limit,
            raise,
        });
    }
    Ok(buf)
}

/// [`read_bytes`], as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, FileError> {
    read_text_bounded(path, limit, RAISE_WITH_FLAG)
}

/// [`read_bytes_bounded`], as UTF-8 text.
pub fn read_text_bounded(
    path: &Path,
    limit: u64,
    raise: &'static str,
) -> Result<String, FileError> {
    String::from_utf8(read_bytes_bounded(path, limit, raise)?).map_err(|e| FileError::NotUtf8 {
        path: path.display().to_string(),
        at: e.utf8_error().valid_up_to(),
    })
}
