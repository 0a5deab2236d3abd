//! Which process owns a `running` run, and whether it still exists.
//!
//! A run records its owner when it is created: the pid, the process' start time (field 22 of
//! `/proc/<pid>/stat`, clock ticks after boot) and the boot id. A pid alone is not enough: after
//! the owner died, the kernel may give its pid to another process, which then has another start
//! time. When the store is opened, a `running` run whose owner is gone was killed (`kill -9`,
//! a crash, a power cut) and is marked `interrupted` (issue 12, point 4).
//!
//! Linux only (`/proc`); elsewhere no owner is recorded and such runs stay `running`.

use std::path::Path;

/// The process that owns a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// `starttime` of `/proc/<pid>/stat` (field 22).
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id`: a start time is only meaningful within one boot.
    pub boot_id: String,
}

impl Owner {
    /// This process, or `None` where `/proc` cannot tell.
    pub fn current() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner {
            pid,
            start_ticks: start_ticks(Path::new("/proc/self/stat"))?,
            boot_id: boot_id()?,
        })
    }

    /// Whether this owner still runs: same boot, its pid exists, and with the same start time.
    pub fn is_alive(&self) -> bool {
        if boot_id().is_some_and(|b| b != self.boot_id) {
            return false;
        }
        let stat = format!("/proc/{}/stat", self.pid);
        start_ticks(Path::new(&stat)) == Some(self.start_ticks)
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_owned())
}

/// Field 22 of a `stat` file, or `None` when the process does not exist.
fn start_ticks(stat: &Path) -> Option<u64> {
    parse_start_ticks(&std::fs::read_to_string(stat).ok()?)
}

/// `pid (comm) state ppid …`: `comm` may hold spaces and parentheses, so the fields are counted
/// from the last `)`, after which field 3 (`state`) comes.
pub(crate) fn parse_start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_field_22_even_with_a_strange_name() {
        let stat = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 10000 100";
        assert_eq!(parse_start_ticks(stat), Some(987_654));
        assert_eq!(parse_start_ticks("4242 (x) S 1"), None);
        assert_eq!(parse_start_ticks("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_changed_start_time_is_not() {
        let Some(me) = Owner::current() else {
            return; // no /proc: nothing to check
        };
        assert_eq!(me.pid, std::process::id());
        assert!(me.is_alive());
        let reused = Owner {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert!(!reused.is_alive(), "a reused pid is not the owner");
        let other_boot = Owner {
            boot_id: "another-boot".into(),
            ..me
        };
        assert!(!other_boot.is_alive());
    }

    #[test]
    fn a_process_that_ended_is_gone() {
        let Some(me) = Owner::current() else {
            return;
        };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let stat = format!("/proc/{}/stat", child.id());
        let owner = Owner {
            pid: child.id(),
            start_ticks: start_ticks(Path::new(&stat)).unwrap(),
            boot_id: me.boot_id,
        };
        assert!(owner.is_alive());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!owner.is_alive());
    }
}
