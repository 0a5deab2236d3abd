//! Default histogram bucket bounds (the finite `le` values) of the engines' latency histograms,
//! from vLLM's `vllm/v1/metrics/buckets.py` (`docs/SOURCES.md` §buckets). A quantile
//! is interpolated inside the buckets, so it can never exceed the top finite bound (it comes
//! back as that bound) and cannot tell apart values under the lowest one.

use super::model::Version;

/// vLLM 0.8.4 (≈; commit 86fc2321f, 2025-04-06) extended the TTFT, TPOT and request-latency
/// buckets upwards; before it they ended at 10 s, 2.5 s and 60 s.
const VLLM_LONG_BUCKETS: Version = Version::new(0, 8, 4);

const TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
const ITL: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
const REQUEST_LATENCY: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// The finite bucket bounds `family` (a base name) has by default in `version` of its exporter
/// (the newest when `None`), ascending; `None` when the catalog does not know them.
pub fn bounds(family: &str, version: Option<Version>) -> Option<&'static [f64]> {
    let old = version.is_some_and(|v| v < VLLM_LONG_BUCKETS);
    let cut = |all: &'static [f64], top: f64| -> &'static [f64] {
        if old {
            let n = all.iter().take_while(|b| **b <= top).count();
            &all[..n]
        } else {
            all
        }
    };
    Some(match family {
        "vllm:time_to_first_token_seconds" => cut(TTFT, 10.0),
        "vllm:time_per_output_token_seconds" => cut(ITL, 2.5),
        "vllm:inter_token_latency_seconds" | "vllm:request_time_per_output_token_seconds" => ITL,
        "vllm:e2e_request_latency_seconds"
        | "vllm:request_queue_time_seconds"
        | "vllm:request_inference_time_seconds"
        | "vllm:request_prefill_time_seconds"
        | "vllm:request_decode_time_seconds" => cut(REQUEST_LATENCY, 60.0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_version() {
        let top = |f: &str, v: Option<Version>| *bounds(f, v).unwrap().last().unwrap();
        assert_eq!(top("vllm:e2e_request_latency_seconds", None), 7680.0);
        assert_eq!(
            top(
                "vllm:e2e_request_latency_seconds",
                Some(Version::new(0, 6, 4))
            ),
            60.0
        );
        assert_eq!(
            top(
                "vllm:time_to_first_token_seconds",
                Some(Version::new(0, 8, 3))
            ),
            10.0
        );
        assert_eq!(top("vllm:inter_token_latency_seconds", None), 80.0);
        assert!(bounds("vllm:num_requests_running", None).is_none());
        for f in [
            "vllm:time_to_first_token_seconds",
            "vllm:e2e_request_latency_seconds",
        ] {
            let b = bounds(f, None).unwrap();
            assert!(b.windows(2).all(|w| w[0] < w[1]), "{f} ascending");
        }
    }
}
