#!/usr/bin/env bash
# Issue 31, point 3: watch through a soak — a Prometheus hostile in turn (100,000 points from
# 2023, a 16 MiB error text, 40,000 warnings, silence, random bytes) and hostile clients
# (slowloris past every cap, /metrics readers that never read, the status page in a loop), each
# from a loopback address of its own — with the kubelet's probe (/healthz, 10 a second) and
# watch's RSS sampled throughout, beside a control server answering the same probe.
#
#   scripts/bench-watch-soak.sh [SECONDS]        (default 600: the issue's ten minutes)
#
# Runs the suite's soak test (crates/cli/tests/cli/soak.rs) in release for SECONDS and prints
# its figures: /healthz p50/p99/max and unanswered probes, the control's p50/p99, peak RSS
# against the manifest's 512 Mi, evaluations. Targets: /healthz p99 < 50 ms, RSS < 512 MiB.
# Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
echo "load before: $(uptime)"
LLMSCOPE_SOAK_S="$seconds" cargo test -q --release -p llmscope --test cli -- \
    soak --nocapture --test-threads=1 2>&1 | grep -E '^soak|test result|panicked|p99'
echo "load after:  $(uptime)"
