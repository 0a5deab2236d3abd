#!/usr/bin/env bash
# Issue 15: "one evaluation of 1,000 deployments (10 series each, 15 min window, 15 s step) in
# under 5 s on one core".
#
#   scripts/bench-watch.sh [DEPLOYMENTS] [RUNS]        (defaults 1000 5)
#
# crates/collect/examples/fake_prometheus.rs (`fleet` mode) stands in for a Prometheus holding
# DEPLOYMENTS one-pod deployments, 7 engine + 3 GPU series each, generated for any window.
# `llmscope watch --once` then reads the last 15 min at 15 s, splits it by deployment, diagnoses
# each, and prints one evaluation; it runs pinned to one core (taskset -c 0) while the fake runs
# on the other. Prints wall time and peak RSS of each run, their median, and watch's own figure
# (read and judged in X s). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

deployments="${1:-1000}"
runs="${2:-5}"
out="$(mktemp -d -t llmscope-bench-watch.XXXXXX)"
trap 'kill "${fake_pid:-}" 2>/dev/null || true; rm -rf "$out"' EXIT

cargo build -q --release -p llmscope
cargo build -q --release -p llmscope-collect --example fake_prometheus
taskset -c 1 target/release/examples/fake_prometheus "$deployments" fleet >"$out/addr" &
fake_pid=$!
for _ in $(seq 50); do [[ -s $out/addr ]] && break; sleep 0.1; done
url="http://$(head -1 "$out/addr")"

echo "load before: $(uptime)"
: >"$out/walls"
for i in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$out/time" taskset -c 0 target/release/llmscope watch \
        --prometheus "$url" --once --window 15m --step 15s --max-num-seqs 16 >"$out/once.txt"
    read -r wall rss_kb <"$out/time"
    echo "$wall" >>"$out/walls"
    echo "run $i: $wall s wall, peak RSS $((rss_kb / 1024)) MiB; $(head -1 "$out/once.txt")"
done
median=$(sort -n "$out/walls" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median of $runs: $median s wall for one evaluation of $deployments deployments on one core (target < 5 s)"
echo "verdicts: $(grep -Eo '^  [^ ]+ +[a-z_]+' "$out/once.txt" | awk '{print $2}' | sort | uniq -c | tr '\n' ' ')"
echo "load after:  $(uptime)"
