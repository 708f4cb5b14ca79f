#!/usr/bin/env bash
# Installs the build dependencies (Debian 12), builds Runbox in Release mode into build/, and runs
# the daemon in the foreground on its default settings: 127.0.0.1:7766, the persistent workspace
# under $XDG_DATA_HOME/runbox/workspace. Stop it with Ctrl+C.
#
#   scripts/run.sh                      default settings
#   scripts/run.sh --workspace :memory: any further arguments go to runboxd (runboxd --help)
#
# Works from any directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

bash "$root/scripts/install-deps.sh" build

# RUNBOX_TESTS=OFF: running needs none of the test dependencies (Check).
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DRUNBOX_TESTS=OFF
cmake --build "$root/build" -j "$jobs"

echo "run: starting $root/build/daemon/runboxd $*" >&2
echo "run: connect an MCP client to $root/build/mcp-proxy/runbox (see docs/clients.md)" >&2
exec "$root/build/daemon/runboxd" "$@"
