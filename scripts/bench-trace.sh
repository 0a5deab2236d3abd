#!/usr/bin/env bash
# Schedule fidelity of trace replay (issue 27): a JSONL trace of REQUESTS requests at RATE req/s
# (evenly spaced, 16-token prompts, 4-token answers) replayed by `llmscope load --trace` against
# `llmscope sim --preset bench-tiny`; prints the send-time lag behind each request's trace offset
# (the load report's `load.schedule_lag_ms`) and how many requests were sent and completed.
# Loopback only; bounded by the trace's length.
#
#   scripts/bench-trace.sh                     # 5,000 requests at 1,000 req/s
#   RATE=2000 REQUESTS=10000 scripts/bench-trace.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1000}
REQUESTS=${REQUESTS:-5000}
cargo build --release -q -p llmscope
BIN=target/release/llmscope
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

python3 - "$TMP/trace.jsonl" "$RATE" "$REQUESTS" <<'PY'
import json, sys
path, rate, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    for i in range(n):
        f.write(json.dumps({"timestamp": i / rate, "input_tokens": 16, "output_tokens": 4}) + "\n")
PY
"$BIN" sim --preset bench-tiny --port 0 --dcgm-port 0 >"$TMP/sim.out" 2>"$TMP/sim.err" &
for _ in $(seq 50); do grep -q '^vllm ' "$TMP/sim.out" 2>/dev/null && break; sleep 0.1; done
url=$(awk '/^vllm /{print $2}' "$TMP/sim.out")
"$BIN" load --target "$url" --trace "$TMP/trace.jsonl" --trace-format jsonl --format json \
  >"$TMP/load.json" 2>"$TMP/load.err"
python3 - "$TMP/load.json" "$RATE" "$REQUESTS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lag = r["load"]["schedule_lag_ms"]
req = r["requests"]
print(f"trace replay: {sys.argv[3]} requests at {sys.argv[2]} req/s; sent {req['sent']}, completed {req['completed']}, failed {req['failed']}")
print("send lag behind the trace offset (ms): " + "  ".join(f"{k} {lag.get(k)}" for k in ("p50", "p90", "p99", "p999", "max")))
PY
