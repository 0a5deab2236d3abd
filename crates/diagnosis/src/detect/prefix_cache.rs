//! Prefix cache (issue 27, point 3): how much of the prompt the engine found cached, against what
//! the load repeats; how much sooner a hit reaches its first token; whether KV pressure evicts
//! prefix blocks before they are reused; whether caching is off while prompts repeat.
//!
//! [`PrefixCacheReading::read`] joins the engine's counters ([`Concept::PrefixCacheHits`] and
//! [`Concept::PrefixCacheQueries`], in prompt tokens) over the steady window — the load's window
//! when no steady phase was found — with the load's own [`PrefixReuse`]: the share of its prompt
//! tokens it repeats (a large-enough cache's hit rate), the cached tokens the server reported
//! per request, TTFT of hits and misses. [`PrefixCache`] states that reading as one finding;
//! [`crate::advice`] reads the same [`PrefixCacheReading`] for what to change.
//!
//! Never a bottleneck: the cache changes how much prefill work a prompt costs, not which resource
//! limits the engine. So the detector sits last in the `detectors!` registry, where it leaves the
//! verdict alone, rather than beside `DataQuality` in `judge`: what it states is a measurement of
//! the engine with evidence, and the shared harness then checks it on hostile input like every
//! other detector.

use super::context::growth;
use super::{Context, Detector, Evidence, Finding, KV_HIGH, Severity, finding};
use crate::signal::{Concept, Input};
use llmscope_core::number::thousands;
use llmscope_core::outcome::{PrefixReuse, Summary};

/// Share of its prompt tokens a load must repeat for a cache that misses them to matter (and for
/// prefix caching left off to be worth a warning).
pub const REPEATED_SHARE: f64 = 0.3;
/// "Markedly lower": a hit rate under this fraction of what it is compared with (the load's
/// repeat share, or the hit rate in intervals below KV pressure).
pub const FALLS_SHORT: f64 = 0.5;
/// Scrape intervals (with lookups) each side of the KV split must hold to be compared.
pub const MIN_INTERVALS: usize = 2;
/// Prompt tokens each side of the KV split must have looked up: a few prompts, not one.
pub const MIN_SIDE_QUERIES: f64 = 1_000.0;
/// The hit rate below KV pressure must reach this for a fall under pressure to mean lost blocks
/// rather than noise around nothing.
pub const MIN_LOW_RATE: f64 = 0.1;
/// A shared prefix of at least this share of the mean prompt is "long".
pub const LONG_PREFIX: f64 = 0.5;

/// Hit and queried prompt tokens of the engine's prefix cache.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lookups {
    pub hits: f64,
    pub queries: f64,
    /// Scrape intervals they were summed over (in a [`KvSplit`]; 0 for a whole window).
    pub intervals: usize,
}

impl Lookups {
    pub fn rate(&self) -> f64 {
        self.hits / self.queries
    }

    fn enough(&self) -> bool {
        self.intervals >= MIN_INTERVALS && self.queries >= MIN_SIDE_QUERIES
    }
}

/// The window's scrape intervals by KV usage: at or above [`KV_HIGH`], and below it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KvSplit {
    pub high: Lookups,
    pub low: Lookups,
}

impl KvSplit {
    /// The cache hits markedly less under KV pressure than below it.
    pub fn falls(&self) -> bool {
        let low = self.low.rate();
        low >= MIN_LOW_RATE && self.high.rate() < FALLS_SHORT * low
    }
}

/// What the engine's counters and the load say of the prefix cache.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixCacheReading<'a> {
    /// The window the counters were read over, and whether it is the steady phase.
    pub window: Option<(f64, f64)>,
    pub steady: bool,
    /// The engine's counters over the window; `None` when absent or no prompt was looked up.
    pub counted: Option<Lookups>,
    /// Set when both sides have enough lookups to be compared.
    pub split: Option<KvSplit>,
    pub kv_max: Option<f64>,
    /// Preemptions the engine counted in the window.
    pub preemptions: Option<f64>,
    /// The engine says prefix caching is off (`enable_prefix_caching=False`).
    pub off: bool,
    /// The cache loses blocks it would have reused: see [`PrefixCacheReading::read`].
    pub thrashing: bool,
    pub prefix: Option<&'a PrefixReuse>,
    /// Requests the load completed, to size the mean prompt.
    pub requests: Option<u64>,
}

impl<'a> PrefixCacheReading<'a> {
    /// The reading, when there is something to say: the engine looked prompts up in the window,
    /// or the load knows its own reuse. Thrashing is either of: over the window's scrape
    /// intervals, the hit rate where KV usage reached [`KV_HIGH`] falls under `FALLS_SHORT` of
    /// the rate below it (each side `MIN_INTERVALS` and `MIN_SIDE_QUERIES`; below, at least
    /// `MIN_LOW_RATE`); or the load repeats at least `REPEATED_SHARE` of its prompt tokens,
    /// the cache hits under `FALLS_SHORT` of that, and KV reached [`KV_HIGH`] or the engine
    /// preempted.
    pub fn read(cx: &Context<'a>) -> Option<Self> {
        let input: &'a Input = cx.input;
        let prefix = input.load.prefix.as_ref();
        let window = cx
            .phases
            .steady
            .or(input.load.window)
            .filter(|(a, b)| b > a);
        let counted = window.and_then(|w| counted(input, w));
        if counted.is_none() && !prefix.is_some_and(speaks) {
            return None;
        }
        let in_window = |c: Concept| window.zip(input.signal(c));
        let mut r = PrefixCacheReading {
            window,
            steady: window.is_some() && window == cx.phases.steady,
            counted,
            split: window.and_then(|w| kv_split(input, w)),
            kv_max: in_window(Concept::KvUsage).and_then(|((a, b), s)| highest(s.window(a, b))),
            preemptions: in_window(Concept::Preemptions).and_then(|((a, b), s)| growth(s, a, b)),
            off: input
                .engine
                .kv_cache
                .as_ref()
                .is_some_and(|k| k.prefix_caching == Some(false)),
            thrashing: false,
            prefix,
            requests: requests(input, prefix),
        };
        r.thrashing = !r.off && (r.split.is_some_and(|s| s.falls()) || r.short_under_pressure());
        Some(r)
    }

    /// Share of prompt tokens found cached: the engine's counters, else the server's per-request
    /// counts.
    pub fn hit_rate(&self) -> Option<f64> {
        self.counted
            .map(|c| c.rate())
            .or_else(|| self.prefix?.cached_share())
    }

    /// Share of its prompt tokens the load repeats.
    pub fn repeated(&self) -> Option<f64> {
        self.prefix?.repeated_share()
    }

    /// The hit rate and the repeat share, where the load repeats at least `REPEATED_SHARE` and
    /// the cache hits under `FALLS_SHORT` of it.
    pub fn falls_short(&self) -> Option<(f64, f64)> {
        let (rate, repeated) = self.hit_rate().zip(self.repeated())?;
        (repeated >= REPEATED_SHARE && rate < FALLS_SHORT * repeated).then_some((rate, repeated))
    }

    /// Caching is off while the load repeats at least `REPEATED_SHARE`: that share.
    pub fn off_with_repeats(&self) -> Option<f64> {
        self.repeated().filter(|r| self.off && *r >= REPEATED_SHARE)
    }

    pub fn preempted(&self) -> bool {
        self.preemptions.is_some_and(|p| p > 0.0)
    }

    fn short_under_pressure(&self) -> bool {
        self.falls_short().is_some()
            && (self.kv_max.is_some_and(|m| m >= KV_HIGH) || self.preempted())
    }

    /// A long shared prefix (at least `LONG_PREFIX` of the mean prompt) of which the cache hits
    /// under `FALLS_SHORT`: the prefix's tokens, the mean prompt, the hit rate.
    pub fn long_prefix_missed(&self) -> Option<(u32, f64, f64)> {
        let p = self.prefix?;
        let shared = p.shared_prefix_tokens.filter(|s| *s > 0)?;
        let n = self.requests.filter(|n| *n > 0)?;
        let mean = p.prompt_tokens as f64 / n as f64;
        let share = f64::from(shared) / mean;
        let rate = self.hit_rate()?;
        // A prefix longer than the mean prompt: the counts do not match (say nothing).
        (!self.off && (LONG_PREFIX..=1.0).contains(&share) && rate < FALLS_SHORT * share)
            .then_some((shared, mean, rate))
    }

    /// "KV reached 97% and the engine preempted 12 requests", as far as known.
    pub fn pressure_words(&self) -> String {
        let kv = self
            .kv_max
            .filter(|m| *m >= KV_HIGH)
            .map(|m| format!("KV reached {}", pct(m)));
        let preempted = self
            .preemptions
            .filter(|p| *p > 0.0)
            .map(|p| format!("the engine preempted {} requests", thousands(p)));
        match (kv, preempted) {
            (Some(k), Some(p)) => format!("{k} and {p}"),
            (Some(w), None) | (None, Some(w)) => w,
            (None, None) => "under KV pressure".to_owned(),
        }
    }

    fn evidence(
        &self,
        cx: &Context,
        c: Concept,
        statistic: &'static str,
        value: f64,
        test: &'static str,
        threshold: Option<f64>,
    ) -> Evidence {
        Evidence {
            window: self.window,
            ..cx.evidence(c, statistic, value, test, threshold)
        }
    }
}

/// The load's reuse says something on its own: a repeat share, cached counts, or a TTFT split.
fn speaks(p: &PrefixReuse) -> bool {
    p.repeated_share().is_some_and(|s| s > 0.0) || p.cached_share().is_some() || ttft(p).is_some()
}

fn requests(input: &Input, prefix: Option<&PrefixReuse>) -> Option<u64> {
    let ok = input
        .load
        .requests
        .as_ref()
        .map(|o| o.ok)
        .filter(|n| *n > 0);
    ok.or_else(|| {
        let p = prefix?;
        Some(p.ttft_hit.count + p.ttft_miss.count).filter(|n| *n > 0)
    })
}

/// The counters' growth over the window (a reset counts from zero); `None` without lookups or
/// with more hits than lookups (counters that disagree say nothing).
fn counted(input: &Input, (a, b): (f64, f64)) -> Option<Lookups> {
    let queries = growth(input.signal(Concept::PrefixCacheQueries)?, a, b)?;
    let hits = growth(input.signal(Concept::PrefixCacheHits)?, a, b)?;
    consistent(hits, queries).then_some(Lookups {
        hits,
        queries,
        intervals: 0,
    })
}

fn consistent(hits: f64, queries: f64) -> bool {
    queries > 0.0 && queries.is_finite() && hits >= 0.0 && hits <= queries
}

fn highest(points: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    points.map(|p| p.1).reduce(f64::max)
}

/// Lookups per scrape interval of the queries counter, each interval on the side of
/// [`KV_HIGH`] its highest KV reading falls; `None` unless both sides have enough.
fn kv_split(input: &Input, (a, b): (f64, f64)) -> Option<KvSplit> {
    let queries = input.signal(Concept::PrefixCacheQueries)?;
    let hits = input.signal(Concept::PrefixCacheHits)?;
    let kv = input.signal(Concept::KvUsage)?;
    let points: Vec<(f64, f64)> = queries.window(a, b).collect();
    let mut split = KvSplit::default();
    for w in points.windows(2) {
        let ((t0, q0), (t1, q1)) = (w[0], w[1]);
        let q = if q1 >= q0 { q1 - q0 } else { q1 };
        // KV as read in (t0, t1]: the level the interval's lookups met.
        let level = highest(kv.window(t0, t1).filter(|p| p.0 > t0));
        let (Some(h), Some(level)) = (growth(hits, t0, t1), level) else {
            continue;
        };
        if !consistent(h, q) {
            continue;
        }
        let side = if level >= KV_HIGH {
            &mut split.high
        } else {
            &mut split.low
        };
        side.hits += h;
        side.queries += q;
        side.intervals += 1;
    }
    (split.high.enough() && split.low.enough()).then_some(split)
}

/// TTFT of the faster kind of request and of the slower: hits and misses where the server
/// counted cached tokens, else later and first turns of sessions.
/// Each side: its name in the message, its name in evidence, its TTFT.
struct TtftSplit<'p> {
    fast: (&'static str, &'static str, &'p Summary),
    slow: (&'static str, &'static str, &'p Summary),
}

fn ttft(p: &PrefixReuse) -> Option<TtftSplit<'_>> {
    let usable = |s: &Summary| s.count > 0 && s.p50.is_some_and(|v| v.is_finite() && v > 0.0);
    if usable(&p.ttft_hit) && usable(&p.ttft_miss) {
        return Some(TtftSplit {
            fast: ("hits", "ttft_hit", &p.ttft_hit),
            slow: ("misses", "ttft_miss", &p.ttft_miss),
        });
    }
    let (later, first) = (p.ttft_later_turns.as_ref()?, p.ttft_first_turn.as_ref()?);
    (usable(later) && usable(first)).then_some(TtftSplit {
        fast: ("later turns", "ttft_later_turns", later),
        slow: ("first turns", "ttft_first_turn", first),
    })
}

/// The engine's prefix cache as measured, with what the load could have hit.
pub struct PrefixCache;
impl Detector for PrefixCache {
    fn id(&self) -> &'static str {
        "prefix_cache"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let r = PrefixCacheReading::read(cx)?;
        let mut parts = Vec::new();
        let mut ev = Vec::new();
        let (text, e) = rate_text(cx, &r);
        parts.push(text);
        ev.extend(e);
        for (text, e) in [off_text(cx, &r), thrash_text(cx, &r), ttft_text(cx, &r)]
            .into_iter()
            .flatten()
        {
            parts.push(text);
            ev.extend(e);
        }
        let warn = r.thrashing || r.off_with_repeats().is_some();
        let severity = if warn {
            Severity::Warning
        } else {
            Severity::Info
        };
        let confidence = if r.counted.is_some() { 0.8 } else { 0.5 };
        Some(finding(
            self.id(),
            severity,
            None,
            confidence,
            parts.join("; "),
            ev,
        ))
    }
}

/// A 0..1 share as a whole percent (`0.694` → `69%`): the finding's and its advice's wording.
pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A fact of the load itself (its prompt reuse), as evidence.
fn load_evidence(
    cx: &Context,
    signal: &'static str,
    statistic: &'static str,
    value: f64,
    test: &'static str,
    threshold: Option<f64>,
) -> Evidence {
    Evidence {
        signal: signal.into(),
        source: "load generator".into(),
        window: cx.input.load.window,
        statistic: statistic.into(),
        value,
        test: test.into(),
        threshold,
    }
}

/// The measured hit rate (or why it is unknown), and what the load repeats.
fn rate_text(cx: &Context, r: &PrefixCacheReading) -> (String, Vec<Evidence>) {
    let mut ev = Vec::new();
    let where_ = if r.steady {
        "steady window"
    } else {
        "load window"
    };
    let mut text = match r.counted {
        Some(c) => {
            ev.push(r.evidence(
                cx,
                Concept::PrefixCacheQueries,
                "increase",
                c.queries,
                "",
                None,
            ));
            ev.push(r.evidence(cx, Concept::PrefixCacheHits, "increase", c.hits, "", None));
            format!(
                "the prefix cache hit {} of the {} prompt tokens the engine looked up over the {where_} ({} tokens)",
                pct(c.rate()),
                thousands(c.queries),
                thousands(c.hits)
            )
        }
        None => unknown_rate(cx),
    };
    if let Some(p) = r.prefix {
        text += &load_side(cx, r, p, &mut ev);
    }
    (text, ev)
}

/// Why the engine's hit rate is not known: never read as 0.
fn unknown_rate(cx: &Context) -> String {
    let present = cx.input.signal(Concept::PrefixCacheQueries).is_some()
        && cx.input.signal(Concept::PrefixCacheHits).is_some();
    if present {
        "the engine's prefix-cache hit rate is unknown: its counters (vllm:prefix_cache_hits_total, vllm:prefix_cache_queries_total) recorded no lookup over the window".to_owned()
    } else {
        "the engine's prefix-cache hit rate is unknown: vllm:prefix_cache_hits_total and vllm:prefix_cache_queries_total (vLLM < 0.9.2: vllm:gpu_prefix_cache_hits_total, vllm:gpu_prefix_cache_queries_total) have no readings — absent, not 0; expose and scrape them".to_owned()
    }
}

/// What the load repeats and what the server reported cached, against the measured rate.
fn load_side(
    cx: &Context,
    r: &PrefixCacheReading,
    p: &PrefixReuse,
    ev: &mut Vec<Evidence>,
) -> String {
    let mut text = String::new();
    if let (Some(share), Some(repeated)) = (p.repeated_share(), p.repeated_tokens) {
        text += &format!(
            "; the load repeats {} of its prompt tokens ({} of {}: what a cache large enough would hit)",
            pct(share),
            thousands(repeated as f64),
            thousands(p.prompt_tokens as f64)
        );
        ev.push(load_evidence(
            cx,
            "load_prefix_reuse",
            "repeated_share",
            share,
            "",
            None,
        ));
        if let Some(c) = r.counted {
            let short = c.rate() < FALLS_SHORT * share;
            if short && share >= REPEATED_SHARE {
                text += &format!(
                    ", so the cache hit under half of what it could ({} of {})",
                    pct(c.rate()),
                    pct(share)
                );
            }
            let test = if short { "<" } else { ">=" };
            ev.push(r.evidence(
                cx,
                Concept::PrefixCacheHits,
                "hit_rate",
                c.rate(),
                test,
                Some(FALLS_SHORT * share),
            ));
        }
    }
    if let Some(cached) = p.cached_share() {
        text += &format!(
            "; the server reported {} of the load's prompt tokens cached ({} tokens, in the usage of {} requests)",
            pct(cached),
            thousands(p.cached_tokens as f64),
            thousands(p.reported as f64)
        );
        ev.push(load_evidence(
            cx,
            "load_prefix_reuse",
            "cached_share",
            cached,
            "",
            None,
        ));
    }
    text
}

fn off_text(cx: &Context, r: &PrefixCacheReading) -> Option<(String, Vec<Evidence>)> {
    let repeated = r.off_with_repeats()?;
    let text = format!(
        "prefix caching is off (vllm:cache_config_info enable_prefix_caching=False) while the load repeats {} of its prompt tokens: every repeated prefix is prefilled again — enable prefix caching",
        pct(repeated)
    );
    let ev = vec![load_evidence(
        cx,
        "load_prefix_reuse",
        "repeated_share",
        repeated,
        ">=",
        Some(REPEATED_SHARE),
    )];
    Some((text, ev))
}

/// The cache losing blocks under KV pressure, by the KV split or against the repeat share.
fn thrash_text(cx: &Context, r: &PrefixCacheReading) -> Option<(String, Vec<Evidence>)> {
    if !r.thrashing {
        return None;
    }
    let mut ev = Vec::new();
    if let Some(m) = r.kv_max {
        ev.push(r.evidence(
            cx,
            Concept::KvUsage,
            "max",
            m,
            if m >= KV_HIGH { ">=" } else { "<" },
            Some(KV_HIGH),
        ));
    }
    if let Some(p) = r.preemptions.filter(|p| *p > 0.0) {
        ev.push(r.evidence(cx, Concept::Preemptions, "increase", p, ">", Some(0.0)));
    }
    let text = match r.split.filter(KvSplit::falls) {
        Some(s) => {
            let (high, low) = (s.high.rate(), s.low.rate());
            ev.push(r.evidence(
                cx,
                Concept::PrefixCacheHits,
                "hit_rate_kv_high",
                high,
                "<",
                Some(FALLS_SHORT * low),
            ));
            ev.push(r.evidence(
                cx,
                Concept::PrefixCacheHits,
                "hit_rate_kv_low",
                low,
                ">=",
                Some(MIN_LOW_RATE),
            ));
            format!(
                "under KV pressure (KV ≥ {}) the hit rate fell to {} ({} intervals, {} tokens looked up) from {} below it ({} intervals, {} tokens): the cache evicts prefix blocks it would have reused",
                pct(KV_HIGH),
                pct(high),
                s.high.intervals,
                thousands(s.high.queries),
                pct(low),
                s.low.intervals,
                thousands(s.low.queries)
            )
        }
        None => format!(
            "the cache hits under half of what the load repeats while {}: it evicts prefix blocks before they are reused",
            r.pressure_words()
        ),
    };
    Some((text, ev))
}

fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{} ms", thousands(v))
    }
}

/// TTFT of hits against misses (or later turns against first ones), and how much faster.
fn ttft_text(cx: &Context, r: &PrefixCacheReading) -> Option<(String, Vec<Evidence>)> {
    let t = ttft(r.prefix?)?;
    let ((fast_name, fast_signal, fast), (slow_name, slow_signal, slow)) = (t.fast, t.slow);
    let (f, s) = (fast.p50?, slow.p50?);
    let head = format!(
        "{fast_name} reached their first token in {} (p50 of {}) against {} for {slow_name} (p50 of {})",
        ms(f),
        fast.count,
        ms(s),
        slow.count
    );
    let (mut text, test) = if f < s {
        (format!("{head}: {:.1}× faster", s / f), "<")
    } else {
        (format!("{head}: no faster"), ">=")
    };
    // TTFT holds the time queued: with a queue, later requests (the hits of a warm cache) wait
    // longer than the first ones, and the split says more about the queue than about prefill.
    if cx.queued() {
        text += " — both include time queued in the engine, which had a queue; compare them under a load that forms none (concurrency at or under --max-num-seqs)";
    }
    let ev = vec![
        load_evidence(cx, fast_signal, "p50_ms", f, test, Some(s)),
        load_evidence(cx, slow_signal, "p50_ms", s, "", None),
    ];
    Some((text, ev))
}

#[cfg(test)]
mod tests;
