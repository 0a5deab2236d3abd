//! `--records FILE.jsonl`: every request's record as one JSON line, buffered, written as the
//! aggregator hands batches on.

use crate::record::RequestRecord;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Why the records file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("cannot create records file {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write records file {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Per-request records as JSON lines, buffered; the first write error is kept and reported.
pub struct RecordsFile {
    path: PathBuf,
    out: BufWriter<File>,
    error: Option<std::io::Error>,
}

impl RecordsFile {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> Result<Self, RecordsError> {
        let file = File::create(path).map_err(|source| RecordsError::Create {
            path: path.display().to_string(),
            source,
        })?;
        Ok(RecordsFile {
            path: path.to_owned(),
            out: BufWriter::with_capacity(1 << 16, file),
            error: None,
        })
    }

    /// Appends one line per record; after a write error, nothing more is written.
    pub fn write(&mut self, batch: &[RequestRecord]) {
        for r in batch {
            if self.error.is_some() {
                return;
            }
            let line = serde_json::to_writer(&mut self.out, r).map_err(std::io::Error::from);
            self.error = line.and_then(|_| self.out.write_all(b"\n")).err();
        }
    }

    /// Flushes; the first write error, if any, is the error.
    pub fn finish(mut self) -> Result<(), RecordsError> {
        let flushed = self.out.flush();
        let err = self.error.map_or(flushed, Err);
        err.map_err(|source| RecordsError::Write {
            path: self.path.display().to_string(),
            source,
        })
    }
}
