//! Output files never overwrite a database: `report --html`, `load --records`, `dashboard
//! --output` and the like pointed at the store (or at any SQLite file, or its `-wal`, `-shm`
//! or `-journal` companion) would truncate every run in it. [`refuse_database`] is asked
//! before such a file is created.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The 16 bytes every SQLite 3 database file begins with.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// An output path that would overwrite a database.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to write {path}: {what} — writing there would destroy the runs it holds; choose another output path"
)]
pub struct WouldOverwrite {
    pub path: String,
    pub what: String,
}

/// `Ok` unless `path` is an SQLite database, or the `-wal`/`-shm`/`-journal` file of one. A path
/// that does not exist yet, or cannot be read, is no database.
pub fn refuse_database(path: &Path) -> Result<(), WouldOverwrite> {
    let refuse = |what: String| {
        Err(WouldOverwrite {
            path: path.display().to_string(),
            what,
        })
    };
    if is_sqlite(path) {
        return refuse("it is an SQLite database (an llmscope store?)".to_owned());
    }
    if let Some(db) = database_of_companion(path) {
        return refuse(format!(
            "it belongs to the SQLite database {}",
            db.display()
        ));
    }
    Ok(())
}

/// Whether the file at `path` begins with SQLite's header. Only a regular file is read: a pipe,
/// FIFO or device is no database, and opening a FIFO to read it waits for a writer that never
/// comes (`report --html >(gzip > r.html.gz)` hung here for ever, issue 50).
fn is_sqlite(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = [0u8; 16];
    file.read_exact(&mut head).is_ok() && &head == SQLITE_HEADER
}

/// The database whose write-ahead log, shared memory or rollback journal `path` is.
fn database_of_companion(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let db = ["-wal", "-shm", "-journal"]
        .iter()
        .find_map(|s| name.strip_suffix(s))?;
    let db = path.with_file_name(db);
    is_sqlite(&db).then_some(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO no one writes to is answered at once (it is no database), not read: the guard
    /// asked before every output file used to wait on it for ever. Judged on a thread with a
    /// deadline, so that a regression fails instead of hanging the suite.
    #[test]
    fn a_fifo_is_no_database_and_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.html");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo (coreutils) runs");
        assert!(made.success(), "mkfifo {}", fifo.display());
        let (tx, rx) = std::sync::mpsc::channel();
        let asked = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(refuse_database(&asked).is_ok());
        });
        let answer = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(
            answer,
            Ok(true),
            "refuse_database({}) did not answer within 10 s, or refused",
            fifo.display()
        );
        // A companion name beside a FIFO is not read either.
        let companion = dir.path().join("out.html-wal");
        assert!(refuse_database(&companion).is_ok());
    }

    #[test]
    fn a_store_and_its_companions_are_refused_other_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("llmscope.db");
        let store = crate::Store::open(&db).unwrap();
        drop(store);
        let err = refuse_database(&db).unwrap_err().to_string();
        assert!(
            err.contains("llmscope.db") && err.contains("SQLite database"),
            "{err}"
        );
        for companion in ["llmscope.db-wal", "llmscope.db-shm", "llmscope.db-journal"] {
            let p = dir.path().join(companion);
            let err = refuse_database(&p).unwrap_err().to_string();
            assert!(err.contains("belongs to the SQLite database"), "{err}");
        }
        let report = dir.path().join("report.html");
        assert!(refuse_database(&report).is_ok(), "a new file");
        std::fs::write(&report, "<html>").unwrap();
        assert!(refuse_database(&report).is_ok(), "an old report");
        std::fs::write(dir.path().join("x-wal"), "").unwrap();
        assert!(refuse_database(&dir.path().join("x-wal")).is_ok(), "no x");
    }
}
