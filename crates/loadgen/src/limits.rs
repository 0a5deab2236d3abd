//! The client's own limits: open file descriptors (`RLIMIT_NOFILE`).
//!
//! Each connection holds one descriptor. Before this check, `--concurrency 1000000` ran into the
//! soft limit (often 1,024) and the client counted its own exhaustion as server `connect`
//! errors (issue 12, point 6). [`raise_fd_limit`] lifts the soft limit to the hard one (allowed
//! to any process), and [`check_fds`] refuses a concurrency the limit cannot carry, with the
//! numbers. What still fails at connect time is typed [`crate::ErrorKind::ClientFds`].

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Descriptors kept for everything but connections: std streams, the runtime's epoll and
/// wakers, resolver and files (records, prompts), a store.
pub const RESERVED_FDS: u64 = 64;

/// The descriptor limit of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    /// What the process may open now.
    pub soft: u64,
    /// The most the soft limit can be raised to without privileges.
    pub hard: u64,
    /// The soft limit before [`raise_fd_limit`] raised it, if it did.
    pub raised_from: Option<u64>,
}

impl FdLimit {
    /// The most connections the limit leaves room for, at `fds_per_connection` each.
    pub fn max_connections(&self, fds_per_connection: u64) -> u64 {
        self.soft.saturating_sub(RESERVED_FDS) / fds_per_connection.max(1)
    }
}

/// Why the limit could not be read, or is too low.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("cannot read the open-file limit (RLIMIT_NOFILE): {0}")]
    Read(nix::errno::Errno),
    #[error(
        "{connections} concurrent connections need about {needed} file descriptors, but this process may open {soft} (soft limit {soft}, hard limit {hard}): lower --concurrency to at most {max}, or raise the hard limit (`ulimit -Hn`, LimitNOFILE= in systemd, nofile in /etc/security/limits.conf)"
    )]
    TooFew {
        connections: u64,
        needed: u64,
        soft: u64,
        hard: u64,
        max: u64,
    },
}

/// Raises the soft descriptor limit to the hard one where allowed; returns the limit in force.
/// A refused raise is not an error: the limit stays what it was, and [`check_fds`] judges it.
pub fn raise_fd_limit() -> Result<FdLimit, LimitError> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(LimitError::Read)?;
    if soft >= hard || setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_err() {
        return Ok(FdLimit {
            soft,
            hard,
            raised_from: None,
        });
    }
    Ok(FdLimit {
        soft: hard,
        hard,
        raised_from: Some(soft),
    })
}

/// Refuses `connections` (at `fds_per_connection` descriptors each) that `limit` cannot carry.
pub fn check_fds(
    connections: u64,
    fds_per_connection: u64,
    limit: &FdLimit,
) -> Result<(), LimitError> {
    let needed = connections
        .saturating_mul(fds_per_connection)
        .saturating_add(RESERVED_FDS);
    if needed <= limit.soft {
        return Ok(());
    }
    Err(LimitError::TooFew {
        connections,
        needed,
        soft: limit.soft,
        hard: limit.hard,
        max: limit.max_connections(fds_per_connection),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_concurrency_beyond_the_limit_is_refused_with_the_numbers() {
        let limit = FdLimit {
            soft: 256,
            hard: 256,
            raised_from: None,
        };
        assert_eq!(check_fds(192, 1, &limit), Ok(()));
        let err = check_fds(1_000_000, 1, &limit).unwrap_err();
        assert_eq!(
            err,
            LimitError::TooFew {
                connections: 1_000_000,
                needed: 1_000_064,
                soft: 256,
                hard: 256,
                max: 192
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("at most 192") && text.contains("hard limit 256"),
            "{text}"
        );
        assert_eq!(limit.max_connections(2), 96, "two descriptors each");
        assert!(check_fds(u64::MAX, 2, &limit).is_err(), "no overflow");
    }

    #[test]
    fn raising_reaches_the_hard_limit() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        if hard == nix::sys::resource::RLIM_INFINITY {
            return; // an unlimited hard limit cannot be set as such (fs.nr_open caps it)
        }
        let limit = raise_fd_limit().unwrap();
        assert_eq!(limit.soft, limit.hard);
        let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!(soft, limit.soft);
    }
}
