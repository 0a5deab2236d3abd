#!/usr/bin/env bash
# Collection and store figures (issue 4): direct scrape of many dcgm-size targets into SQLite,
# and the store's insert rate.
#
#   scripts/bench-collect.sh [TARGETS] [SECONDS] [INTERVAL_MS]     (defaults 1000 20 1000)
#
# 1. crates/collect/benches/scrape.rs: a child process serves TARGETS copies of the simulator's
#    dcgm page (each with its own GPU UUID) from one loopback axum server; the parent scrapes
#    them all at INTERVAL_MS through the real scrape loop and store writer thread, and prints
#    scrapes/s, samples stored/s and the scraper's own CPU (utime+stime from /proc/self/stat).
#    Goal: <= 25% of one core for 1,000 dcgm pages per second. It prints the whole run and the
#    steady state (after the first three intervals, in which all 24,000 series are registered).
#    A second run discards the batches instead of storing them, which splits the CPU between
#    scraping and the store.
# 2. crates/store/benches/insert.rs: 1,000 series x 300 scrapes, queued (coalesced commits) and
#    one commit per scrape, samples/s and samples per CPU-second.
# Other load on the machine inflates CPU figures: note `uptime` next to them.
set -euo pipefail
cd "$(dirname "$0")/.."

targets="${1:-1000}"
seconds="${2:-20}"
interval_ms="${3:-1000}"

cargo bench -q --no-run -p llmscope-collect -p llmscope-store >/dev/null
echo "load before: $(uptime)"
cargo bench -q -p llmscope-collect --bench scrape -- "$targets" "$seconds" "$interval_ms"
cargo bench -q -p llmscope-collect --bench scrape -- "$targets" "$seconds" "$interval_ms" discard
cargo bench -q -p llmscope-store --bench insert -- 1000 300
echo "load after:  $(uptime)"
