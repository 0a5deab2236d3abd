#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for SECONDS each (default 30), coverage-guided, on the pinned
# stable toolchain: the targets are built with the SanitizerCoverage flags cargo-fuzz passes
# (`cargo fuzz run -s none`), so neither nightly nor cargo-fuzz is needed. Without AddressSanitizer
# (nightly only) a panic, an abort, a stack overflow, a >10 s input or >2 GiB RSS is a failure.
#
#   scripts/fuzz.sh          # 30 s per target
#   scripts/fuzz.sh 600      # longer, locally
#
# Seeds are the parsers' test fixtures; new inputs go to target/fuzz/corpus/TARGET (kept between
# local runs); a crashing input is written to target/fuzz/artifacts/TARGET/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-30}
HOST=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# --target keeps RUSTFLAGS off build scripts and proc macros (they are not linked with libFuzzer).
cargo build --release --manifest-path fuzz/Cargo.toml --target "$HOST" --target-dir target/fuzz
declare -A SEEDS=(
  [parse]="crates/promtext/tests/fixtures"
  [check]="crates/check/tests/fixtures"
)
for t in parse check; do
  corpus=target/fuzz/corpus/$t artifacts=target/fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  echo "== fuzz $t for ${SECONDS_EACH}s"
  "target/fuzz/$HOST/release/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" ${SEEDS[$t]}
done
