//! Fuzz target: lenient and strict parsing of arbitrary bytes in both formats, with the
//! invariants checked by `promtext::fuzz_parse` (which property tests also run).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    promtext::fuzz_parse(data);
});
