#!/usr/bin/env bash
# tests/bench/exec-bench.sh - exec of `true` through runbox vs a bare bwrap with the same flags,
# p50 of each and the ratio (issue 3: <= 1.3x). Uses the binaries in BUILD_DIR (default
# <repo>/build-bench, else <repo>/build). A benchmark, not a test.
#   tests/bench/exec-bench.sh [N]        # N runs of each (default 200)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build-bench}"
[[ -x "$BUILD_DIR/daemon/runboxd" ]] || BUILD_DIR="$REPO/build"
export RUNBOXD="${RUNBOXD:-$BUILD_DIR/daemon/runboxd}"
export RUNBOX="${RUNBOX:-$BUILD_DIR/mcp-proxy/runbox}"
for b in "$RUNBOXD" "$RUNBOX"; do
  [[ -x "$b" ]] || { echo "exec-bench: $b not built (set BUILD_DIR, RUNBOXD, RUNBOX)" >&2; exit 2; }
done
command -v bwrap >/dev/null || { echo "exec-bench: bwrap not installed" >&2; exit 2; }
exec node "$HERE/exec-bench.mjs" "${1:-200}"
