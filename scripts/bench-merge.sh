#!/usr/bin/env bash
# Sharded load and merge (issue 29), two figures:
# 1. merged vs one process: 3 `llmscope load --shard I/3` processes held to one --start-at, then one
#    process driving the same whole load (open loop, RATE req/s at constant spacing, DURATION), both
#    against `llmscope sim`; prints each figure of both and their ratio.
# 2. `llmscope merge` of RECORDS made-up requests in 3 shards (crates/loadgen/examples/
#    shard_fixture.rs): wall time and peak memory (targets: < 5 s, < 300 MiB), with the records
#    check (every request read, percentiles compared) on.
# Loopback only; bounded by DURATION.
#
#   scripts/bench-merge.sh                       # 8 req/s for 20 s; 1,000,000 records
#   RATE=40 PRESET=bench-tiny RECORDS=3000000 scripts/bench-merge.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-8}
DURATION=${DURATION:-20s}
PRESET=${PRESET:-l4-qwen2.5-3b}
RECORDS=${RECORDS:-1000000}
cargo build --release -q -p llmscope
cargo build --release -q -p llmscope-loadgen --example shard_fixture
BIN=target/release/llmscope
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

"$BIN" sim --preset "$PRESET" --port 0 --dcgm-port 0 >"$TMP/sim.out" 2>"$TMP/sim.err" &
for _ in $(seq 50); do grep -q '^vllm ' "$TMP/sim.out" 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^vllm /{print $2}' "$TMP/sim.out")
LOAD=(--target "$url" --rate "$RATE" --arrival constant --warmup 2s --duration "$DURATION" --max-tokens 16 --format json)
start=$(python3 -c 'import time; print(f"{time.time() + 2:.3f}")')
for i in 0 1 2; do
  "$BIN" load "${LOAD[@]}" --shard "$i/3" --start-at "$start" --out "$TMP/out" >/dev/null 2>"$TMP/shard$i.err" &
done
wait $(jobs -p | tail -3)
"$BIN" merge "$TMP/out" --format json >"$TMP/merged.json" || true
"$BIN" load "${LOAD[@]}" >"$TMP/single.json" 2>/dev/null
python3 - "$TMP/merged.json" "$TMP/single.json" "$RATE" "$DURATION" "$PRESET" <<'PY'
import json, sys
m, s = (json.load(open(p)) for p in sys.argv[1:3])
print(f"merged (3 shards) vs one process: open loop {sys.argv[3]} req/s constant for {sys.argv[4]}, sim --preset {sys.argv[5]}")
rows = [
    ("requests sent", ("requests", "sent")),
    ("req/s", ("throughput", "requests_per_s")),
    ("output tok/s while sending", ("throughput", "sending_output_tokens_per_s")),
    ("TTFT p50 ms", ("latency_ms", "ttft", "p50")),
    ("TTFT p95 ms", ("latency_ms", "ttft", "p95")),
    ("ITL p50 ms", ("latency_ms", "itl", "p50")),
    ("e2e p50 ms", ("latency_ms", "e2e", "p50")),
    ("e2e p95 ms", ("latency_ms", "e2e", "p95")),
]
def get(r, path):
    for k in path:
        r = r[k]
    return r
print(f"  {'figure':28} {'merged':>10} {'one':>10} {'ratio':>7}")
for name, path in rows:
    a, b = get(m, path), get(s, path)
    print(f"  {name:28} {a:>10.2f} {b:>10.2f} {a / b:>7.3f}")
sh = m["shards"]
rec = sh.get("records", {})
print(f"  shards agreed: {sh['agreed']}  stages began {sh['stage_start_spread_ms']} ms apart  records check: {rec.get('agree')} ({len(rec.get('percentiles', []))} percentiles)")
for p in sh["problems"]:
    print("  problem:", p)
PY

target/release/examples/shard_fixture "$TMP/big" 3 "$RECORDS"
du -sh "$TMP/big" | awk '{print "fixture: " $1 " on disk"}'
/usr/bin/time -f '%e %M' -o "$TMP/time" "$BIN" merge "$TMP/big" --format json >"$TMP/big.json"
read -r secs kib <"$TMP/time"
python3 - "$TMP/big.json" "$secs" "$kib" "$RECORDS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
secs, mib = float(sys.argv[2]), int(sys.argv[3]) / 1024
c = r["shards"]["records"]
print(f"merge of {int(sys.argv[4]):,} records in 3 shards: {secs:.2f} s wall (target < 5 s), peak RSS {mib:.0f} MiB (target < 300 MiB)")
print(f"  records read {c['records']:,}, merged sent {r['requests']['sent']:,}, records check agree: {c['agree']}")
PY
