#!/usr/bin/env bash
# The one test command (README, .ci/run). On Debian 12, as root or a user with sudo:
#
#   ./scripts/test.sh
#
# Stages, each run even when an earlier one failed (unless it needs that one's output):
#   deps        apt-get: build deps, Check, clang, clang-format, bubblewrap (+ Node.js if node < 18)
#   npm         npm ci in tests/ (the MCP SDK and the Inspector for the interop tests)
#   build       cmake -DWERROR=ON into build/
#   test        ctest in build/ (unit, integration, e2e, interop)
#   asan-build  cmake -DSANITIZE=address,undefined into build-asan/
#   asan-test   ctest in build-asan/
#   fuzz        the libFuzzer targets, built with clang into build-fuzz/, each run briefly
#   format      clang-format --dry-run -Werror over the tracked (and new, unignored) *.c / *.h
# It ends with one line "N passed, N failed" (", N skipped" when some were) counting stages,
# and exits non-zero when any stage failed. Works from any directory; safe to run again.
#
# Knobs: RUNBOX_FUZZ_SECONDS (default 20 per target), RUNBOX_JOBS (default: nproc).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
jobs=${RUNBOX_JOBS:-$(nproc 2>/dev/null || echo 2)}
fuzz_seconds=${RUNBOX_FUZZ_SECONDS:-20}
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# --- the stages: each runs in a subshell with set -e; exit 77 means "skipped, see the note" ---

stage_deps() {
    bash scripts/install-deps.sh test
    node --version
}

stage_npm() {
    cd tests
    # No install scripts: none of these packages needs one (the Inspector's only no-ops here).
    # Engine warnings are expected: the Inspector asks for Node 22 but its CLI runs on 20.
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
}

stage_build() {
    cmake -S . -B build -DWERROR=ON -DRUNBOX_TESTS=ON -DRUNBOX_FUZZ=OFF -DSANITIZE=
    cmake --build build -j "$jobs"
}

stage_test() {
    cd build
    ctest --output-on-failure --no-tests=error -j "$jobs"
}

stage_asan_build() {
    cmake -S . -B build-asan -DWERROR=ON -DRUNBOX_TESTS=ON -DRUNBOX_FUZZ=OFF \
        -DSANITIZE=address,undefined
    cmake --build build-asan -j "$jobs"
}

stage_asan_test() {
    cd build-asan
    ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ctest --output-on-failure --no-tests=error -j "$jobs"
}

# Names of the libFuzzer targets the fuzz build defines (Makefile generator: the help target
# lists them). fuzz_replay_* are the plain corpus replays that ctest runs, not fuzzers.
fuzz_targets() {
    { cmake --build build-fuzz --target help | grep -o '\bfuzz_[A-Za-z0-9_]*' |
        grep -v '^fuzz_replay_' | sort -u; } || true # none yet is not a failure
}

# The seed corpus of a target: tests/fuzz/corpus/<target>/, also accepted without "fuzz_".
fuzz_seed_dir() {
    local d
    for d in "tests/fuzz/corpus/$1" "tests/fuzz/corpus/${1#fuzz_}"; do
        if [ -d "$d" ]; then
            echo "$d"
            return
        fi
    done
}

stage_fuzz() {
    if [ ! -f tests/fuzz/CMakeLists.txt ]; then
        echo "note: no fuzz targets yet (tests/fuzz/CMakeLists.txt does not exist); skipping"
        exit 77
    fi
    # ASan+UBSan everywhere, so the library code the fuzzers reach is checked too.
    cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DRUNBOX_FUZZ=ON -DRUNBOX_TESTS=ON \
        -DWERROR=OFF -DSANITIZE=address,undefined
    local targets
    targets=$(fuzz_targets)
    if [ -z "$targets" ]; then
        echo "note: tests/fuzz defines no fuzz_* target yet; skipping"
        exit 77
    fi
    # shellcheck disable=SC2086 # one word per target
    cmake --build build-fuzz -j "$jobs" --target $targets
    mkdir -p build-fuzz/artifacts build-fuzz/logs
    local t bin seeds work log bad=0
    for t in $targets; do
        bin=$(find build-fuzz -type f -name "$t" -perm -u+x | head -n 1)
        if [ -z "$bin" ]; then
            echo "FAIL $t: built, but no executable named $t under build-fuzz/"
            bad=1
            continue
        fi
        # New inputs go to the first corpus dir: a scratch one, so the tracked seeds stay as
        # they are.
        work=build-fuzz/corpus/$t
        mkdir -p "$work"
        seeds=$(fuzz_seed_dir "$t")
        [ -n "$seeds" ] || echo "note: $t has no seed corpus in tests/fuzz/corpus/$t/"
        log=build-fuzz/logs/$t.log
        echo "-- $t: ${fuzz_seconds}s on ${seeds:-an empty corpus} (log: $log)"
        if "$bin" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
            "$work" ${seeds:+"$seeds"} >"$log" 2>&1; then
            grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
        else
            echo "FAIL $t (crash inputs in build-fuzz/artifacts/); end of its log:"
            tail -n 60 "$log"
            bad=1
        fi
    done
    exit "$bad"
}

stage_format() {
    local files
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked files, plus new ones not yet added (the same set in a clean clone).
        files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h')
    else
        files=$(find common daemon mcp-proxy tests -name '*.[ch]' 2>/dev/null)
    fi
    if [ -z "$files" ]; then
        echo "note: no C files to check"
        exit 77
    fi
    echo "$files" | xargs clang-format --dry-run -Werror
    echo "clang-format: $(echo "$files" | wc -l) files formatted as .clang-format says"
}

# --- the runner ---

names=()
verdicts=()
notes=()

verdict_of() {
    local i
    for i in "${!names[@]}"; do
        if [ "${names[$i]}" = "$1" ]; then
            echo "${verdicts[$i]}"
            return
        fi
    done
}

# run_stage NAME FUNCTION [STAGE-IT-NEEDS...]
run_stage() {
    local name=$1 fn=$2 dep t0 rc
    shift 2
    for dep in "$@"; do
        if [ "$(verdict_of "$dep")" != PASS ]; then
            echo
            echo "==== $name: skipped, needs $dep"
            names+=("$name") verdicts+=(SKIP) notes+=("needs $dep")
            return
        fi
    done
    echo
    echo "==== $name"
    t0=$SECONDS
    (
        set -e
        "$fn"
    )
    rc=$?
    names+=("$name")
    notes+=("$((SECONDS - t0))s")
    case $rc in
    0) verdicts+=(PASS) ;;
    77) verdicts+=(SKIP) ;;
    *) verdicts+=(FAIL) ;;
    esac
    echo "==== $name: ${verdicts[-1]} (${notes[-1]})"
}

start=$SECONDS
run_stage deps stage_deps
run_stage npm stage_npm deps
run_stage build stage_build deps
run_stage test stage_test build
run_stage asan-build stage_asan_build deps
run_stage asan-test stage_asan_test asan-build
run_stage fuzz stage_fuzz deps
run_stage format stage_format deps

echo
echo "==== summary ($((SECONDS - start))s)"
passed=0
failed=0
skipped=0
for i in "${!names[@]}"; do
    printf '%-4s  %-10s  %s\n' "${verdicts[$i]}" "${names[$i]}" "${notes[$i]}"
    case ${verdicts[$i]} in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)) ;;
    *) skipped=$((skipped + 1)) ;;
    esac
done
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
