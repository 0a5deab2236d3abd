#!/usr/bin/env bash
# What a change buys, predicted and then measured (issue 24): for each case, one `llmscope run`
# of a deployment, `llmscope whatif RUN --set CHANGE` (the engine model fitted to that run), then
# the changed deployment measured — on the simulated stack by `whatif --confirm`, on the real
# vLLM 0.32 (CPU build; `scripts/real-vllm.sh install`) by starting it changed and running again.
# Prints one row per case: predicted and measured output tok/s and TTFT p50, their error, the
# predicted and measured limit. Loopback only; each run is DURATION of load.
#
#   scripts/bench-whatif.sh              # simulator cases, and the real engine when installed
#   DURATION=30s REAL=0 scripts/bench-whatif.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20s}
REAL=${REAL:-1}
cargo build --release -q -p llmscope
BIN=$PWD/target/release/llmscope
TMP=$(mktemp -d)
trap 'for s in "$TMP"/server-*; do [ -e "$s" ] && bash scripts/real-vllm.sh stop "$(basename "$s" | cut -d- -f2-)" >/dev/null 2>&1; done; rm -rf "$TMP"' EXIT
DB="$TMP/runs.db"
ROWS="$TMP/rows.jsonl"

# row CASE CHANGE WHATIF_JSON MEASURED_JSON: one line of figures (MEASURED_JSON may be "-": the
# whatif JSON carries its own confirmation).
row() {
  python3 - "$@" >>"$ROWS" <<'PY'
import json, sys
case, change, w, m = sys.argv[1:5]
w = json.load(open(w))
p = w["predicted"]
if m == "-":
    c = w["confirmed"]
    got = {"tok": c["output_tok_s"], "ttft": c["ttft_ms"]["p50"], "limit": c["bottleneck"]}
else:
    r = json.load(open(m))
    cl = r["client"]["client"] if "client" in r["client"] else r["client"]
    got = {"tok": r["client"]["throughput"].get("sending_output_tokens_per_s") or r["client"]["throughput"]["output_tokens_per_s"],
           "ttft": r["client"]["latency_ms"]["ttft"]["p50"], "limit": r["verdict"]["bottleneck"]}
fit = w["fit"]["stages"][0]["error"]["output_tok_s"]
print(json.dumps({"case": case, "change": change, "fit_err": fit,
                  "base_tok": w["base"]["measured"]["output_tok_s"],
                  "pred_tok": p["output_tok_s"], "band": p["band"]["output_tok_s"], "pred_ttft": p["ttft_ms"]["p50"],
                  "pred_limit": p["bottleneck"], **got}))
PY
}

sim_case() { # NAME CHANGE RUN-FLAGS…
  local name=$1 change=$2; shift 2
  "$BIN" run --duration "$DURATION" --baseline 2s --db "$DB" --format json "$@" >"$TMP/base.json" 2>"$TMP/base.err"
  local run; run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/base.json")
  "$BIN" whatif "$run" --set "$change" --confirm --db "$DB" --format json >"$TMP/w.json" 2>"$TMP/w.err" || true
  row "$name" "$change" "$TMP/w.json" -
}

sim_case "sim l4-qwen2.5-3b cap 16, 32 clients" max-num-seqs=32
sim_case "sim l4-qwen2.5-3b cap 8, 32 clients" max-num-seqs=16 --max-num-seqs 8
sim_case "sim l4-qwen2.5-3b cap 16, 64 clients" max-num-seqs=32 --concurrency 64
sim_case "sim cpu-tiny cap 8, 32 clients, 64-token answers" max-num-seqs=16 --preset cpu-tiny --max-num-seqs 8 --max-tokens 64
sim_case "sim cpu-tiny 4 MiB KV, cap 16, 32 clients" kv-cache-memory-bytes=8388608 --preset cpu-tiny --kv-cache-memory-bytes 4194304 --max-model-len 2048 --max-tokens 64

real_run() { # NAME SERVER-ARGS… -- RUN-FLAGS… : prints the run JSON path
  local name=$1; shift
  local args=() port
  while [ "$1" != "--" ]; do args+=("$1"); shift; done; shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  bash scripts/real-vllm.sh start "bw-$name" --port "$port" "${args[@]}" >/dev/null
  touch "$TMP/server-bw-$name"
  # Warm the fresh server, as the real tier does.
  "$BIN" load --target "http://127.0.0.1:$port" --concurrency 16 --duration 6s --max-tokens 32 >/dev/null 2>&1
  "$BIN" run --target "http://127.0.0.1:$port" --duration "$DURATION" --baseline 2s --interval 500ms \
    --db "$DB" --format json "$@" >"$TMP/real-$name.json" 2>"$TMP/real-$name.err" || true
  bash scripts/real-vllm.sh stop "bw-$name" >/dev/null; rm -f "$TMP/server-bw-$name"
}

if [ "$REAL" = 1 ] && bash scripts/real-vllm.sh status >/dev/null 2>&1; then
  flags=(--concurrency 32 --max-tokens 128)
  real_run c8 --max-num-seqs 8 -- --max-num-seqs 8 "${flags[@]}"
  real_run c16 --max-num-seqs 16 -- --max-num-seqs 16 "${flags[@]}"
  run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/real-c8.json")
  "$BIN" whatif "$run" --set max-num-seqs=16 --db "$DB" --format json >"$TMP/w.json" 2>"$TMP/w.err" || true
  row "real vLLM cap 8 → 16, 32 clients, 128-token answers" max-num-seqs=16 "$TMP/w.json" "$TMP/real-c16.json"
  kv=(--concurrency 32 --max-tokens 64)
  real_run kv4 --max-num-seqs 16 --kv-bytes 4194304 -- --max-num-seqs 16 "${kv[@]}"
  real_run kv8 --max-num-seqs 16 --kv-bytes 8388608 -- --max-num-seqs 16 "${kv[@]}"
  run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/real-kv4.json")
  "$BIN" whatif "$run" --set kv-cache-memory-bytes=8388608 --db "$DB" --format json >"$TMP/w.json" 2>"$TMP/w.err" || true
  row "real vLLM KV 4 → 8 MiB, cap 16, 32 clients" kv-cache-memory-bytes=8388608 "$TMP/w.json" "$TMP/real-kv8.json"
else
  echo "(the real vLLM tier is not installed or REAL=0: simulator cases only)"
fi

python3 - "$ROWS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pct = lambda p, m: f"{(p / m - 1) * 100:+.0f}%" if p and m else "—"
print(f"{'case':52} {'change':34} {'fit':>5} {'now':>7} {'pred':>7} {'band':>13} {'meas':>7} {'err':>5} {'TTFT pred':>9} {'meas':>8} {'err':>5}  limit pred → meas")
for r in rows:
    band = f"{r['band'][0]:.0f}–{r['band'][1]:.0f}"
    ttft = lambda v: f"{v:.1f}" if v is not None else "—"
    print(f"{r['case']:52} {r['change']:34} {r['fit_err']*100:+4.0f}% {r['base_tok']:7.0f} {r['pred_tok']:7.0f} {band:>13} {r['tok']:7.0f} {pct(r['pred_tok'], r['tok']):>5} "
          f"{ttft(r['pred_ttft']):>9} {ttft(r['ttft']):>8} {pct(r['pred_ttft'], r['ttft']):>5}  {r['pred_limit']} → {r['limit']}")
PY
