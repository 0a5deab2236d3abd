#!/usr/bin/env bash
# The regime matrix of issue 22, real engine beside the simulator: for each cell (--max-num-seqs,
# clients, answer length; the token-budget and scarce-KV servers) the oracle's verdict (read from
# the engine's own metrics) and llmscope's, on the real vLLM 0.32 tier and on the simulator's
# presets (cpu-tiny and the GPU ones), as one Markdown table.
#
#   scripts/bench-regime-matrix.sh            both (the real tier takes ~20 min on 2 cores)
#   scripts/bench-regime-matrix.sh --sim      the simulator's matrix only (seconds)
#
# The real side needs `scripts/real-vllm.sh install`. LLMSCOPE_MATRIX_FIXTURES=DIR also writes each
# real cell as a diagnosis fixture (crates/diagnosis/tests/fixtures/real-matrix holds the committed ones).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

LLMSCOPE_MATRIX_TABLE="$out/sim.md" cargo test -q -p llmscope-sim --test sim matrix >/dev/null 2>&1 \
  || echo "(the simulator's matrix has cells that disagree with its oracle: see cargo test -p llmscope-sim --test sim matrix)"
if [ "${1:-}" != "--sim" ]; then
  LLMSCOPE_MATRIX_TABLE="$out/real.md" cargo test -q -p llmscope --test real_vllm -- --test-threads=1 matrix >/dev/null 2>&1 \
    || echo "(the real tier has cells that disagree with its oracle: see cargo test -p llmscope --test real_vllm)"
fi
touch "$out/real.md"

python3 - "$out/real.md" "$out/sim.md" <<'PY'
import re, sys

def rows(path):
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7:
            yield cells

def key(cap, clients, answers):
    a = answers
    if "budget" in a or "1,000-token" in a:
        kind = "budget 128, 1,000-token prompts"
    elif "KV" in a or a.startswith("kv"):
        kind = "KV pool 2,048 tokens"
    elif "500-token" in a or "shared" in a:
        kind = re.sub(r"^\d+", "", a).strip(" ()")
    else:
        kind = ""
    return (int(cap), int(clients), int(re.match(r"\d+", a).group()), kind)

real = {}
for c in rows(sys.argv[1]):
    config, cap, clients, answers, want, got, agree = c[:7]
    if config.startswith("kv"):
        answers += " KV"
    real[key(cap, clients, answers)] = (want, got, agree)
sim, presets = {}, []
for c in rows(sys.argv[2]):
    preset, cap, clients, answers, want, got, agree = c[:7]
    if preset not in presets:
        presets.append(preset)
    sim.setdefault(key(cap, clients, answers), {})[preset] = (want, got, agree)

MARKS = {"yes": "", "yes (2nd measurement)": " (2nd measurement)", "NO": " ✗", "not formed": " (not formed)"}
keys = sorted(set(real) | set(sim))
head = ["cap", "clients", "answers", "real: oracle", "real: llmscope"]
for p in presets:
    head += [f"{p}: oracle", f"{p}: llmscope"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
tally = {"real": [0, 0, 0]}
for k in keys:
    cap, clients, answers, kind = k
    row = [str(cap), str(clients), f"{answers}{', ' + kind if kind else ''}"]
    r = real.get(k)
    if r:
        mark = MARKS.get(r[2], "")
        row += [r[0], r[1] + mark]
        t = tally["real"]
        t[0 if r[2].startswith("yes") else 1 if r[2] == "NO" else 2] += 1
    else:
        row += ["—", "—"]
    for p in presets:
        s = sim.get(k, {}).get(p)
        if s:
            mark = MARKS.get(s[2], "")
            row += [s[0], s[1] + mark]
            t = tally.setdefault(p, [0, 0, 0])
            t[0 if s[2].startswith("yes") else 1 if s[2] == "NO" else 2] += 1
        else:
            row += ["—", "—"]
    print("| " + " | ".join(row) + " |")
print()
# Where the real engine's regime differs from cpu-tiny's (the preset fitted to it), say why.
why = {}
for k in keys:
    r, s = real.get(k), sim.get(k, {}).get("cpu-tiny")
    if not r or not s or r[0] == s[0]:
        continue
    if r[2] == "not formed":
        reason = "the real regime did not form (border, two regimes in one window, or a queue nothing in the engine explains)"
    elif r[0] == "front_end":
        reason = "the real API server held the requests on 2 shared cores; the offline simulator has no front-end queue"
    elif r[0] == "failing_requests":
        reason = "the real server turns requests away at --max-num-queued-reqs 40; the simulated cell has no queue limit"
    elif s[0] == "load_not_reached" and r[0] == "batch_limit":
        reason = "real requests arrive unevenly from a starved front end, so a queue forms at the cap; the simulated clients never exceed it"
    else:
        reason = "not explained: look at both cells"
    why.setdefault(reason, []).append(f"{k[0]}x{k[1]}/{k[2]}{' ' + k[3] if k[3] else ''} ({r[0]} vs {s[0]})")
if why:
    print("Real vs cpu-tiny, where the oracles differ:")
    for reason, cells in why.items():
        print(f"- {reason}: {', '.join(cells)}")
    print()
for name, (ok, wrong, unformed) in tally.items():
    if ok + wrong + unformed:
        print(f"{name}: {ok} of {ok + wrong} formed cells agree with the oracle, {wrong} disagree, {unformed} did not form")
PY
