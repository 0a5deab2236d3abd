//! Trace files as their publishers write them (issue 27): the real samples in
//! `tests/fixtures/traces/` (sources in its `SOURCES.md`) read in time order, with their lengths and
//! shared blocks.

use llmscope_loadgen::trace::{self, MOONCAKE_BLOCK_TOKENS, TraceFormat};
use std::collections::HashSet;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn mooncakes_conversation_trace() {
    let t = trace::parse(&fixture("mooncake.jsonl"), TraceFormat::Mooncake, false).unwrap();
    assert_eq!(t.requests.len(), 205);
    let first = &t.requests[0];
    assert_eq!(
        (first.offset_s, first.input_tokens, first.output_tokens),
        (0.0, 6758, 500)
    );
    // Milliseconds: its last request arrives 74.999 s in.
    assert!((t.requests[204].offset_s - 74.999).abs() < 1e-9);
    assert!(
        t.requests
            .windows(2)
            .all(|w| w[0].offset_s <= w[1].offset_s)
    );
    // One block id per 512 prompt tokens, and later requests reuse earlier prefixes.
    for r in &t.requests {
        let blocks = r.input_tokens.div_ceil(MOONCAKE_BLOCK_TOKENS) as usize;
        assert_eq!(r.hash_ids.len(), blocks, "line {}", r.line);
    }
    let mut seen = HashSet::new();
    let reused = t
        .requests
        .iter()
        .filter(|r| {
            let again = r.hash_ids.iter().skip(1).any(|id| seen.contains(id));
            seen.extend(r.hash_ids.iter().copied());
            again
        })
        .count();
    assert_eq!(
        reused, 8,
        "requests that reuse an earlier block (besides block 0)"
    );
}

#[test]
fn azures_conversation_trace_with_crlf_lines() {
    let text = fixture("azure-conv.csv");
    assert!(text.contains("\r\n"), "the published file's line ends");
    let t = trace::parse(&text, TraceFormat::Azure, false).unwrap();
    assert_eq!(t.requests.len(), 429);
    assert_eq!(
        (t.requests[0].input_tokens, t.requests[0].output_tokens),
        (374, 44)
    );
    // 2023-11-16 18:15:46.6805900 is the first arrival; the rest are offsets from it.
    assert_eq!(t.requests[0].offset_s, 0.0);
    let span = t.requests.last().unwrap().offset_s;
    assert!(span > 1.0 && span < 3600.0, "{span}");
}

#[test]
fn a_real_trace_cut_short_is_named_at_its_last_line() {
    let text = fixture("mooncake.jsonl");
    let cut = &text[..text.len() - 40];
    let e = trace::parse(cut, TraceFormat::Mooncake, false).unwrap_err();
    assert_eq!(e.line, 205);
    let t = trace::parse(cut, TraceFormat::Mooncake, true).unwrap();
    assert_eq!((t.requests.len(), t.skipped), (204, 1));
    // Read with the wrong format, the first line says so.
    let e = trace::parse(&text, TraceFormat::Azure, false).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.why.contains("--trace-format"), "{e}");
}

proptest::proptest! {
    /// Any text, in any format, with or without skipping: an answer or a named line, never a
    /// panic; and what parses can be cut, scaled and turned into send offsets.
    #[test]
    fn any_text_parses_or_names_a_line(
        text in "[0-9a-zA-Z{}\\[\\]\":,. \\-\\n_]{0,300}",
        skip in proptest::bool::ANY,
    ) {
        for format in [TraceFormat::Mooncake, TraceFormat::Burstgpt, TraceFormat::Azure, TraceFormat::Jsonl] {
            match trace::parse(&text, format, skip) {
                Ok(t) => {
                    proptest::prop_assert!(!t.requests.is_empty());
                    let offsets = t.window(0.0, None).scaled(1e3).offsets();
                    proptest::prop_assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
                }
                Err(e) => proptest::prop_assert!(e.line >= 1 && !e.why.is_empty()),
            }
        }
    }
}
