#!/usr/bin/env bash
# Target: diagnosing 24 h × 100 pods read from Prometheus takes seconds, not minutes.
#
#   scripts/bench-diagnose.sh [PODS] [HOURS] [STEP]        (defaults 100 24 15s)
#
# crates/collect/examples/fake_prometheus.rs stands in for a Prometheus holding PODS vLLM pods and
# their GPUs (8 engine + 3 dcgm series each, a daily batch-limited demand curve), generated for any
# window. `llmscope diagnose --prometheus` then reads HOURS of it at STEP (query_range, split under
# 11,000 points per series), stores it as a run and diagnoses it; the script prints the wall time,
# peak memory, points read and the verdict. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

pods="${1:-100}"
hours="${2:-24}"
step="${3:-15s}"
bin="${CARGO_TARGET_DIR:-target}/release"
out="$(mktemp -d -t llmscope-bench-diagnose.XXXXXX)"
trap 'kill "${fake_pid:-}" 2>/dev/null || true; rm -rf "$out"' EXIT

# (two builds: with --example, cargo builds only the example of the packages named)
cargo build -q --release -p llmscope
cargo build -q --release -p llmscope-collect --example fake_prometheus
"$bin/examples/fake_prometheus" "$pods" >"$out/addr" &
fake_pid=$!
for _ in $(seq 50); do [[ -s $out/addr ]] && break; sleep 0.1; done
url="http://$(head -1 "$out/addr")"

echo "load before: $(uptime)"
/usr/bin/time -f "%e %M" -o "$out/time" "$bin/llmscope" diagnose --prometheus "$url" \
    --from "-${hours}h" --to now --step "$step" --max-num-seqs 16 \
    --db "$out/bench.db" --format json >"$out/report.json"
read -r wall rss_kb <"$out/time"
python3 - "$out/report.json" "$pods" "$hours" "$step" "$wall" "$rss_kb" <<'PY'
import json, sys
report, pods, hours, step, wall, rss_kb = sys.argv[1:]
r = json.load(open(report))
print(f"diagnose --prometheus: {pods} pods x {hours} h at {step}: {float(wall):.1f} s wall, "
      f"peak RSS {int(rss_kb) / 1024:.0f} MiB; verdict {r['verdict']['bottleneck']} "
      f"(confidence {r['verdict']['confidence']:.2f})")
PY
sqlite3_points=$("$bin/llmscope" runs --db "$out/bench.db" --format json |
    python3 -c "import json,sys; r=json.load(sys.stdin)[0]; print(r['series'], r['samples'])")
echo "stored: $sqlite3_points (series, points)"
echo "load after:  $(uptime)"
