#!/usr/bin/env bash
# `llmscope load` against `llmscope sim --preset bench-tiny`, with the Python peers (AIPerf,
# GuideLLM and inference-perf from PyPI; `vllm bench serve` from the real-vLLM tier's venv, see
# scripts/real-vllm.sh) side by side on the same simulator. Prints a Markdown report; raw outputs
# (JSON reports, per-request records, logs) stay in $OUT.
#
# Every tool sends the same work: 128-word prompts (128 tokens of one word-level tokenizer),
# 64 output tokens (max_tokens + ignore_eos), streaming, closed loop at the same concurrency.
# Chat completions, except for the two tools whose synthetic prompts only go to /v1/completions
# (`vllm bench serve --dataset-name random`, inference-perf `data.type: random`). AIPerf and
# GuideLLM stop after DURATION; `vllm bench serve` and inference-perf take a request count, sized
# to about DURATION at their throughput (VLLM_REQUESTS_PER_S, IPERF_REQUESTS_PER_S).
#
#   accuracy    1,000 streams against a sim slowed to ~20 ms per engine step, so the machine is
#               not saturated; the sim is pinned to CPU 1 and the tool to CPU 0 (one core each).
#               llmscope: TTFT error against the sim's own emit timestamps (x-llmscope-timestamps),
#               on one core and again with 2 threads on both cores (the sim keeps CPU 1).
#               Every tool: its TTFT mean minus the server's TTFT mean over the same run
#               (vllm:time_to_first_token_seconds sum/count scraped before and after) = what the
#               client adds to TTFT.
#   throughput  full-speed bench-tiny, 1,000 streams for every tool and 5,000 for llmscope:
#               output tokens/s (server usage counts), requests/s, client CPU seconds per 1,000
#               output tokens, and llmscope's own verdict on whether it limited the result.
#
# Env: DURATION seconds per run (default 20); OUT (default /tmp/llmscope-bench-load);
#      BUILD=0 uses the llmscope binary already built; PEERS=0 skips the Python tools; PEER_VENV (default /tmp/llmscope-peers);
#      VLLM_HOME the real-vLLM tier's folder (default ~/.cache/llmscope/real-vllm-0.32.0; vllm is
#      skipped when its venv has no `vllm`);
#      PRIO nice level of the sim and of every tool (default -10 when root: the machine is shared
#      with builds, and a timing benchmark needs its cores; the same level for every tool). With
#      autogroup scheduling a nice level counts only inside its session, so each process runs in
#      its own session (setsid) whose autogroup gets the same level.
# Needs: cargo, python3, curl, taskset; the peers are pip-installed into $PEER_VENV/<tool>
# (inference-perf declares Python >= 3.12; on an older python3 it is installed with
# --ignore-requires-python and used if it runs).
# All traffic stays on 127.0.0.1; every run is bounded by DURATION plus a drain.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
OUT=${OUT:-/tmp/llmscope-bench-load}
PEERS=${PEERS:-1}
PEER_VENV=${PEER_VENV:-/tmp/llmscope-peers}
MODEL=llmscope/tiny-bench
PRIO=${PRIO:-$([[ $(id -u) == 0 ]] && echo -10 || echo 0)}
VLLM_HOME=${VLLM_HOME:-$HOME/.cache/llmscope/real-vllm-0.32.0}
VLLM_REQUESTS_PER_S=${VLLM_REQUESTS_PER_S:-500}
IPERF_REQUESTS_PER_S=${IPERF_REQUESTS_PER_S:-400}
mkdir -p "$OUT"

[[ ${BUILD:-1} == 0 ]] || cargo build -q --release -p llmscope
BIN=$PWD/target/release/llmscope

# "${BOOST[@]}" CMD…: runs CMD in its own session whose autogroup, and CMD itself, get nice $PRIO
# (exec all the way down, so the pid stays the command's).
BOOST=(setsid bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null || true; exec nice -n "$0" "$@"' "$PRIO")

SIM_PID=""
URL=""
cleanup() { [[ -n $SIM_PID ]] && kill "$SIM_PID" 2>/dev/null || true; }
trap cleanup EXIT

# start_sim NAME CPUSET [sim flags…]: starts the simulator, sets SIM_PID and URL.
start_sim() {
    local name=$1 cpus=$2
    shift 2
    cleanup
    "${BOOST[@]}" taskset -c "$cpus" "$BIN" sim --preset bench-tiny --port 0 --dcgm-port 0 --seed 1 "$@" \
        >"$OUT/sim-$name.out" 2>&1 &
    SIM_PID=$!
    for _ in $(seq 100); do
        URL=$(grep -o 'vllm http://[0-9.:]*' "$OUT/sim-$name.out" | cut -d' ' -f2 || true)
        [[ -n $URL ]] && return 0
        sleep 0.1
    done
    echo "the simulator did not start:" >&2
    cat "$OUT/sim-$name.out" >&2
    exit 2
}

# ttft_metrics FILE: the server's TTFT sum and count, for before/after differences.
ttft_metrics() {
    curl -s "$URL/metrics" | awk '/^vllm:time_to_first_token_seconds_sum/ {s=$2}
        /^vllm:time_to_first_token_seconds_count/ {c=$2} END {print s, c}' >"$1"
}

# run_tool NAME CPUSET CMD…: runs a tool with its CPU time measured (GNU time, children included)
# and the server's TTFT counters scraped around it. Never fails the script.
run_tool() {
    local name=$1 cpus=$2
    shift 2
    ttft_metrics "$OUT/$name.ttft-before"
    local status=0
    /usr/bin/time -f "%e %U %S" -o "$OUT/$name.time" "${BOOST[@]}" taskset -c "$cpus" "$@" \
        >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" || status=$?
    ttft_metrics "$OUT/$name.ttft-after"
    echo "$status" >"$OUT/$name.status"
    echo "  $name: exit $status, $(cat "$OUT/$name.time" | tail -1) (wall user sys s)" >&2
}

llmscope_run() {
    local name=$1 cpus=$2 streams=$3
    shift 3
    run_tool "$name" "$cpus" "$BIN" load --target "$URL" --concurrency "$streams" \
        --duration "${DURATION}s" --input-tokens 128 --output-tokens 64 --format json \
        --records "$OUT/$name.records.jsonl" "$@"
}

# ---- Python peers ------------------------------------------------------------------------------
peer_install() {
    local tool=$1
    if [[ $tool == vllm ]]; then
        [[ -x $VLLM_HOME/venv/bin/vllm ]]
        return
    fi
    [[ -x $PEER_VENV/$tool/bin/$tool ]] && return 0
    python3 -m venv "$PEER_VENV/$tool" || return 1
    "$PEER_VENV/$tool/bin/pip" install -q --prefer-binary "$tool" >"$OUT/pip-$tool.log" 2>&1 ||
        "$PEER_VENV/$tool/bin/pip" install -q --prefer-binary --ignore-requires-python "$tool" \
            >>"$OUT/pip-$tool.log" 2>&1
}

# The peers need a tokenizer; with no access to the Hugging Face hub, build a small word-level one
# locally (the `tokenizers` package comes with both peers). Counts come from the server anyway.
make_tokenizer() {
    [[ -f $OUT/tokenizer/tokenizer.json ]] && return 0
    mkdir -p "$OUT/tokenizer"
    "$PEER_VENV/aiperf/bin/python" - "$OUT/tokenizer" <<'EOF'
import json, string, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
words = ("the of and to in is for that with as on it by this be are from at or an was have "
         "not can all will more one about new time there which their has would what some other "
         "when like people first into only than over also after year").split()
vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2}
for w in words + list(string.ascii_letters + string.digits + string.punctuation):
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.decoder = decoders.WordPiece(prefix="##")
out = sys.argv[1]
tok.save(f"{out}/tokenizer.json")
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "bos_token": "<s>",
           "eos_token": "</s>", "model_max_length": 1000000}, open(f"{out}/tokenizer_config.json", "w"))
json.dump({"model_type": "llama"}, open(f"{out}/config.json", "w"))
EOF
}

make_prompts() {
    python3 - "$OUT/prompts.jsonl" <<'EOF'
import json, random, sys
random.seed(1)
w = ("the of and to in is for that with as on it by this be are from at or an was have not can "
     "all will more one about new time there which their has would what").split()
with open(sys.argv[1], "w") as f:
    for _ in range(5000):
        f.write(json.dumps({"prompt": " ".join(random.choice(w) for _ in range(128)),
                            "output_tokens_count": 64}) + "\n")
EOF
}

aiperf_run() {
    local name=$1 cpus=$2 streams=$3
    rm -rf "$OUT/$name"
    run_tool "$name" "$cpus" "$PEER_VENV/aiperf/bin/aiperf" profile -m "$MODEL" --url "$URL" \
        --endpoint-type chat --streaming --concurrency "$streams" --benchmark-duration "$DURATION" \
        --tokenizer "$OUT/tokenizer" --prompt-input-tokens-mean 128 --prompt-output-tokens-mean 64 \
        --extra-inputs ignore_eos:true --use-legacy-max-tokens --use-server-token-count \
        --ui-type none --no-server-metrics --no-gpu-telemetry --output-artifact-dir "$OUT/$name"
}

guidellm_run() {
    local name=$1 cpus=$2 streams=$3
    run_tool "$name" "$cpus" "$PEER_VENV/guidellm/bin/guidellm" run \
        --backend "kind=openai_http,target=$URL,model=$MODEL" \
        --profile "kind=concurrent,streams=$streams" \
        --constraint "kind=max_duration,seconds=$DURATION" \
        --data "kind=json_file,path=$OUT/prompts.jsonl" \
        --tokenizer "kind=huggingface_auto,model=$OUT/tokenizer" \
        --output "kind=json,path=$OUT/$name.json" --disable-console-interactive
}

# `vllm bench serve`, from the real-vLLM tier's venv, offline, its caches inside the tier's folder
# (as scripts/real-vllm.sh sets them). It runs no model: it only needs the tokenizer.
vllm_run() {
    local name=$1 cpus=$2 streams=$3
    rm -rf "$OUT/$name"
    mkdir -p "$OUT/$name" "$VLLM_HOME/tmp" "$VLLM_HOME/cache/hf"
    run_tool "$name" "$cpus" env VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
        VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 PYTHONNOUSERSITE=1 HF_HOME="$VLLM_HOME/cache/hf" \
        XDG_CACHE_HOME="$VLLM_HOME/cache" VLLM_CACHE_ROOT="$VLLM_HOME/cache/vllm" \
        TMPDIR="$VLLM_HOME/tmp" \
        "$VLLM_HOME/venv/bin/vllm" bench serve --backend openai --base-url "$URL" \
        --endpoint /v1/completions --model "$MODEL" --tokenizer "$OUT/tokenizer" \
        --dataset-name random --random-input-len 128 --random-output-len 64 \
        --random-range-ratio 0 --ignore-eos --max-concurrency "$streams" --request-rate inf \
        --num-prompts $((VLLM_REQUESTS_PER_S * DURATION)) --num-warmups 0 --disable-tqdm \
        --save-result --result-dir "$OUT/$name" --result-filename result.json
}

inference-perf_run() {
    local name=$1 cpus=$2 streams=$3 n=$((IPERF_REQUESTS_PER_S * DURATION))
    rm -rf "$OUT/$name"
    mkdir -p "$OUT/$name"
    # Two workers (one per core), each allowed half the streams (its default is 100 per worker).
    cat >"$OUT/$name.yml" <<YML
api: {type: completion, streaming: true}
data:
  type: random
  input_distribution: {min: 128, max: 128, mean: 128, std_dev: 0, total_count: $n}
  output_distribution: {min: 64, max: 64, mean: 64, std_dev: 0, total_count: $n}
load:
  type: concurrent
  stages: [{num_requests: $n, concurrency_level: $streams}]
  num_workers: 2
  worker_max_concurrency: $(((streams + 1) / 2))
server: {type: vllm, model_name: $MODEL, base_url: "$URL", ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: "$OUT/tokenizer"}
report: {request_lifecycle: {use_server_output_tokens: true}}
storage: {local_storage: {path: "$OUT/$name"}}
YML
    run_tool "$name" "$cpus" "$PEER_VENV/inference-perf/bin/inference-perf" -c "$OUT/$name.yml"
}

peers=()
if [[ $PEERS != 0 ]]; then
    for tool in aiperf guidellm vllm inference-perf; do
        if peer_install "$tool"; then
            peers+=("$tool")
        else
            echo "$tool: not installed (pip: $OUT/pip-$tool.log; vllm: $VLLM_HOME/venv); skipped" >&2
        fi
    done
    [[ ${#peers[@]} -gt 0 ]] && make_tokenizer
    make_prompts
fi

# ---- runs --------------------------------------------------------------------------------------
echo "accuracy: 1,000 streams, sim at ~20 ms/step on CPU 1, tool on CPU 0, ${DURATION}s each" >&2
start_sim accuracy 1 --gpu-step-overhead 20ms
llmscope_run acc-llmscope 0 1000 --threads 1 --check-timing
for tool in "${peers[@]}"; do "${tool}_run" "acc-$tool" 0 1000; done
# The same streams with llmscope on both cores and its default threads (one per core: 2 here),
# sharing CPU 1 with the sim: its threads lose the core to the sim for milliseconds at a time.
llmscope_run acc-llmscope-2c 0,1 1000 --check-timing

echo "throughput: full-speed bench-tiny, both CPUs shared" >&2
start_sim throughput 0,1
llmscope_run thr-llmscope 0,1 1000
llmscope_run thr-llmscope-5000 0,1 5000
for tool in "${peers[@]}"; do "${tool}_run" "thr-$tool" 0,1 1000; done
cleanup
SIM_PID=""

# ---- report ------------------------------------------------------------------------------------
python3 - "$OUT" "${peers[@]}" <<'EOF'
import json, os, sys

out, peers = sys.argv[1], sys.argv[2:]

def read(path, default=None):
    try:
        with open(os.path.join(out, path)) as f:
            return f.read()
    except OSError:
        return default

def cpu_s(name):
    t = (read(f"{name}.time") or "").strip().splitlines()
    try:
        _, user, sys_ = t[-1].split()
        return float(user) + float(sys_)
    except (IndexError, ValueError):
        return None

def server_ttft_ms(name):
    try:
        s0, c0 = map(float, read(f"{name}.ttft-before").split())
        s1, c1 = map(float, read(f"{name}.ttft-after").split())
        return (s1 - s0) / (c1 - c0) * 1e3 if c1 > c0 else None
    except (AttributeError, ValueError):
        return None

def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None

def llmscope(name):
    j = json.loads(read(f"{name}.stdout") or "null") if read(f"{name}.stdout") else None
    if not j:
        return None
    errs, steady = [], []
    recs = [json.loads(line) for line in (read(f"{name}.records.jsonl") or "").splitlines()]
    t0 = min((r["sent_unix_ns"] for r in recs), default=0)
    for r in recs:
        if r.get("server_first_token_unix_ns") and r.get("first_token_unix_ns"):
            e = (r["first_token_unix_ns"] - r["server_first_token_unix_ns"]) / 1e6
            errs.append(e)
            # After the opening burst (every stream connecting and sending at once).
            if r["sent_unix_ns"] - t0 >= 2e9:
                steady.append(e)
    errs.sort()
    steady.sort()
    return {"ttft_mean": j["latency_ms"]["ttft"]["mean"], "ttft_p99": j["latency_ms"]["ttft"]["p99"],
            "tok_s": j["throughput"]["output_tokens_per_s"], "req_s": j["throughput"]["requests_per_s"],
            "tokens": j["tokens"]["output"], "sent": j["requests"]["sent"],
            "failed": j["requests"]["failed"], "verdict": j["client"]["verdict"],
            "cpu_pct": j["client"]["cpu_percent_mean"],
            "rx_p50": j["client"]["receive_lag_ms"]["p50"], "rx_p99": j["client"]["receive_lag_ms"]["p99"],
            "behind": j["client"].get("first_tokens_read_behind", 0),
            "err_p50": pct(errs, .5), "err_p99": pct(errs, .99), "err_max": errs[-1] if errs else None,
            "err_n": len(errs), "steady_p99": pct(steady, .99), "steady_n": len(steady)}

def aiperf(name):
    j = json.loads(read(f"{name}/profile_export_aiperf.json") or "null")
    if not j:
        return None
    return {"ttft_mean": j["time_to_first_token"]["avg"], "ttft_p99": j["time_to_first_token"]["p99"],
            "tok_s": j["output_token_throughput"]["avg"], "req_s": j["request_throughput"]["avg"],
            "tokens": j.get("total_output_tokens", {}).get("avg") or
                      j["output_token_throughput"]["avg"] * j["benchmark_duration"]["avg"]}

def guidellm(name):
    j = json.loads(read(f"{name}.json") or "null")
    if not j:
        return None
    b = j["benchmarks"][0]
    m = b["metrics"]
    tokens = m["output_token_count"]["successful"]["total_sum"]
    ttft = m["time_to_first_token_ms"]["successful"]
    return {"ttft_mean": ttft["mean"], "ttft_p99": ttft["percentiles"]["p99"],
            "tok_s": tokens / b["duration"], "req_s": m["requests_per_second"]["successful"]["mean"],
            "tokens": tokens}

def vllm(name):
    j = json.loads(read(f"{name}/result.json") or "null")
    if not j:
        return None
    return {"ttft_mean": j["mean_ttft_ms"], "ttft_p99": j.get("p99_ttft_ms"),
            "tok_s": j["output_throughput"], "req_s": j["request_throughput"],
            "tokens": j["total_output_tokens"], "sent": j["completed"] + j["failed"],
            "failed": j["failed"]}

def inference_perf(name):
    j = json.loads(read(f"{name}/summary_lifecycle_metrics.json") or "null")
    if not j:
        return None
    s = j["successes"]
    ttft = s["latency"]["time_to_first_token"]
    failed = (j.get("failures") or {}).get("count", 0)
    return {"ttft_mean": ttft["mean"] * 1e3, "ttft_p99": ttft["p99"] * 1e3,
            "tok_s": s["throughput"]["output_tokens_per_sec"],
            "req_s": s["throughput"]["requests_per_sec"],
            "tokens": s["output_tokens"]["total"], "sent": s["count"] + failed, "failed": failed}

# What each tool was made to send, and where it differs from the common work.
WORK = {
    "llmscope": "chat, streaming, closed loop, DURATION",
    "aiperf": "chat, streaming, closed loop, DURATION",
    "guidellm": "chat, streaming, closed loop, DURATION (prompts from the same 128-word file)",
    "vllm": "completions, streaming, closed loop, a request count: its synthetic (random) "
            "dataset sends prompts only to /v1/completions, and it stops after N prompts, not after "
            "a duration",
    "inference-perf": "completions, streaming, closed loop (`concurrent` load), a request count: "
                      "its random data type supports only the completion API, and a concurrent "
                      "stage is N requests, not a duration; Python 3.12 wanted, run on 3.11",
}

readers = {"llmscope": llmscope, "aiperf": aiperf, "guidellm": guidellm, "vllm": vllm,
           "inference-perf": inference_perf}
tools = ["llmscope"] + peers

def f(v, d=1):
    return "-" if v is None else f"{v:,.{d}f}"

print("## llmscope load vs Python peers (llmscope sim, preset bench-tiny)\n")
print("Same work for every tool: 128-word prompts, 64 output tokens (max_tokens + ignore_eos), "
      "streaming, closed loop at the same concurrency.\n")
print("| tool | what it sent |")
print("|---|---|")
for t in tools:
    print(f"| {t} | {WORK.get(t, '?')} |")
print()
acc = {t: readers[t](f"acc-{t}") for t in tools}
print("### Accuracy: 1,000 streams, unsaturated sim (CPU 1), tool on CPU 0\n")
print("| tool | server TTFT mean ms | tool TTFT mean ms | added by the client ms | TTFT p99 ms | CPU s / 1k tokens |")
print("|---|---|---|---|---|---|")
added = {}
for t in tools:
    r, srv, cpu = acc[t], server_ttft_ms(f"acc-{t}"), cpu_s(f"acc-{t}")
    if not r:
        print(f"| {t} | {f(srv)} | failed (see {out}/acc-{t}.stderr) | | | |")
        continue
    added[t] = r["ttft_mean"] - srv if srv is not None else None
    per_k = cpu / r["tokens"] * 1e3 if cpu and r.get("tokens") else None
    print(f"| {t} | {f(srv, 2)} | {f(r['ttft_mean'], 2)} | {f(added[t], 2)} | {f(r['ttft_p99'])} | {f(per_k, 4)} |")
l = acc.get("llmscope")
if l and l["err_n"]:
    print(f"\nllmscope TTFT error against the sim's emit timestamps ({l['err_n']} first tokens): "
          f"p50 {l['err_p50']:.3f} ms, p99 {l['err_p99']:.3f} ms, max {l['err_max']:.3f} ms "
          f"(includes the sim's own write and the loopback). Verdict: {l['verdict']}")
    if l["steady_n"]:
        print(f"\nWithout the opening burst (requests sent after the first 2 s, {l['steady_n']} first "
              f"tokens): p99 {l['steady_p99']:.3f} ms. In the opening burst every stream sends at "
              f"once and the client reads many first tokens late; they keep the stamps noted as "
              f"they arrived.")
    print(f"\nllmscope stamps arrivals with the kernel's receive time; it read first tokens "
          f"{f(l['rx_p50'], 3)} ms (p50) / {f(l['rx_p99'], 3)} ms (p99) after they reached the "
          f"socket: what a tool stamping at read time would have added to TTFT. "
          f"{l['behind']} first tokens were read with data queued behind them (their kernel "
          f"stamps may be late: Linux merges queued segments under the newest timestamp).")

two = llmscope("acc-llmscope-2c")
if two and two["err_n"]:
    print(f"\nllmscope with its default threads (2) on both cores, same 1,000 streams ({two['err_n']} first tokens): "
          f"TTFT error p50 {two['err_p50']:.3f} ms, p99 {two['err_p99']:.3f} ms, max "
          f"{two['err_max']:.3f} ms; without the opening burst p99 {f(two['steady_p99'], 3)} ms. "
          f"Verdict: {two['verdict']}")

print("\n### Throughput: full-speed sim, both CPUs shared\n")
print("| run | output tok/s | req/s | client CPU s / 1k tokens | sent / failed |")
print("|---|---|---|---|---|")
thr = {}
for t, name in [(t, f"thr-{t}") for t in tools] + [("llmscope", "thr-llmscope-5000")]:
    r, cpu = readers[t](name), cpu_s(name)
    if not r:
        print(f"| {name} | failed (see {out}/{name}.stderr) | | | |")
        continue
    thr[name] = r
    per_k = cpu / r["tokens"] * 1e3 if cpu and r.get("tokens") else None
    r["per_k"] = per_k
    sf = f"{r['sent']} / {r['failed']}" if "sent" in r else "-"
    print(f"| {name} | {f(r['tok_s'], 0)} | {f(r['req_s'])} | {f(per_k, 4)} | {sf} |")
for name in ("thr-llmscope", "thr-llmscope-5000"):
    if name in thr:
        print(f"\n{name}: {thr[name]['verdict']}")

print("\n### Ratios (peer / llmscope; > 1 means llmscope is better)\n")
base = thr.get("thr-llmscope")
for t in peers:
    p = thr.get(f"thr-{t}")
    parts = []
    if p and base:
        parts.append(f"sustained output tok/s at 1,000 streams {base['tok_s'] / p['tok_s']:.1f}x")
        if p.get("per_k") and base.get("per_k"):
            parts.append(f"client CPU per token {p['per_k'] / base['per_k']:.1f}x")
    if added.get(t) is not None and added.get("llmscope"):
        parts.append(f"TTFT added by the client {added[t] / max(added['llmscope'], 1e-3):.1f}x")
    print(f"- {t}: " + ("; ".join(parts) if parts else "no result"))
if base and base["verdict"].startswith("not client-limited"):
    print("\nllmscope kept its 1,000 streams without limiting them: its output tok/s is the "
          "simulator's, sharing the same two cores, not the client's ceiling; the client CPU per "
          "token above is the client-to-client comparison.")
EOF
