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
#   SIM=0 scripts/bench-whatif.sh        # the cpu-tiny simulator cases and the real engine only
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
# whatif JSON carries its own confirmation); a whatif that could not predict leaves its words.
row() {
  python3 - "$@" >>"$ROWS" <<'PY'
import json, sys
case, change, w, m = sys.argv[1:5]
try:
    w = json.load(open(w))
except ValueError:
    err = open(w.replace(".json", ".err")).read().strip().splitlines()
    print(json.dumps({"case": case, "change": change, "error": err[-1] if err else "no output"}))
    sys.exit()
p = w["predicted"]
if m == "-":
    c = w["confirmed"]
    got = {"tok": c["output_tok_s"], "ttft": c["ttft_ms"]["p50"], "limit": c["bottleneck"]}
else:
    r = json.load(open(m))
    t = r["client"]["throughput"]
    got = {"tok": t.get("sending_output_tokens_per_s") or t["output_tokens_per_s"],
           "ttft": r["client"]["latency_ms"]["ttft"]["p50"], "limit": r["verdict"]["bottleneck"]}
fit = max((s["error"]["output_tok_s"] for s in w["fit"]["stages"]), key=abs)
print(json.dumps({"case": case, "change": change, "fit_err": fit,
                  "base_tok": w["base"]["measured"]["output_tok_s"],
                  "pred_tok": p["output_tok_s"], "band": p["band"]["output_tok_s"], "pred_ttft": p["ttft_ms"]["p50"],
                  "pred_limit": p["bottleneck"] + (f" (near {', '.join(p['near'])})" if p.get("near") else ""), **got}))
PY
}

run_id() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1"; }

# sim_case NAME CHANGE LIGHT RUN-FLAGS…: a run, with LIGHT=1 a second at 4 clients (a batch
# pinned at its cap, whose drain ends within one scrape, shows the fit one batch size only),
# then whatif --confirm.
sim_case() {
  local name=$1 change=$2 light=$3; shift 3
  local runs=()
  "$BIN" run --duration "$DURATION" --baseline 2s --db "$DB" --format json "$@" >"$TMP/base.json" 2>"$TMP/base.err"
  runs+=("$(run_id "$TMP/base.json")")
  if [ "$light" = 1 ]; then
    "$BIN" run --duration "$DURATION" --baseline 2s --db "$DB" --format json "$@" --concurrency 4 >"$TMP/light.json" 2>/dev/null
    runs+=("$(run_id "$TMP/light.json")")
  fi
  "$BIN" whatif "${runs[@]}" --set "$change" --confirm --db "$DB" --format json >"$TMP/w.json" 2>"$TMP/w.err" || true
  row "$name" "$change" "$TMP/w.json" -
}

if [ "${SIM:-1}" = 1 ]; then
  sim_case "sim l4-qwen2.5-3b cap 16, 32 clients" max-num-seqs=32 0
  sim_case "sim l4-qwen2.5-3b cap 8, 32 clients" max-num-seqs=16 0 --max-num-seqs 8
  sim_case "sim l4-qwen2.5-3b cap 16, 64 clients" max-num-seqs=32 0 --concurrency 64
fi
sim_case "sim cpu-tiny cap 8, 32 clients, 128-token answers (+ a 4-client run)" max-num-seqs=16 1 --preset cpu-tiny --max-num-seqs 8 --max-tokens 128
sim_case "sim cpu-tiny 4 MiB KV, cap 16, 32 clients" kv-cache-memory-bytes=8388608 0 --preset cpu-tiny --kv-cache-memory-bytes 4194304 --max-model-len 2048 --max-tokens 256 --interval 250ms --metrics-dialect 0.32

# real NAME SEARCH SERVER-ARGS… -- RUN-FLAGS…: a real vLLM started with SERVER-ARGS, warmed, then
# runs with RUN-FLAGS at 32 clients (into $TMP/real-NAME.json) and, for the fit's smaller batches,
# at 4 clients (into $TMP/real-NAME-light.json); with SEARCH=1 also a capacity search (64-token
# answers, up to 32 clients, into $TMP/real-NAME-search.json), whose stages the fit takes as
# the real tier's does; stopped.
real() {
  local name=$1 search=$2; shift 2
  local args=() port url
  while [ "$1" != "--" ]; do args+=("$1"); shift; done; shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url="http://127.0.0.1:$port"
  bash scripts/real-vllm.sh start "bw-$name" --port "$port" "${args[@]}" >/dev/null
  touch "$TMP/server-bw-$name"
  # As the real tier runs it: the engine, which stands in for a GPU, yields the 2 cores to the
  # API server and the client (docs/SOURCES.md §17).
  bash scripts/real-vllm.sh deprioritise "bw-$name" >/dev/null
  "$BIN" load --target "$url" --concurrency 16 --duration 6s --max-tokens 32 >/dev/null 2>&1
  local common=(--target "$url" --duration "$DURATION" --baseline 2s --interval 500ms --db "$DB" --format json)
  "$BIN" run "${common[@]}" "$@" --concurrency 32 >"$TMP/real-$name.json" 2>"$TMP/real-$name.err" || true
  "$BIN" run "${common[@]}" "$@" --concurrency 4 >"$TMP/real-$name-light.json" 2>/dev/null || true
  if [ "$search" = 1 ]; then
    # RUN-FLAGS but their answer length: the search's answers are 64 tokens.
    local flags=()
    while [ $# -gt 0 ]; do
      if [ "$1" = --max-tokens ]; then shift 2; else flags+=("$1"); shift; fi
    done
    "$BIN" capacity --target "$url" --max-tokens 64 --max-concurrency 32 --interval 500ms --budget 4m \
      --db "$DB" --format json "${flags[@]}" >"$TMP/real-$name-search.json" 2>"$TMP/real-$name-search.err" || true
  fi
  bash scripts/real-vllm.sh stop "bw-$name" >/dev/null; rm -f "$TMP/server-bw-$name"
}

# real_case NAME CHANGE BASE TARGET: whatif on BASE's two runs (and its capacity search's stages
# where it ran one), measured by TARGET's run.
real_case() {
  local stages=()
  if [ -s "$TMP/real-$3-search.json" ]; then
    read -ra stages < <(python3 -c 'import json,sys; print(*json.load(open(sys.argv[1])).get("run_ids", []))' "$TMP/real-$3-search.json")
  fi
  "$BIN" whatif "$(run_id "$TMP/real-$3.json")" "$(run_id "$TMP/real-$3-light.json")" "${stages[@]}" --set "$2" \
    --db "$DB" --format json >"$TMP/w.json" 2>"$TMP/w.err" || true
  row "$1" "$2" "$TMP/w.json" "$TMP/real-$4.json"
}

if [ "$REAL" = 1 ] && bash scripts/real-vllm.sh status >/dev/null 2>&1; then
  real c8 1 --max-num-seqs 8 -- --max-num-seqs 8 --max-tokens 128
  real c16 0 --max-num-seqs 16 -- --max-num-seqs 16 --max-tokens 128
  real_case "real vLLM cap 8 → 16, 32 clients, 128-token answers" max-num-seqs=16 c8 c16
  # A 4 MiB pool holds 1,920 tokens at most per request: --max-model-len 1024, as the real tier.
  real kv4 0 --max-num-seqs 16 --kv-bytes 4194304 --max-model-len 1024 -- --max-num-seqs 16 --max-tokens 64
  real kv8 0 --max-num-seqs 16 --kv-bytes 8388608 --max-model-len 1024 -- --max-num-seqs 16 --max-tokens 64
  real_case "real vLLM KV 4 → 8 MiB, cap 16, 32 clients" kv-cache-memory-bytes=8388608 kv4 kv8
else
  echo "(the real vLLM tier is not installed or REAL=0: simulator cases only)"
fi

python3 - "$ROWS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pct = lambda p, m: f"{(p / m - 1) * 100:+.0f}%" if p and m else "—"
print(f"{'case':52} {'change':34} {'fit':>5} {'now':>7} {'pred':>7} {'band':>13} {'meas':>7} {'err':>5} {'TTFT pred':>9} {'meas':>8} {'err':>5}  limit pred → meas")
for r in rows:
    if "error" in r:
        print(f"{r['case']:52} {r['change']:34} not predicted: {r['error']}")
        continue
    band = f"{r['band'][0]:.0f}–{r['band'][1]:.0f}"
    ttft = lambda v: f"{v:.1f}" if v is not None else "—"
    print(f"{r['case']:52} {r['change']:34} {r['fit_err']*100:+4.0f}% {r['base_tok']:7.0f} {r['pred_tok']:7.0f} {band:>13} {r['tok']:7.0f} {pct(r['pred_tok'], r['tok']):>5} "
          f"{ttft(r['pred_ttft']):>9} {ttft(r['ttft']):>8} {pct(r['pred_ttft'], r['ttft']):>5}  {r['pred_limit']} → {r['limit']}")
PY
