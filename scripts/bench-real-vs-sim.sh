#!/usr/bin/env bash
# The simulator against the real engine: the same workloads on a real vLLM 0.32.0 (CPU build, the
# real tier's tiny model; scripts/real-vllm.sh) and on `llmscope sim --preset cpu-tiny`, printed
# side by side (90-token prompts sized on each server's tokenizer, 64-token answers) — output tok/s at 1 and 32 streams, TTFT p50 at --max-num-seqs 16 and 32,
# running / waiting / KV in each regime, and the verdict. Target: throughput within 15 %, the
# same verdict in every regime.
#
#   scripts/bench-real-vs-sim.sh            (BUILD=0 skips the release build; DURATION=20s)
#
# Everything runs on 127.0.0.1; each real server configuration starts once.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-20s}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
[ "${BUILD:-1}" = 0 ] || cargo build -q --release -p llmscope
BIN=target/release/llmscope
scripts/real-vllm.sh status >/dev/null || { echo "install the real tier first: scripts/real-vllm.sh install" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# regime name | server config (real-vllm.sh start options) | clients
REGIMES=(
  "1 stream, cap 16|--max-num-seqs 16|1"
  "32 clients, cap 16|--max-num-seqs 16|32"
  "32 clients, cap 32|--max-num-seqs 32|32"
  "32 clients, KV 4 MiB|--max-num-seqs 16 --kv-bytes 4194304 --max-model-len 1024|32"
)

# The simulator's flags for the same server configuration.
sim_flags() {
  local cfg="$1" flags=(--preset cpu-tiny --metrics-dialect 0.32)
  set -- $cfg
  while [ $# -gt 0 ]; do
    case "$1" in
      --max-num-seqs) flags+=(--max-num-seqs "$2") ;;
      --kv-bytes) flags+=(--kv-cache-memory-bytes "$2") ;;
      --max-model-len) flags+=(--max-model-len "$2") ;;
    esac
    shift 2
  done
  echo "${flags[@]}"
}

run_one() { # engine regime url clients cap
  local file="$OUT/$1-$(printf '%s' "$2" | tr -c 'a-z0-9' '_').json"
  "$BIN" run --target "$3" --concurrency "$4" --max-num-seqs "$5" --duration "$DURATION" \
    --baseline 3s --interval 1s --input-tokens 90 --max-tokens 64 --db "$OUT/runs.db" --format json > "$file" 2>"$file.err" || true
  echo "$file"
}

# The real server first, each configuration started once, then the simulator alone: an idle
# vLLM CPU worker still polls (~50 % of a core), so the two never share the machine.
current=""
stop_real() { [ -z "$current" ] || scripts/real-vllm.sh stop bench >/dev/null; current=""; }
trap stop_real EXIT
for r in "${REGIMES[@]}"; do
  IFS='|' read -r name cfg clients <<<"$r"
  cap=$(echo "$cfg" | sed -E 's/.*--max-num-seqs ([0-9]+).*/\1/')
  if [ "$cfg" != "$current" ]; then
    stop_real
    port=$(free_port)
    # shellcheck disable=SC2086
    scripts/real-vllm.sh start bench --port "$port" $cfg
    current="$cfg"
  fi
  echo "real: $name" >&2
  run_one real "$name" "http://127.0.0.1:$port" "$clients" "$cap" > /dev/null
done
stop_real
for r in "${REGIMES[@]}"; do
  IFS='|' read -r name cfg clients <<<"$r"
  cap=$(echo "$cfg" | sed -E 's/.*--max-num-seqs ([0-9]+).*/\1/')
  sport=$(free_port)
  # shellcheck disable=SC2046
  "$BIN" sim --port "$sport" --dcgm-port 0 $(sim_flags "$cfg") > "$OUT/sim.log" 2>&1 &
  sim=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$sport/v1/models" >/dev/null && break; sleep 0.1; done
  echo "sim:  $name" >&2
  run_one sim "$name" "http://127.0.0.1:$sport" "$clients" "$cap" > /dev/null
  kill "$sim"; wait "$sim" 2>/dev/null || true
done

python3 - "$OUT" "${REGIMES[@]}" <<'PY'
import json, re, sys
out, regimes = sys.argv[1], [r.split("|")[0] for r in sys.argv[2:]]
def load(engine, name):
    f = f"{out}/{engine}-{re.sub('[^a-z0-9]', '_', name)}.json"
    try:
        return json.load(open(f))
    except Exception as e:
        return {"error": f"{f}: {e}"}
def fig(d, *path, fmt="{:.0f}"):
    for p in path:
        if not isinstance(d, dict) or p not in d or d[p] is None:
            return "—"
        d = d[p]
    return fmt.format(d)
rows = []
for name in regimes:
    for engine in ("real", "sim"):
        d = load(engine, name)
        if "error" in d:
            rows.append((name, engine, d["error"], "", "", "", "", ""))
            continue
        c, w = d["client"], d["window_stats"]
        rows.append((name, engine,
                     fig(c, "throughput", "sending_output_tokens_per_s"),
                     fig(c, "latency_ms", "ttft", "p50"),
                     fig(w, "running", "mean", fmt="{:.1f}"),
                     fig(w, "waiting", "mean", fmt="{:.1f}"),
                     fig(w, "kv_usage", "mean", fmt="{:.3f}"),
                     f'{d["verdict"]["bottleneck"]} ({d["verdict"]["confidence"]:.2f})'))
head = ("regime", "engine", "out tok/s", "TTFT p50 ms", "running", "waiting", "KV", "verdict")
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths))
print(line(head)); print(line(["-" * w for w in widths]))
for r in rows:
    print(line(r))
print()
for name in regimes:
    real, sim = load("real", name), load("sim", name)
    try:
        a = real["client"]["throughput"]["sending_output_tokens_per_s"]
        b = sim["client"]["throughput"]["sending_output_tokens_per_s"]
        same = real["verdict"]["bottleneck"] == sim["verdict"]["bottleneck"]
        print(f"{name}: sim/real throughput {b / a:.2f} ({(b / a - 1) * 100:+.0f} %), verdict {'same' if same else 'DIFFERENT'}")
    except Exception as e:
        print(f"{name}: no comparison ({e})")
print(f"\nreports: {out}")
PY
