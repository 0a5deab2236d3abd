//! The KV-cache block pool with prefix caching, as vLLM V1 keeps it.
//!
//! The pool holds `num_gpu_blocks − 1` usable blocks (block 0 is vLLM's null placeholder).
//! A block is *used* while a live request references it. Full prompt blocks are hashed by
//! [`BlockKey`]; a block shared by several running requests is counted once. When the last
//! reference goes, a cached block joins the free queue but keeps its hash (LRU), so it still counts
//! as free for `kv_cache_usage_perc` and a later request can hit it; it is evicted only when a new
//! allocation needs its space.

use std::collections::{BTreeMap, HashMap};

/// Identifies the content of one full block: (prefix hash, block index).
pub type BlockKey = (u64, u32);

#[derive(Debug, Clone, Copy)]
struct Entry {
    refs: u32,
    stamp: u64,
}

/// Block accounting for one engine.
#[derive(Debug, Clone)]
pub struct KvPool {
    usable: u32,
    used: u32,
    caching: bool,
    cache: HashMap<BlockKey, Entry>,
    /// Free-but-cached blocks in eviction order (oldest first).
    lru: BTreeMap<u64, BlockKey>,
    stamp: u64,
}

impl KvPool {
    pub fn new(num_gpu_blocks: u32, caching: bool) -> Self {
        Self {
            usable: num_gpu_blocks.saturating_sub(1),
            used: 0,
            caching,
            cache: HashMap::new(),
            lru: BTreeMap::new(),
            stamp: 0,
        }
    }

    pub fn free(&self) -> u32 {
        self.usable - self.used
    }

    pub fn used(&self) -> u32 {
        self.used
    }

    /// `kv_cache_usage_perc`: used / (num_gpu_blocks − 1), a 0..1 fraction.
    pub fn usage(&self) -> f64 {
        if self.usable == 0 {
            0.0
        } else {
            self.used as f64 / self.usable as f64
        }
    }

    /// Takes `n` private blocks, evicting cached-free blocks if needed. False if they don't fit.
    pub fn try_alloc(&mut self, n: u32) -> bool {
        if n > self.free() {
            return false;
        }
        let uncached_free = self.free() as usize - self.lru.len();
        for _ in uncached_free..n as usize {
            if let Some((_, key)) = self.lru.pop_first() {
                self.cache.remove(&key);
            }
        }
        self.used += n;
        true
    }

    /// Returns `n` private blocks to the free queue.
    pub fn free_private(&mut self, n: u32) {
        self.used -= n.min(self.used);
    }

    /// How many of `keys`, from the first, are cached (used or free-but-cached).
    pub fn cached_prefix(&self, keys: impl Iterator<Item = BlockKey>) -> u32 {
        if !self.caching {
            return 0;
        }
        keys.take_while(|k| self.cache.contains_key(k)).count() as u32
    }

    /// References a cached block found by [`Self::cached_prefix`].
    pub fn acquire(&mut self, key: BlockKey) {
        if let Some(e) = self.cache.get_mut(&key) {
            if e.refs == 0 {
                self.lru.remove(&e.stamp);
                self.used += 1;
            }
            e.refs += 1;
        }
    }

    /// A request's private block just became a full prompt block with content `key`. Returns true
    /// if the block is now held through the cache (the caller drops it from its private count).
    pub fn promote(&mut self, key: BlockKey) -> bool {
        if !self.caching {
            return false;
        }
        match self.cache.get_mut(&key) {
            Some(e) if e.refs > 0 => {
                // Same content already resident: keep one copy, free ours.
                e.refs += 1;
                self.used -= 1;
            }
            Some(e) => {
                // Cached-free copy revived (+1), our private copy freed (−1).
                self.lru.remove(&e.stamp);
                e.refs = 1;
            }
            None => {
                self.cache.insert(key, Entry { refs: 1, stamp: 0 });
            }
        }
        true
    }

    /// Drops one reference to a cached block; at zero it becomes free-but-cached.
    pub fn release(&mut self, key: BlockKey) {
        let Some(e) = self.cache.get_mut(&key) else {
            return;
        };
        e.refs = e.refs.saturating_sub(1);
        if e.refs == 0 {
            self.stamp += 1;
            e.stamp = self.stamp;
            self.lru.insert(self.stamp, key);
            self.used -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_blocks_count_once_and_stay_cached_when_freed() {
        let mut kv = KvPool::new(11, true); // 10 usable
        assert!(kv.try_alloc(2));
        assert!(kv.promote((1, 0))); // first request's block 0 becomes cached
        assert_eq!(kv.used(), 2);
        assert!(kv.try_alloc(1)); // second request computes the same block…
        assert!(kv.promote((1, 0))); // …and dedups onto it
        assert_eq!(kv.used(), 2);
        kv.release((1, 0));
        kv.release((1, 0));
        kv.free_private(1);
        assert_eq!(kv.used(), 0);
        assert_eq!(kv.cached_prefix([(1, 0), (1, 1)].into_iter()), 1);
        kv.acquire((1, 0));
        assert_eq!(kv.used(), 1);
    }

    #[test]
    fn allocation_evicts_cached_free_blocks_oldest_first() {
        let mut kv = KvPool::new(4, true); // 3 usable
        assert!(kv.try_alloc(2));
        kv.promote((7, 0));
        kv.promote((7, 1));
        kv.release((7, 0));
        kv.release((7, 1));
        assert_eq!(kv.free(), 3);
        assert!(kv.try_alloc(2)); // one uncached free block + one eviction (the oldest)
        assert_eq!(kv.cached_prefix([(7, 0)].into_iter()), 0);
        assert_eq!(kv.cached_prefix([(7, 1)].into_iter()), 1);
        assert!(!kv.try_alloc(2));
        assert!((kv.usage() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn no_caching_means_no_hits() {
        let mut kv = KvPool::new(4, false);
        assert!(kv.try_alloc(1));
        assert!(!kv.promote((1, 0)));
        assert_eq!(kv.cached_prefix([(1, 0)].into_iter()), 0);
    }
}
