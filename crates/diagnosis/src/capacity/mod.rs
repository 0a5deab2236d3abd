//! Capacity: the load at which a deployment stops scaling (its knee), found by measuring as few
//! loads as the answer needs.
//!
//! A [`Search`] proposes the next load ([`Search::next`]); the caller measures a stage there —
//! its steady window, diagnosed like any run — and records what it served
//! ([`Search::record`]). The search is a pure function of the stages recorded so far, so a
//! stage measured again, out of order or by another process changes nothing but the answer.
//!
//! **The knee** is the smallest load whose output throughput reaches [`KNEE_SHARE`] of the most
//! any measured load reached. Past it, added load turns into queueing, not output: by Little's
//! law requests in flight = throughput × latency, so with throughput flat every added client
//! adds latency and nothing else.
//!
//! **The ladder** doubles the load from `start` until one of: the last doubling added less
//! than [`PLATEAU_GAIN`] of output (throughput stopped growing), goodput under the SLO fell
//! by more than [`GOODPUT_DROP`] from the rung below, the last rung's verdict is the batch
//! limit ([`Served::saturated`]: the batch cannot grow past the cap, so added load only queues), or
//! `max` was measured. The verdict stop is what keeps the answer where the cause is on an
//! engine whose throughput wanders by more than [`PLATEAU_GAIN`] from stage to stage (a CPU
//! engine sharing two cores with its client read 147, 157, 167 tok/s at 4, 8, 16 clients with
//! its batch pinned at a cap of 2: each doubling "grew", and the ladder climbed into noise). **Then it
//! bisects** between the largest load below the knee share and the smallest at it, until they
//! are one unit apart, so a knee at 12 is not reported as "8 or 16".

pub mod answer;

pub use answer::{Answer, Axis, Ended, Stage};

use std::collections::BTreeMap;

/// Share of the peak throughput at which the knee is reached.
pub const KNEE_SHARE: f64 = 0.95;
/// A doubling of the load that adds less than this share of output ends the ladder.
pub const PLATEAU_GAIN: f64 = 0.05;
/// Goodput falling by more than this share from the rung below ends the ladder.
pub const GOODPUT_DROP: f64 = 0.05;

/// What one stage served, as the search reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    /// Output tokens per second over the stage's steady window.
    pub output_tok_s: f64,
    /// Requests per second meeting every objective, when an SLO was given.
    pub goodput_rps: Option<f64>,
    /// The stage's verdict is the batch limit: the batch at `--max-num-seqs` with a queue
    /// behind it cannot grow, so more load only queues. (KV-cache capacity is not: a pool that
    /// preempts still admits more short requests as load grows — on the simulator's KV-starved
    /// preset preemptions start at 16 clients and the output grows to 19.)
    pub saturated: bool,
}

/// Why the ladder stopped climbing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The last doubling added less than [`PLATEAU_GAIN`] of output.
    Plateau,
    /// Goodput under the SLO fell from the rung below.
    GoodputFell,
    /// The last rung's verdict is the batch limit ([`Served::saturated`]).
    Saturated,
    /// The largest load allowed was measured.
    MaxLoad,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Measure a stage at this load.
    Measure(u32),
    /// The search is over: the knee, or `None` when no stage served any output.
    Done(Option<Knee>),
}

/// Where the knee is, as far as the stages recorded show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knee {
    /// The smallest load measured at [`KNEE_SHARE`] of the peak.
    pub load: u32,
    /// The largest load measured below it, if any: the knee lies in `(below, load]`.
    pub below: Option<u32>,
    /// The highest throughput any load reached, and where.
    pub peak: (u32, f64),
    /// Why the ladder stopped (`None`: it has not yet).
    pub stop: Option<Stop>,
}

impl Knee {
    /// Whether the knee is pinned to one unit (`below` is one less, or `load` is the first rung).
    pub fn exact(&self) -> bool {
        self.stop.is_some() && self.below.is_none_or(|b| self.load - b <= 1)
    }
}

/// The search over one load axis (closed-loop concurrency, or an open-loop rate in whole
/// requests per second).
#[derive(Debug, Clone)]
pub struct Search {
    start: u32,
    max: u32,
    stages: BTreeMap<u32, Served>,
}

impl Search {
    /// A search from `start` (at least 1) up to `max` (at least `start`).
    pub fn new(start: u32, max: u32) -> Search {
        let start = start.max(1);
        Search {
            start,
            max: max.max(start),
            stages: BTreeMap::new(),
        }
    }

    /// Records what a stage at `load` served (a later record of the same load replaces it).
    pub fn record(&mut self, load: u32, served: Served) {
        self.stages.insert(load, served);
    }

    /// The stages recorded, by load.
    pub fn stages(&self) -> &BTreeMap<u32, Served> {
        &self.stages
    }

    /// The next load to measure, or the knee.
    pub fn next(&self) -> Next {
        let Some(stop) = self.stopped() else {
            let last = self.rungs().last().copied();
            return Next::Measure(last.map_or(self.start, |l| l.saturating_mul(2).min(self.max)));
        };
        let Some(knee) = self.knee_with(Some(stop)) else {
            return Next::Done(None);
        };
        match knee.below {
            Some(b) if knee.load - b > 1 => Next::Measure(b + (knee.load - b) / 2),
            _ => Next::Done(Some(knee)),
        }
    }

    /// The knee as the stages so far show it: after a stop, its bracket; before, "at least"
    /// the peak so far (`stop` is `None`). `None` before any stage.
    pub fn knee(&self) -> Option<Knee> {
        self.knee_with(self.stopped())
    }

    fn knee_with(&self, stop: Option<Stop>) -> Option<Knee> {
        let peak = self
            .stages
            .iter()
            .map(|(l, s)| (*l, s.output_tok_s))
            .filter(|(_, t)| t.is_finite() && *t >= 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let at_share = |t: f64| t >= KNEE_SHARE * peak.1;
        let load = *self
            .stages
            .iter()
            .find(|(_, s)| at_share(s.output_tok_s))?
            .0;
        let below = self.stages.range(..load).next_back().map(|(l, _)| *l);
        Some(Knee {
            load,
            below,
            peak,
            stop,
        })
    }

    /// The ladder's rungs measured so far: `start`, then each doubling, capped at `max`.
    fn rungs(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut l = self.start;
        while self.stages.contains_key(&l) {
            out.push(l);
            if l >= self.max {
                break;
            }
            l = l.saturating_mul(2).min(self.max);
        }
        out
    }

    /// Why the ladder stopped, if it has.
    fn stopped(&self) -> Option<Stop> {
        let rungs = self.rungs();
        let last = *rungs.last()?;
        if let [.., a, b] = rungs[..] {
            let (a, b) = (self.stages[&a], self.stages[&b]);
            if b.output_tok_s < (1.0 + PLATEAU_GAIN) * a.output_tok_s {
                return Some(Stop::Plateau);
            }
            if let (Some(ga), Some(gb)) = (a.goodput_rps, b.goodput_rps)
                && gb < (1.0 - GOODPUT_DROP) * ga
            {
                return Some(Stop::GoodputFell);
            }
        }
        if self.stages[&last].saturated {
            return Some(Stop::Saturated);
        }
        (last >= self.max).then_some(Stop::MaxLoad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(t: f64) -> Served {
        Served {
            output_tok_s: t,
            goodput_rps: None,
            saturated: false,
        }
    }

    /// Runs a search against `f` (load → output tok/s); the loads it measured and its answer.
    fn run(start: u32, max: u32, f: impl Fn(u32) -> Served) -> (Vec<u32>, Option<Knee>) {
        let mut s = Search::new(start, max);
        let mut measured = Vec::new();
        for _ in 0..64 {
            match s.next() {
                Next::Measure(l) => {
                    measured.push(l);
                    s.record(l, f(l));
                }
                Next::Done(k) => return (measured, k),
            }
        }
        panic!("the search did not end: {measured:?}");
    }

    /// The knee by brute force: every load from 1 to `max` measured, the smallest at the share.
    fn fine_knee(max: u32, f: impl Fn(u32) -> Served) -> u32 {
        let all: Vec<f64> = (1..=max).map(|l| f(l).output_tok_s).collect();
        let peak = all.iter().copied().fold(f64::MIN, f64::max);
        (1..=max)
            .find(|l| all[*l as usize - 1] >= KNEE_SHARE * peak)
            .unwrap()
    }

    /// A batch cap: throughput grows with load up to `cap`, then stays.
    fn capped(cap: u32) -> impl Fn(u32) -> Served {
        move |l| served(100.0 * f64::from(l.min(cap)))
    }

    #[test]
    fn a_cap_of_12_is_found_at_12_not_8_or_16() {
        let (measured, k) = run(1, 256, capped(12));
        let k = k.unwrap();
        assert_eq!(k.load, 12, "{measured:?} {k:?}");
        assert_eq!(k.below, Some(11));
        assert_eq!(k.stop, Some(Stop::Plateau));
        assert!(k.exact());
        assert!(measured.len() <= 12, "{measured:?}");
    }

    #[test]
    fn every_cap_from_1_to_100_lands_on_the_brute_force_knee() {
        for cap in 1..=100 {
            let (measured, k) = run(1, 512, capped(cap));
            let k = k.unwrap();
            assert_eq!(
                k.load,
                fine_knee(512, capped(cap)),
                "cap {cap}: {measured:?} {k:?}"
            );
            assert!(k.exact(), "cap {cap}: {k:?}");
            assert!(measured.len() <= 20, "cap {cap}: {measured:?}");
        }
    }

    #[test]
    fn the_largest_load_ends_the_ladder_and_says_so() {
        let (measured, k) = run(1, 20, capped(1_000));
        let k = k.unwrap();
        assert_eq!(k.stop, Some(Stop::MaxLoad), "{measured:?}");
        assert_eq!(k.load, fine_knee(20, capped(1_000)), "{measured:?} {k:?}");
        assert_eq!(*measured.iter().max().unwrap(), 20);
    }

    #[test]
    fn goodput_falling_ends_the_ladder() {
        // Throughput still grows, but the SLO's goodput collapses past 8.
        let f = |l: u32| Served {
            output_tok_s: 100.0 * f64::from(l),
            goodput_rps: Some(if l <= 8 { f64::from(l) } else { 1.0 }),
            saturated: false,
        };
        let (measured, k) = run(1, 256, f);
        assert_eq!(k.unwrap().stop, Some(Stop::GoodputFell), "{measured:?}");
        assert_eq!(*measured.iter().max().unwrap(), 16, "{measured:?}");
    }

    #[test]
    fn before_a_stop_the_knee_is_at_least_the_best_so_far() {
        let mut s = Search::new(1, 64);
        assert_eq!(s.knee(), None);
        for l in [1, 2, 4] {
            s.record(l, served(f64::from(l)));
        }
        let k = s.knee().unwrap();
        assert_eq!((k.load, k.stop), (4, None));
        assert!(!k.exact());
    }

    #[test]
    fn a_throughput_that_falls_past_the_peak_keeps_the_knee_at_the_peak() {
        // KV thrash: preemptions past 24 cost more than the added batch brings.
        let f = |l: u32| {
            let l = f64::from(l);
            served(if l <= 24.0 {
                10.0 * l
            } else {
                240.0 - 4.0 * (l - 24.0)
            })
        };
        let (measured, k) = run(1, 256, f);
        let k = k.unwrap();
        assert_eq!(k.load, fine_knee(256, f), "{measured:?} {k:?}");
        assert_eq!(k.peak.0, 24, "{k:?}");
    }

    /// The CI run of the real engine at `--max-num-seqs 2` (crates/cli/tests/real_vllm): the
    /// engine's output at each load, its batch pinned at the cap with a queue from 4 clients.
    /// Noise made every doubling look like growth; the verdict stops the ladder where the cause
    /// is, and the knee lands near the cap.
    #[test]
    fn a_saturated_verdict_stops_the_ladder_where_noise_would_climb_on() {
        let engine = [
            (1, 88.0),
            (2, 128.0),
            (3, 141.0),
            (4, 147.0),
            (8, 157.0),
            (16, 167.0),
        ];
        let f = |l: u32| {
            let t = engine
                .iter()
                .find(|(x, _)| *x == l)
                .map_or(150.0, |(_, t)| *t);
            Served {
                output_tok_s: t,
                goodput_rps: None,
                saturated: l >= 4,
            }
        };
        let (measured, k) = run(1, 16, f);
        let k = k.unwrap();
        assert_eq!(k.stop, Some(Stop::Saturated), "{measured:?}");
        assert_eq!(measured, vec![1, 2, 4, 3], "{k:?}");
        assert_eq!(k.load, 3, "{measured:?} {k:?}");
        // Without the verdict the same readings climb to the largest load.
        let (measured, k) = run(1, 16, |l| Served {
            saturated: false,
            ..f(l)
        });
        assert_eq!(k.unwrap().stop, Some(Stop::MaxLoad), "{measured:?}");
    }

    #[test]
    fn a_first_rung_already_saturated_is_the_knee() {
        let (measured, k) = run(1, 64, |l| Served {
            output_tok_s: 50.0 + f64::from(l),
            goodput_rps: None,
            saturated: true,
        });
        let k = k.unwrap();
        assert_eq!(
            (measured, k.load, k.stop),
            (vec![1], 1, Some(Stop::Saturated))
        );
    }

    #[test]
    fn nonsense_readings_neither_panic_nor_loop() {
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            let (measured, k) = run(1, 64, |_| served(bad));
            assert_eq!(k, None, "{bad}: {measured:?}");
        }
        let (_, k) = run(1, 64, |_| served(0.0));
        assert_eq!(k.map(|k| k.load), Some(1));
    }
}
