#!/usr/bin/env bash
# Parser throughput, promtext vs Python prometheus_client, on the same generated page.
#
# Runs crates/promtext/benches/parse.rs (which writes its page to $PROMTEXT_BENCH_PAGE), then
# scripts/bench_promtext_python.py on that file, and prints one side-by-side line with the ratios.
# Needs python3 with prometheus_client (pip install prometheus_client) for the Python half.
set -euo pipefail
cd "$(dirname "$0")/.."

page="${PROMTEXT_BENCH_PAGE:-$(mktemp -t promtext-bench.XXXXXX)}"
rust_out=$(PROMTEXT_BENCH_PAGE="$page" cargo bench -q -p promtext --bench parse)
echo "$rust_out"
py_status=0
py_out=$(python3 scripts/bench_promtext_python.py "$page") || py_status=$?
echo "$py_out"

field() { awk -v key="$1" '$1 == key {print $2}' <<<"$2"; }
streaming=$(field "streaming:" "$rust_out")
families=$(field "families:" "$rust_out")
bytes=$(awk '$1 == "page:" {print $2}' <<<"$rust_out")
if [[ $py_status -ne 0 ]]; then
    echo "promtext streaming ${streaming} MB/s | families ${families} MB/s | prometheus_client: failed (see above) | page ${bytes} bytes"
    exit 0
fi
python=$(awk '/^python prometheus_client/ {print $4}' <<<"$py_out")
ratio() { python3 -c "print(f'{$1 / $2:.0f}')"; }
echo "promtext streaming ${streaming} MB/s | families ${families} MB/s | prometheus_client ${python} MB/s" \
     "| ratio $(ratio "$streaming" "$python")x streaming, $(ratio "$families" "$python")x families" \
     "| page ${bytes} bytes"
