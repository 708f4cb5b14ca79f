#!/usr/bin/env bash
# tests/bench/http-run.sh — MCP over HTTP (issue 8 §9), in one run:
#
#   tests/bench/http-run.sh                    # RUNS=3 CALLS=2000; updates docs/performance.md
#   RUNS=1 CALLS=500 OUT_DOC=- tests/bench/http-run.sh   # quick look, prints only
#
# Each round: runboxd freshly started (Release build, --no-fsync, a workspace holding the 4 KiB
# /a.txt of run.sh), measured by tests/bench/http-bench.mjs over /mcp (one session, JSON answers)
# and /ws, read_file of /a.txt at 1 and 16 in flight, then its RSS with 256 sessions each holding
# a GET stream open (and /mcp and /ws once more with the CPUs pinned, for their ratio: see
# below); then @modelcontextprotocol/server-everything (pinned below) in its
# streamable HTTP mode, answering its echo tool, driven by the same client. The report (the
# section "MCP over HTTP" of docs/performance.md, between its markers) gives the figures and the
# ratios within each round. run.sh runs this too and keeps the section.
# This is a benchmark, not a test: nothing here fails because a number is slow.
#
# Environment: RUNS [3]; CALLS [2000]; WARMUP [200]; INFLIGHT [1,16]; SESSIONS [256];
#   BUILD_DIR [<repo>/build-bench]; SKIP_BUILD [0]; JOBS [2]; PEERS_DIR [${TMPDIR:-/tmp}/mcp-peers];
#   OUT_DOC [<repo>/docs/performance.md] ("-" = print only); RESULTS_DIR [$BUILD_DIR/bench-results/http-<stamp>]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
EVERYTHING_PIN="@modelcontextprotocol/server-everything@2026.8.31"
CMDLINE=""
for v in RUNS CALLS WARMUP INFLIGHT SESSIONS SKIP_BUILD; do
  [[ -n "${!v+x}" ]] && CMDLINE+="$v=${!v} "
done
CMDLINE+="tests/bench/http-run.sh"
RUNS="${RUNS:-3}"
CALLS="${CALLS:-2000}"
WARMUP="${WARMUP:-200}"
INFLIGHT="${INFLIGHT:-1,16}"
SESSIONS="${SESSIONS:-256}"
JOBS="${JOBS:-2}"
NCPU="$(nproc 2>/dev/null || echo 1)"
BUILD_DIR="${BUILD_DIR:-$REPO/build-bench}"
PEERS_DIR="${PEERS_DIR:-${TMPDIR:-/tmp}/mcp-peers}"
OUT_DOC="${OUT_DOC:-$REPO/docs/performance.md}"
RESULTS_DIR="${RESULTS_DIR:-$BUILD_DIR/bench-results/http-$(date -u +%Y%m%dT%H%M%SZ)}"
STARTED_AT="$(date -u '+%Y-%m-%d %H:%M UTC')"
OUT="$RESULTS_DIR/http.jsonl"

log() { printf '[http-bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

TMP=""
RBD_PID=""
PEER_PID=""
stop_pid() {
  local pid="$1"
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$RBD_PID"
  stop_pid "$PEER_PID"
  [[ -n "$TMP" && -d "$TMP" ]] && rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

for t in node cmake npm; do command -v "$t" >/dev/null || die "$t is needed"; done
mkdir -p "$RESULTS_DIR"
: >"$OUT"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  log "building Release in $BUILD_DIR"
  { cmake -S "$REPO" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DRUNBOX_TESTS=OFF &&
    cmake --build "$BUILD_DIR" --target runboxd -j"$JOBS"; } >"$RESULTS_DIR/build.log" 2>&1 ||
    { tail -n 30 "$RESULTS_DIR/build.log" >&2; die "build failed"; }
fi
RUNBOXD="$BUILD_DIR/daemon/runboxd"
[[ -x "$RUNBOXD" ]] || die "no $RUNBOXD"

EVERYTHING="$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ ! -f "$EVERYTHING" ]]; then
  log "npm install $EVERYTHING_PIN into $PEERS_DIR"
  mkdir -p "$PEERS_DIR"
  (cd "$PEERS_DIR" && { [[ -f package.json ]] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund "$EVERYTHING_PIN" >"$RESULTS_DIR/npm.log" 2>&1) ||
    { tail -n 20 "$RESULTS_DIR/npm.log" >&2; die "npm install failed"; }
fi
EVERYTHING_VERSION="$(node -p 'require(process.argv[1]).version' \
  "$PEERS_DIR/node_modules/@modelcontextprotocol/server-everything/package.json")"

umask 022
TMP="$(mktemp -d "${TMPDIR:-/tmp}/runbox-http-bench.XXXXXX")"
chmod 755 "$TMP"
mkdir -p "$TMP/ws"
node -e "let s='';for(let i=0;i<4096;i++)s+=(i%64===63)?'\n':String.fromCharCode(97+(i%26));require('fs').writeFileSync(process.argv[1],s)" "$TMP/ws/a.txt"
echo '{}' >"$TMP/runboxd.json"
RBD_ARGS=(--workspace "$TMP/ws" --no-fsync --config "$TMP/runboxd.json")
if [[ "$(id -u)" == 0 ]]; then
  chown -R nobody "$TMP/ws"
  RBD_ARGS+=(--user nobody)
fi

start_runboxd() {
  env -u RUNBOX_TOKEN -u RUNBOX_LOG "$RUNBOXD" --port 0 "${RBD_ARGS[@]}" >"$TMP/runboxd.out" 2>&1 &
  RBD_PID=$!
  RBD_PORT=""
  for _ in $(seq 1 200); do
    RBD_PORT="$(sed -n 's|.*listening on http://[^ ]*:\([0-9][0-9]*\).*|\1|p' "$TMP/runboxd.out" | head -n 1)"
    [[ -n "$RBD_PORT" ]] && return 0
    kill -0 "$RBD_PID" 2>/dev/null || break
    sleep 0.05
  done
  cat "$TMP/runboxd.out" >&2
  return 1
}
start_everything() {
  PEER_PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
  # It logs a line to stdout per request: to /dev/null, so that its terminal costs nothing.
  (cd "$PEERS_DIR" && PORT="$PEER_PORT" exec node "$EVERYTHING" streamableHttp >/dev/null 2>"$TMP/peer.err") &
  PEER_PID=$!
  for _ in $(seq 1 200); do
    grep -q "listening on port" "$TMP/peer.err" 2>/dev/null && return 0
    kill -0 "$PEER_PID" 2>/dev/null || break
    sleep 0.05
  done
  cat "$TMP/peer.err" >&2
  return 1
}

bench() { # [PIN=CPUS] bench ROUND LABEL ARGS...: one http-bench line, tagged with its round
  local round="$1" label="$2" pin=()
  shift 2
  [[ -n "${PIN:-}" ]] && pin=(taskset -c "$PIN")
  "${pin[@]}" node "$HERE/http-bench.mjs" --label "$label" "$@" >"$TMP/one.json" 2>"$TMP/one.err" ||
    { log "FAILED: $label: $(head -c 400 "$TMP/one.err")"; return 0; }
  node -e 'const fs=require("fs");const r=JSON.parse(fs.readFileSync(process.argv[1],"utf8"));r.round=+process.argv[2];console.log(JSON.stringify(r))' \
    "$TMP/one.json" "$round" >>"$OUT"
}

READ=(--tool read_file --args '{"path":"/a.txt"}' --expect abcdef --calls "$CALLS" --warmup "$WARMUP" --inflight "$INFLIGHT")
for round in $(seq 1 "$RUNS"); do
  log "round $round: runboxd /mcp, /ws, $SESSIONS sessions"
  start_runboxd || die "runboxd did not start"
  bench "$round" "runboxd /mcp" --url "http://127.0.0.1:$RBD_PORT/mcp" --pid "$RBD_PID" "${READ[@]}"
  bench "$round" "runboxd /ws" --url "ws://127.0.0.1:$RBD_PORT/ws" --pid "$RBD_PID" "${READ[@]}"
  # /ws against /mcp at 1 in flight with the placement held still: unpinned, a round's p50 is
  # 0.04 or 0.10 ms by whether the scheduler put the client and runboxd's worker on one CPU or
  # on two (the wake-up across CPUs costs the rest), and it may pick differently for the two
  # transports. So each is measured again with runboxd's threads and the client on one CPU, then
  # on two (taskset; skipped with one CPU or without taskset).
  if [[ "$NCPU" -ge 2 ]] && command -v taskset >/dev/null; then
    taskset -a -p -c 0 "$RBD_PID" >/dev/null
    for place in "one CPU:0" "two CPUs:1"; do
      for t in "/mcp:http" "/ws:ws"; do
        PIN="${place#*:}" bench "$round" "runboxd ${t%%:*} pinned, ${place%%:*}" \
          --url "${t#*:}://127.0.0.1:$RBD_PORT${t%%:*}" --pid "$RBD_PID" "${READ[@]}" --inflight 1
      done
    done
    taskset -a -p -c "0-$((NCPU - 1))" "$RBD_PID" >/dev/null
  fi
  bench "$round" "runboxd sessions" --url "http://127.0.0.1:$RBD_PORT/mcp" --pid "$RBD_PID" --sessions "$SESSIONS"
  stop_pid "$RBD_PID"; RBD_PID=""
  log "round $round: server-everything $EVERYTHING_VERSION echo"
  start_everything || die "server-everything did not start"
  bench "$round" "server-everything" --url "http://127.0.0.1:$PEER_PORT/mcp" --pid "$PEER_PID" \
    --tool echo --args '{"message":"abcdef"}' --expect abcdef --calls "$CALLS" --warmup "$WARMUP" --inflight "$INFLIGHT"
  stop_pid "$PEER_PID"; PEER_PID=""
done

SECTION="$RESULTS_DIR/http.md"
node "$HERE/http-report.mjs" --in "$OUT" --command "$CMDLINE" --started "$STARTED_AT" \
  --everything "$EVERYTHING_VERSION" --runboxd "$RUNBOXD" --repo "$REPO" >"$SECTION"
cat "$SECTION"
if [[ "$OUT_DOC" != "-" ]]; then
  node "$HERE/http-report.mjs" --splice "$SECTION" --doc "$OUT_DOC"
  log "wrote the MCP over HTTP section of $OUT_DOC"
fi
