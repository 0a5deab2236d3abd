//! One clock for the whole process: monotonic [`Instant`]s, and a single wall-clock anchor to turn
//! them into Unix nanoseconds (records, server emit stamps) and back (kernel receive stamps).
//!
//! One anchor, taken once, so that every conversion in a run agrees to the nanosecond.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime};

/// An (`Instant`, Unix ns) pair taken together.
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    t0: Instant,
    unix0: u64,
}

/// The process-wide anchor.
pub fn anchor() -> &'static Anchor {
    static ANCHOR: OnceLock<Anchor> = OnceLock::new();
    ANCHOR.get_or_init(|| {
        let unix0 = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Anchor {
            t0: Instant::now(),
            unix0,
        }
    })
}

impl Anchor {
    /// Unix nanoseconds of `t`.
    pub fn unix_ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.t0) {
            Some(d) => self.unix0 + d.as_nanos() as u64,
            None => self.unix0 - self.t0.duration_since(t).as_nanos() as u64,
        }
    }

    /// The instant of Unix time `ns`.
    pub fn instant(&self, ns: u64) -> Instant {
        let d = std::time::Duration::from_nanos(ns.abs_diff(self.unix0));
        if ns >= self.unix0 {
            self.t0 + d
        } else {
            self.t0 - d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn round_trips_both_ways() {
        let a = anchor();
        let now = Instant::now();
        for t in [
            now,
            now + Duration::from_millis(1500),
            now - Duration::from_micros(3),
        ] {
            assert_eq!(a.instant(a.unix_ns(t)), t);
        }
        let wall = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        assert!(a.unix_ns(Instant::now()).abs_diff(wall) < 50_000_000);
    }
}
