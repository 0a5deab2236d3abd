#!/usr/bin/env python3
"""Cuts a diagnosis fixture from a stored run: the engine series the diagnosis reads, as a TSV.

    scripts/fixture-from-run.py llmscope.db RUN_ID 'source text' > crates/diagnosis/tests/fixtures/real-runs/NAME.tsv

The fixture keeps what `llmscope run` stored: every point of the named vLLM series, the run's
facts (--max-num-seqs, concurrency, the concurrency the client kept) and the labels of
vllm:cache_config_info. Fill in the `# expect:` line by hand — what the run *should* be judged.
"""
import json, sqlite3, struct, sys

NAMES = [
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total", "vllm:generation_tokens_total",
    "vllm:iteration_tokens_total_sum", "vllm:iteration_tokens_total_count",
]

db, run, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = sqlite3.connect(db)
srcs = [r[0] for r in c.execute("select id from sources where run_id = ?", (run,))]
q = ",".join("?" * len(srcs))
ids, info = {}, None
for sid, name, labels in c.execute(f"select id, name, labels from series where source_id in ({q})", srcs):
    if name in NAMES:
        ids[sid] = name
    if name == "vllm:cache_config_info":
        info = json.loads(labels)
cols = {n: {} for n in NAMES}
for (data,) in c.execute(f"select data from blocks where source_id in ({q})", srcs):
    if data[0] != 1:
        sys.exit(f"fixture-from-run: this store writes sample blocks in layout {data[0]}, which this "
                 "script does not decode (it reads layout 1, stores made before the compact layout); "
                 "the real tier writes its regime-matrix fixtures itself: LLMSCOPE_MATRIX_FIXTURES=DIR "
                 "cargo test -p llmscope --test real_vllm")
    body = data[1:]
    for k in range(0, len(body) // 24 * 24, 24):
        sid, t, v = struct.unpack("<qdd", body[k:k + 24])
        if sid in ids:
            cols[ids[sid]][round(t, 3)] = v
facts = {}
for code, evidence in c.execute("select code, evidence from findings where run_id = ?", (run,)):
    if code == "run_facts":
        facts = json.loads(evidence)
report = facts.get("client") or {}
load, client = report.get("load", {}), report.get("client", {})
print(f"# source: {source}")
print(f"# facts: max_num_seqs={facts.get('max_num_seqs')} concurrency={facts.get('concurrency')} "
      f"achieved_concurrency={load.get('achieved')} contended={str(client.get('contended', False)).lower()}")
if info:
    keep = ["block_size", "num_gpu_blocks", "kv_cache_size_tokens", "kv_cache_memory_bytes",
            "kv_cache_max_concurrency", "gpu_memory_utilization", "enable_prefix_caching"]
    labels = dict(info) if isinstance(info, dict) else dict(info)
    print("# cache_config_info: " + ",".join(f"{k}={labels[k]}" for k in keep if k in labels))
print("# expect: FILL IN")
present = [n for n in NAMES if cols[n]]
print("\t".join(["t"] + present))
for t in sorted(set().union(*[cols[n].keys() for n in present])):
    print("\t".join([f"{t:.3f}"] + [("" if t not in cols[n] else f"{cols[n][t]:.10g}") for n in present]))
