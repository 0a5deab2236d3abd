//! Fault injection for the simulated servers: what real fleets do to clients and scrapers.
//!
//! Every rate is a probability in 0..1, all 0 by default. Request faults are drawn once per
//! request from the seeded generator (so a run is reproducible): an HTTP 500 or 429 before
//! streaming starts, an HTTP 400 with a vLLM-shaped body (a request the server rejects, as an
//! over-long prompt is rejected), or, during the stream, a disconnect (connection closed without the final
//! chunk), a stall (no bytes for `stall`), or one malformed SSE event. Metrics faults apply per
//! scrape of either `/metrics` endpoint: 503 (down) or a garbage body.

use crate::rng::Rng;
use std::time::Duration;

/// Configured fault rates (with the `clap` feature, the `--fault-*` flags of the commands that
/// start the simulator).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Faults {
    /// Share of requests answered with HTTP 500.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-500",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub http_500: f64,
    /// Share of requests answered with HTTP 429.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-429",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub http_429: f64,
    /// Share of requests rejected with HTTP 400 and a vLLM-shaped error body.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-400",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub http_400: f64,
    /// Share of streams whose connection is closed mid-stream.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-disconnect",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub disconnect: f64,
    /// Share of streams that stop sending for --fault-stall-for.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-stall",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub stall: f64,
    /// How long a stalled stream sends nothing.
    #[cfg_attr(feature = "clap", arg(long = "fault-stall-for", default_value = "30s", value_parser = llmscope_core::duration::parse_duration, help_heading = "Fault injection"))]
    pub stall_for: Duration,
    /// Share of streams with one malformed (invalid JSON) SSE event.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-malformed",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub malformed: f64,
    /// Share of scrapes of either /metrics answered 503.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-metrics-down",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub metrics_down: f64,
    /// Share of scrapes of either /metrics answered with garbage.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "fault-metrics-garbage",
            default_value_t = 0.0,
            help_heading = "Fault injection"
        )
    )]
    pub metrics_garbage: f64,
    /// The engine hangs this long after start: it takes no more steps, while `/health` and
    /// `/metrics` keep answering — the gauges freeze where they were (arrivals still queue as
    /// waiting) and the progress counters stand still, as on a real vLLM whose worker is stuck
    /// (`crates/diagnosis/tests/fixtures/real-stalls`).
    #[cfg_attr(feature = "clap", arg(long = "fault-hang-after", value_parser = llmscope_core::duration::parse_duration, help_heading = "Fault injection"))]
    pub hang_after: Option<Duration>,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            http_500: 0.0,
            http_429: 0.0,
            http_400: 0.0,
            disconnect: 0.0,
            stall: 0.0,
            stall_for: Duration::from_secs(30),
            malformed: 0.0,
            metrics_down: 0.0,
            metrics_garbage: 0.0,
            hang_after: None,
        }
    }
}

/// Why a fault rate was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("fault rate {name} = {value} is not a probability; use a number from 0 to 1 (e.g. 0.05)")]
pub struct FaultRateError {
    pub name: &'static str,
    pub value: f64,
}

impl Faults {
    pub fn validate(&self) -> Result<(), FaultRateError> {
        let rates = [
            ("--fault-500", self.http_500),
            ("--fault-429", self.http_429),
            ("--fault-400", self.http_400),
            ("--fault-disconnect", self.disconnect),
            ("--fault-stall", self.stall),
            ("--fault-malformed", self.malformed),
            ("--fault-metrics-down", self.metrics_down),
            ("--fault-metrics-garbage", self.metrics_garbage),
        ];
        for (name, value) in rates {
            if !(0.0..=1.0).contains(&value) {
                return Err(FaultRateError { name, value });
            }
        }
        Ok(())
    }
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFault {
    None,
    Http500,
    Http429,
    Http400,
    /// Close the connection after this many content chunks.
    DisconnectAfter(u32),
    /// Stop sending for the stall duration after this many content chunks.
    StallAfter(u32),
    /// Replace this content chunk with invalid JSON.
    MalformedAt(u32),
}

impl Faults {
    /// Draws the fault of one request that will produce about `expected_tokens` tokens.
    pub fn draw(&self, rng: &mut Rng, expected_tokens: u32) -> RequestFault {
        let at = |rng: &mut Rng| 1 + rng.below(expected_tokens.max(2) as u64 - 1) as u32;
        if rng.chance(self.http_500) {
            RequestFault::Http500
        } else if rng.chance(self.http_429) {
            RequestFault::Http429
        } else if rng.chance(self.http_400) {
            RequestFault::Http400
        } else if rng.chance(self.disconnect) {
            RequestFault::DisconnectAfter(at(rng))
        } else if rng.chance(self.stall) {
            RequestFault::StallAfter(at(rng))
        } else if rng.chance(self.malformed) {
            RequestFault::MalformedAt(at(rng))
        } else {
            RequestFault::None
        }
    }
}

/// What happens to one scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrapeFault {
    None,
    Down,
    Garbage,
}

impl Faults {
    pub fn draw_scrape(&self, rng: &mut Rng) -> ScrapeFault {
        if rng.chance(self.metrics_down) {
            ScrapeFault::Down
        } else if rng.chance(self.metrics_garbage) {
            ScrapeFault::Garbage
        } else {
            ScrapeFault::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_faults_by_default() {
        let f = Faults::default();
        let mut rng = Rng::new(1);
        assert!((0..1000).all(|_| f.draw(&mut rng, 50) == RequestFault::None));
        assert!((0..1000).all(|_| f.draw_scrape(&mut rng) == ScrapeFault::None));
    }

    #[test]
    fn rates_are_respected_roughly() {
        let f = Faults {
            http_500: 0.5,
            ..Faults::default()
        };
        let mut rng = Rng::new(2);
        let n = (0..10_000)
            .filter(|_| f.draw(&mut rng, 50) == RequestFault::Http500)
            .count();
        assert!((4500..5500).contains(&n), "{n}");
    }

    #[test]
    fn every_request_can_be_rejected_with_400() {
        let f = Faults {
            http_400: 1.0,
            ..Faults::default()
        };
        let mut rng = Rng::new(3);
        assert!((0..100).all(|_| f.draw(&mut rng, 50) == RequestFault::Http400));
        let bad = Faults {
            http_400: -0.1,
            ..Faults::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("--fault-400")
        );
    }

    #[test]
    fn bad_rates_are_rejected_by_name() {
        let f = Faults {
            stall: 1.5,
            ..Faults::default()
        };
        assert!(
            f.validate()
                .unwrap_err()
                .to_string()
                .contains("--fault-stall")
        );
    }
}
