#!/usr/bin/env bash
# Issue 15: "one evaluation of 1,000 deployments (10 series each, 15 min window, 15 s step) in
# under 5 s on one core"; issue 25: the same budget for 1,000 deployments × 8 replicas, each
# replica judged on its own beside the deployment's sum.
#
#   scripts/bench-watch.sh [DEPLOYMENTS] [RUNS] [REPLICAS]        (defaults 1000 5 1)
#
# crates/collect/examples/fake_prometheus.rs (`fleet` mode) stands in for a Prometheus holding
# DEPLOYMENTS deployments of REPLICAS pods, 7 engine + 3 GPU series a pod (8 engine with two or
# more replicas: their finished requests too), generated for any window; with replicas, one
# deployment in 20 routes unevenly and should read `routing_imbalance`.
# `llmscope watch --once` then reads the last 15 min at 15 s, splits it by deployment, diagnoses
# each, and prints one evaluation; it runs pinned to one core (taskset -c 0) while the fake runs
# on the other. Prints wall time, CPU time and peak RSS of each run, their medians, and watch's
# own figure (read and judged in X s). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

deployments="${1:-1000}"
runs="${2:-5}"
replicas="${3:-1}"
bin="${CARGO_TARGET_DIR:-target}/release"
out="$(mktemp -d -t llmscope-bench-watch.XXXXXX)"
trap 'kill "${fake_pid:-}" 2>/dev/null || true; rm -rf "$out"' EXIT

cargo build -q --release -p llmscope
cargo build -q --release -p llmscope-collect --example fake_prometheus
taskset -c 1 "$bin/examples/fake_prometheus" "$deployments" fleet "$replicas" >"$out/addr" &
fake_pid=$!
for _ in $(seq 50); do [[ -s $out/addr ]] && break; sleep 0.1; done
url="http://$(head -1 "$out/addr")"

echo "load before: $(uptime)"
: >"$out/walls"
: >"$out/rss"
: >"$out/cpus"
for i in $(seq "$runs"); do
    /usr/bin/time -f "%e %M %U %S" -o "$out/time" taskset -c 0 "$bin/llmscope" watch \
        --prometheus "$url" --once --window 15m --step 15s --max-num-seqs 16 >"$out/once.txt"
    read -r wall rss_kb user sys <"$out/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    echo "$wall" >>"$out/walls"
    echo "$cpu" >>"$out/cpus"
    echo "$((rss_kb / 1024))" >>"$out/rss"
    echo "run $i: $wall s wall, $cpu s CPU, peak RSS $((rss_kb / 1024)) MiB; $(head -1 "$out/once.txt")"
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
median=$(median "$out/walls")
series=$(head -1 "$out/once.txt" | grep -Eo '[0-9]+ series' || echo "? series")
echo "read: $series for $deployments deployments × $replicas replica(s)"
echo "median of $runs: $median s wall for one evaluation of $deployments deployments × $replicas replica(s) on one core (target < 5 s)"
echo "median CPU (user + sys): $(median "$out/cpus") s (wall time above it is waiting: the fake, or other load on core 0)"
echo "peak RSS: $(sort -n "$out/rss" | tail -1) MiB (the highest of the $runs runs)"
echo "verdicts: $(grep -Eo '^  [^ ]+ +[a-z_]+' "$out/once.txt" | awk '{print $2}' | sort | uniq -c | tr '\n' ' ')"
echo "load after:  $(uptime)"
