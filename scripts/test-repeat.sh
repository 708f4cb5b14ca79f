#!/usr/bin/env bash
# Runs the test command's ctest stages again and again, to find tests that fail only sometimes.
#
#   scripts/test-repeat.sh [-n RUNS] [-j "2 4"] [--load "off on"] [--builds "build build-asan"]
#
# For every build directory (default: build and build-asan, the two ctest stages of
# scripts/test.sh; build-tsan, its third, runs the suites that stage runs), every parallelism
# (-j, default "2 4") and every load setting (default "off on"; "on" keeps every core busy
# with another process: stress-ng --cpu N when it is installed, else one shell busy loop per
# core), it runs `ctest -j J --schedule-random` RUNS times (default 5).
# The order changes from run to run, so tests meet different neighbours. Each failing run's log
# is kept under build-repeat/. It ends with a table of every test that ever failed, with how often
# and in which kinds of run, and exits 1 when any did.
#
# The build directories must exist (run scripts/test.sh once); they are rebuilt first, so the
# runs test the sources as they are. ASAN_OPTIONS/UBSAN_OPTIONS/TSAN_OPTIONS are the test
# command's own.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5
jobs_list="2 4"
load_list="off on"
builds="build build-asan"

while [ $# -gt 0 ]; do
    case $1 in
    -n) runs=$2; shift 2 ;;
    -j) jobs_list=$2; shift 2 ;;
    --load) load_list=$2; shift 2 ;;
    --builds) builds=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "test-repeat: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $runs in
'' | *[!0-9]*) echo "test-repeat: -n needs a number, got '$runs'" >&2; exit 2 ;;
esac

out=$root/build-repeat
mkdir -p "$out"
rm -f "$out"/*.log "$out/failures"
ncpu=$(nproc 2>/dev/null || echo 2)
load_pids=()

load_start() {
    if command -v stress-ng >/dev/null 2>&1; then
        stress-ng --cpu "$ncpu" --quiet &
        load_pids+=($!)
    else
        for _ in $(seq "$ncpu"); do
            sh -c 'while :; do :; done' &
            load_pids+=($!)
        done
    fi
}

load_stop() {
    [ ${#load_pids[@]} -eq 0 ] && return
    kill "${load_pids[@]}" 2>/dev/null
    wait "${load_pids[@]}" 2>/dev/null
    load_pids=()
}
trap 'load_stop; exit 130' INT TERM

# The tests the test command runs in a build: all of them, except in the ThreadSanitizer build
# (scripts/test.sh's tsan-test stage: the unit, integration and conformance suites).
labels_of() {
    case $(basename "$1") in
    build-tsan*) echo "-L unit|integration|conformance" ;;
    esac
}

for b in $builds; do
    if [ ! -f "$root/$b/CTestTestfile.cmake" ]; then
        echo "test-repeat: $root/$b is not a configured build; run scripts/test.sh first" >&2
        exit 2
    fi
    # The Node.js the build's tests run with (scripts/test.sh configures it): an older one fails
    # tests for want of a feature (WebSocket), which is not a flaky test.
    node=$(sed -n 's/^NODE:FILEPATH=//p' "$root/$b/CMakeCache.txt")
    v=$("${node:-node}" -p 'process.versions.node' 2>/dev/null || true)
    if [ -z "$v" ] || [ "$(printf '%s\n22.19.0\n' "$v" | sort -V | head -n 1)" != 22.19.0 ]; then
        echo "test-repeat: $b runs its tests with Node.js ${v:-(none)} at ${node:-?}; they need" \
            ">= 22.19: cmake -S . -B $b -DNODE=/opt/runbox-node22/bin/node (or scripts/test.sh)" >&2
        exit 2
    fi
    echo "test-repeat: building $b"
    cmake --build "$root/$b" -j "$ncpu" >"$out/build-$b.txt" 2>&1 || {
        tail -n 30 "$out/build-$b.txt"
        exit 1
    }
done

total=0
bad_runs=0
start=$SECONDS
for b in $builds; do
    for j in $jobs_list; do
        for load in $load_list; do
            [ "$load" = on ] && load_start
            for i in $(seq "$runs"); do
                total=$((total + 1))
                kind="$b -j$j load-$load"
                log="$out/$b-j$j-load$load-$i.log"
                t0=$SECONDS
                # The machine may be shared: the load average at the start says how busy it was.
                la=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
                (cd "$root/$b" && ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
                    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
                    ctest --output-on-failure --no-tests=error --schedule-random -j "$j" \
                    $(labels_of "$b")) >"$log" 2>&1
                rc=$?
                failed=$(sed -n 's/^[[:space:]]*[0-9]\+ - \([^ ]*\) (.*)$/\1/p' "$log")
                if [ "$rc" -ne 0 ]; then
                    bad_runs=$((bad_runs + 1))
                    [ -n "$failed" ] || failed="(ctest exited $rc; see $log)"
                    for t in $failed; do printf '%s\t%s\n' "$t" "$kind" >>"$out/failures"; done
                    echo "FAIL  $kind run $i ($((SECONDS - t0))s, load $la): $(echo $failed) — $log"
                else
                    rm -f "$log"
                    echo "ok    $kind run $i ($((SECONDS - t0))s, load $la)"
                fi
            done
            [ "$load" = on ] && load_stop
        done
    done
done

echo
echo "test-repeat: $total runs in $((SECONDS - start))s, $bad_runs with a failure"
if [ -s "$out/failures" ]; then
    echo "tests that failed (times, kind of run):"
    sort "$out/failures" | uniq -c | sort -rn | sed 's/^/  /'
    exit 1
fi
echo "no test failed"
