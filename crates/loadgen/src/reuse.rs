//! Prompt reuse, folded from the records: how many prompt tokens the load repeated on purpose,
//! how many the server said it found cached, and TTFT of the requests that hit next to those that
//! missed (issue 27). Pure and mergeable, like the rest of [`crate::stats`].

use crate::record::RequestRecord;
use crate::report::PrefixReuse;
use crate::stats::Hist;

/// The share of its prompt a request must find cached to count as a hit in the TTFT split: a
/// chat template's first block is cached for nearly every request, which is not what the split
/// is about (a shared system prompt, the conversation so far).
pub const HIT_SHARE: f64 = 0.25;

/// Whether `cached` of `prompt` tokens is a hit ([`HIT_SHARE`]; any cached token when the prompt
/// was not counted).
pub fn is_hit(cached: u32, prompt: Option<u32>) -> bool {
    match prompt {
        Some(p) if p > 0 => f64::from(cached) >= HIT_SHARE * f64::from(p) && cached > 0,
        _ => cached > 0,
    }
}

/// What the load does to reuse prompts (from the plan): a shared prefix, sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReuseShape {
    pub shared_prefix_tokens: Option<u32>,
    pub prefix_groups: Option<u32>,
    pub turns: Option<u32>,
    /// A trace replay whose requests share prompt blocks (Mooncake `hash_ids`).
    pub trace_blocks: bool,
}

impl ReuseShape {
    fn any(&self) -> bool {
        self.shared_prefix_tokens.is_some() || self.turns.is_some() || self.trace_blocks
    }
}

/// The completed, measured requests' prompt reuse.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ReuseStats {
    prompt_tokens: u64,
    repeated_tokens: u64,
    /// Requests that said what they repeat (0: the load does not know).
    repeat_known: u64,
    reported: u64,
    cached_tokens: u64,
    /// Made on the first request that needs them: a plain load keeps none.
    ttft_hit: Option<Hist>,
    ttft_miss: Option<Hist>,
    ttft_first_turn: Option<Hist>,
    ttft_later_turns: Option<Hist>,
}

/// Records `ns` in `h`, making it first.
fn record(h: &mut Option<Hist>, ns: u64) {
    h.get_or_insert_default().record_ns(ns);
}

/// Adds `other` to `h`.
fn merge(h: &mut Option<Hist>, other: &Option<Hist>) {
    if let Some(o) = other {
        h.get_or_insert_default().merge(o);
    }
}

/// The summary of `h`; empty when it was never made.
fn summary(h: &Option<Hist>) -> crate::report::Summary {
    h.as_ref().map(Hist::summary).unwrap_or_default()
}

impl ReuseStats {
    /// Folds one completed, measured request in.
    pub fn add(&mut self, r: &RequestRecord) {
        self.prompt_tokens += u64::from(r.prompt_tokens.unwrap_or(0));
        if let Some(n) = r.repeated_tokens {
            self.repeated_tokens += u64::from(n);
            self.repeat_known += 1;
        }
        let ttft = r.ttft_ns();
        if let Some(cached) = r.cached_tokens {
            self.reported += 1;
            self.cached_tokens += u64::from(cached);
            if let Some(t) = ttft {
                let h = if is_hit(cached, r.prompt_tokens) {
                    &mut self.ttft_hit
                } else {
                    &mut self.ttft_miss
                };
                record(h, t);
            }
        }
        if let (Some(turn), Some(t)) = (r.turn, ttft) {
            let h = if turn <= 1 {
                &mut self.ttft_first_turn
            } else {
                &mut self.ttft_later_turns
            };
            record(h, t);
        }
    }

    pub fn merge(&mut self, o: &ReuseStats) {
        self.prompt_tokens += o.prompt_tokens;
        self.repeated_tokens += o.repeated_tokens;
        self.repeat_known += o.repeat_known;
        self.reported += o.reported;
        self.cached_tokens += o.cached_tokens;
        merge(&mut self.ttft_hit, &o.ttft_hit);
        merge(&mut self.ttft_miss, &o.ttft_miss);
        merge(&mut self.ttft_first_turn, &o.ttft_first_turn);
        merge(&mut self.ttft_later_turns, &o.ttft_later_turns);
    }

    /// The report, when there is reuse to speak of: the load shaped it, or the server counted
    /// cached prompt tokens.
    pub fn report(&self, shape: &ReuseShape) -> Option<PrefixReuse> {
        if !shape.any() && self.reported == 0 {
            return None;
        }
        let sessions = shape.turns.is_some();
        Some(PrefixReuse {
            shared_prefix_tokens: shape.shared_prefix_tokens,
            prefix_groups: shape.prefix_groups,
            turns: shape.turns,
            prompt_tokens: self.prompt_tokens,
            repeated_tokens: (self.repeat_known > 0).then_some(self.repeated_tokens),
            reported: self.reported,
            cached_tokens: self.cached_tokens,
            ttft_hit: summary(&self.ttft_hit),
            ttft_miss: summary(&self.ttft_miss),
            ttft_first_turn: sessions.then(|| summary(&self.ttft_first_turn)),
            ttft_later_turns: sessions.then(|| summary(&self.ttft_later_turns)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(turn: Option<u32>, cached: Option<u32>, ttft_ms: u64) -> RequestRecord {
        RequestRecord {
            sent_unix_ns: 0,
            first_token_unix_ns: Some(ttft_ms * 1_000_000),
            end_unix_ns: ttft_ms * 2_000_000,
            prompt_tokens: Some(100),
            cached_tokens: cached,
            repeated_tokens: turn.map(|t| if t > 1 { 80 } else { 0 }),
            turn,
            ..Default::default()
        }
    }

    #[test]
    fn splits_ttft_by_hit_and_turn_and_sums_what_repeats() {
        let mut s = ReuseStats::default();
        s.add(&rec(Some(1), Some(16), 40));
        s.add(&rec(Some(2), Some(64), 10));
        let mut other = ReuseStats::default();
        other.add(&rec(Some(2), Some(80), 12));
        s.merge(&other);
        let shape = ReuseShape {
            turns: Some(2),
            ..Default::default()
        };
        let r = s.report(&shape).unwrap();
        assert_eq!((r.prompt_tokens, r.repeated_tokens), (300, Some(160)));
        assert_eq!((r.reported, r.cached_tokens), (3, 160));
        assert_eq!((r.ttft_hit.count, r.ttft_miss.count), (2, 1));
        // HDR reads a bucket as its highest value: within 0.1 %.
        let near = |v: Option<f64>, want: f64| (v.unwrap() - want).abs() <= want * 1e-3;
        assert!(near(r.ttft_miss.p50, 40.0) && near(r.ttft_hit.p50, 10.0));
        let later = r.ttft_later_turns.clone().unwrap();
        assert!(later.count == 2 && near(later.p50, 10.0));
        assert_eq!(r.ttft_first_turn.as_ref().unwrap().count, 1);
        assert!((r.repeated_share().unwrap() - 160.0 / 300.0).abs() < 1e-9);
    }

    #[test]
    fn a_hit_is_a_quarter_of_the_prompt_found_cached() {
        assert!(!is_hit(16, Some(101)), "a chat template's block");
        assert!(is_hit(96, Some(194)));
        assert!(is_hit(25, Some(100)) && !is_hit(24, Some(100)));
        assert!(is_hit(1, None) && !is_hit(0, None) && !is_hit(0, Some(0)));
    }

    #[test]
    fn a_plain_load_allocates_no_histogram() {
        let mut s = ReuseStats::default();
        s.add(&rec(None, None, 10));
        s.merge(&ReuseStats::default());
        assert!(s.ttft_hit.is_none() && s.ttft_miss.is_none() && s.ttft_first_turn.is_none());
    }

    #[test]
    fn a_plain_load_whose_server_counts_nothing_reports_nothing() {
        let mut s = ReuseStats::default();
        s.add(&rec(None, None, 10));
        assert_eq!(s.report(&ReuseShape::default()), None);
        s.add(&rec(None, Some(0), 10));
        let r = s.report(&ReuseShape::default()).unwrap();
        assert_eq!(
            (r.reported, r.repeated_tokens, r.ttft_first_turn),
            (1, None, None)
        );
    }
}
