#!/usr/bin/env bash
# Throughput ceiling of the simulator: `llmscope sim --preset bench-tiny` driven by `llmscope load`
# at 1,000 and 5,000 concurrent streams, with vLLM's --stream-interval 1 (a chunk per token) and 8.
# Prints streamed tokens/s (the server's usage counts), achieved concurrency and the CPU used by
# the simulator and by the client, per run. Loopback only; every run is bounded.
#
#   scripts/bench-sim.sh            # 20 s per run
#   DURATION=10s scripts/bench-sim.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20s}
cargo build --release -q -p llmscope
BIN=target/release/llmscope
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

printf '%-9s %-8s %12s %12s %10s %10s %8s\n' interval streams "tok/s" "req/s" "sim CPU" "load CPU" errors
for interval in 1 8; do
  "$BIN" sim --preset bench-tiny --port 0 --dcgm-port 0 --stream-interval "$interval" >"$TMP/sim.out" 2>"$TMP/sim.err" &
  sim=$!
  for _ in $(seq 50); do grep -q '^vllm ' "$TMP/sim.out" 2>/dev/null && break; sleep 0.1; done
  url=$(awk '/^vllm /{print $2}' "$TMP/sim.out")
  for streams in 1000 5000; do
    before=$(cpu_ticks "$sim"); t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$TMP/time" "$BIN" load --target "$url" --concurrency "$streams" \
      --duration "$DURATION" --output-tokens 256 --format json >"$TMP/load.json" 2>/dev/null || true
    t1=$(date +%s.%N); after=$(cpu_ticks "$sim")
    python3 - "$TMP/load.json" "$TMP/time" "$before" "$after" "$t0" "$t1" "$hz" "$interval" "$streams" <<'PY'
import json, sys
load, timef, before, after, t0, t1, hz, interval, streams = sys.argv[1:]
d = json.load(open(load))
wall = float(t1) - float(t0)
sim_cpu = (int(after) - int(before)) / int(hz) / wall * 100
u, s = map(float, open(timef).read().split()[-2:])
load_cpu = (u + s) / wall * 100
tp = d["throughput"]
print(f"{interval:<9} {streams:<8} {tp['output_tokens_per_s']:>12.0f} {tp['requests_per_s']:>12.1f} "
      f"{sim_cpu:>9.0f}% {load_cpu:>9.0f}% {d['requests']['failed']:>8}  "
      f"(achieved concurrency {d['load'].get('achieved')})")
PY
  done
  kill "$sim"; wait "$sim" 2>/dev/null || true
done
