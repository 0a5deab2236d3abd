#!/usr/bin/env bash
# Peak memory and wall time of every bounded hostile case of issue 17, measured with
# `/usr/bin/time -v`, printed as a Markdown table.
#
#   scripts/bench-hostile.sh                       # builds and uses target/release/llmscope
#   LLMSCOPE_BIN=target/debug/llmscope scripts/bench-hostile.sh
#   DASHBOARD_MB="12.5 25 50" scripts/bench-hostile.sh   # dashboard sizes (linearity)
#
# A hostile HTTP server (Python, 127.0.0.1, an OS-given port) serves random bytes, broken lines,
# a JSON-quoted page, an endless body, a gzip bomb and silence. Everything is local.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${LLMSCOPE_BIN:-target/release/llmscope}
if [ -z "${LLMSCOPE_BIN:-}" ]; then cargo build --release -q -p llmscope; fi
WORK=$(mktemp -d)
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

cat > "$WORK/server.py" <<'EOF'
import http.server, json, os, random, socketserver, sys, time, zlib
random.seed(1)
RANDOM = bytes(random.getrandbits(8) for _ in range(65536))
BROKEN = b'# TYPE a gauge\na{x="1"} 1\nb{x="1" 2\nc 1 zz\na{x="1"} 3\n'
QUOTED = json.dumps("# HELP up x\n# TYPE up gauge\nup 1\n").encode()
c = zlib.compressobj(9, zlib.DEFLATED, 31)
BOMB = c.compress(b"\0" * (256 << 20)) + c.flush()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, body, extra=()):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra: self.send_header(k, v)
        self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        p = self.path
        if p == "/random": return self.send(RANDOM)
        if p == "/broken": return self.send(BROKEN)
        if p == "/quoted": return self.send(QUOTED)
        if p == "/bomb": return self.send(BOMB, [("Content-Encoding", "gzip")])
        if p == "/silent": time.sleep(120); return
        if p == "/endless":
            self.send_response(200); self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
            chunk = b"".join(b'm{i="%d"} 1\n' % i for i in range(1000))
            try:
                while True: self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError: return
        self.send_error(404)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer): daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$WORK/server.py" > "$WORK/port" &
SERVER=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")"

# Inputs: deep PromQL, a 7,400-term chain, a folder with two symlink loops, a FIFO, dashboards.
python3 - "$WORK" <<'EOF'
import sys, os
w = sys.argv[1]
open(f"{w}/deep.txt", "w").write("abs(" * 10000 + "up" + ")" * 10000)
open(f"{w}/chain.promql", "w").write(" + ".join(["vllm:num_requests_running"] * 7400))
os.makedirs(f"{w}/loops/a/b")
open(f"{w}/loops/a/b/q.promql", "w").write("up\n")
os.symlink("../..", f"{w}/loops/a/b/up"); os.symlink(".", f"{w}/loops/a/self")
os.mkfifo(f"{w}/x.promql")
EOF
dashboard() { # SIZE_MB OUT
  python3 - "$1" "$2" <<'EOF'
import json, sys
target = float(sys.argv[1]) * 1e6; out = open(sys.argv[2], "w")
out.write('{"panels": [\n'); size = 0; i = 0
while size < target:
    p = {"type": "timeseries", "title": f"panel {i}", "targets": [
        {"refId": "A", "expr": f'max by (pod) (vllm:kv_cache_usage_perc{{pod="p{i}"}})'},
        {"refId": "B", "expr": f'sum(rate(vllm:generation_tokens_total{{pod="p{i}"}}[5m]))'}]}
    line = ("," if i else "") + json.dumps(p) + "\n"; out.write(line); size += len(line); i += 1
out.write("]}\n")
EOF
}

printf '| case | command | exit | wall s | peak RSS MiB |\n|---|---|---|---|---|\n'
measure() { # NAME ARGS…
  local name=$1; shift
  local log="$WORK/time.log" code=0
  /usr/bin/time -v timeout 300 "$BIN" "$@" > /dev/null 2> "$log" || code=$?
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$log")
  local shown="${*//$WORK/\$W}"; shown="${shown//$URL/\$URL}"
  printf '| %s | `llmscope %s` | %s | %s | %s |\n' "$name" "${shown:0:70}" "$code" "$wall" "$rss"
}
measure "random bytes by URL" inventory "$URL/random"
measure "broken lines by URL" inventory "$URL/broken"
measure "JSON-quoted page" inventory "$URL/quoted"
measure "random bytes, targets" targets "$URL/random"
measure "endless body (64 MiB cap)" inventory "$URL/endless"
measure "gzip bomb, 256 MiB inflated" inventory "$URL/bomb"
measure "silent server (10 s timeout)" inventory "$URL/silent"
measure "PromQL abs( x 10,000" check --engine vllm@0.26 --expr "$(cat "$WORK/deep.txt")"
measure "7,400-term + chain file" check --engine vllm@0.26 "$WORK/chain.promql"
measure "/dev/zero" check --engine vllm@0.26 /dev/zero
measure "/dev/zero as --snapshot" inventory /dev/zero
measure "FIFO x.promql" check --engine vllm@0.26 "$WORK/x.promql"
measure "folder, two symlink loops" check --engine vllm@0.26 "$WORK/loops"
for mb in ${DASHBOARD_MB:-12.5 25 50}; do
  dashboard "$mb" "$WORK/d.json"
  measure "dashboard $(du -m "$WORK/d.json" | cut -f1) MB" check --engine vllm@0.26 "$WORK/d.json"
done
