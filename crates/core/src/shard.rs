//! `--shard I/N`: one of N processes that split a piece of work without talking to each other —
//! the replicas of `llmscope watch` (deployments by hash) and the pods of a sharded load (the
//! load's workers, rate and requests; `llmscope-loadgen`'s `shard` module). Indexes count from 0,
//! as Kubernetes' `JOB_COMPLETION_INDEX` does.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Shard::parse(s)
    }
}

impl Shard {
    /// `I/N` with `0 <= I < N`; the error says how to write it.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "`{s}`: write I/N, the shard's index from 0 and the number of shards (e.g. 0/3; in a Kubernetes Indexed Job $(JOB_COMPLETION_INDEX)/3)"
            )
        };
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 {
            return Err(format!("`{s}`: there must be at least one shard"));
        }
        if index >= count {
            return Err(format!("`{s}`: shard indexes run from 0 to {}", count - 1));
        }
        Ok(Shard { index, count })
    }

    /// This shard's share of `n` things: `n / N`, one more for the first `n mod N` shards, so the
    /// shares add up to `n` exactly.
    pub fn share(&self, n: u64) -> u64 {
        let (count, index) = (u64::from(self.count), u64::from(self.index));
        n / count + u64::from(index < n % count)
    }

    /// The number, among all shards' items, of this shard's `k`-th one (interleaved).
    pub fn id(&self, k: u64) -> u64 {
        k * u64::from(self.count) + u64::from(self.index)
    }

    /// Whether item `k` of a sequence dealt out in turn is this shard's.
    pub fn takes(&self, k: u64) -> bool {
        k % u64::from(self.count) == u64::from(self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_whole() {
        for count in 1..=7u32 {
            for n in [1u64, 2, 3, 7, 10, 64, 1000] {
                let sum: u64 = (0..count).map(|i| Shard { index: i, count }.share(n)).sum();
                assert_eq!(sum, n, "{n} over {count}");
            }
        }
    }

    #[test]
    fn ids_interleave_into_the_whole_sequence() {
        let mut ids: Vec<u64> = (0..3)
            .flat_map(|i| (0..4).map(move |k| Shard { index: i, count: 3 }.id(k)))
            .collect();
        ids.sort();
        assert_eq!(ids, (0..12).collect::<Vec<_>>());
        let s = Shard { index: 1, count: 3 };
        assert!((0..12).filter(|&k| s.takes(k)).eq((0..4).map(|k| s.id(k))));
    }

    #[test]
    fn parses_and_refuses() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(Shard::parse(" 0 / 1 "), Ok(Shard { index: 0, count: 1 }));
        for bad in ["3/3", "1/0", "0/0", "1", "x", "a/3", "-1/3", "1/3/4"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert!(Shard::parse("3/3").unwrap_err().contains("0 to 2"));
        assert_eq!(Shard::default().to_string(), "0/1");
    }
}
