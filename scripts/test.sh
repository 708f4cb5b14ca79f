#!/usr/bin/env bash
# The one test command (README, .ci/run). On Debian 12, as root or a user with sudo:
#
#   ./scripts/test.sh
#
# It prints one line per stage, with its verdict and time, and ends with a line "N passed,
# N failed" (", N skipped" when some were), exiting non-zero when any stage failed. Each stage's
# whole output (apt's, npm's, the compiler's, ctest's) goes to build-logs/<stage>.log and is shown
# only when the stage fails: its end, or for ctest the output of each failed test. A stage still
# running after 30 s prints what it is doing every 30 s. A stage whose input stage failed fails at
# once and names it. Works from any directory; safe to run again.
#
# Knobs: RUNBOX_STAGES="build test" runs only those stages (their inputs are assumed to be there);
# RUNBOX_FUZZ_SECONDS (default 15 per target); RUNBOX_JOBS (default: nproc).
#
# To add a stage: write a function stage_<name> (run with set -e in a subshell in the checkout;
# exit 77 means skipped, and what it printed last says why) and add one line to STAGES below.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
jobs=${RUNBOX_JOBS:-$(nproc 2>/dev/null || echo 2)}
fuzz_seconds=${RUNBOX_FUZZ_SECONDS:-15}
logdir=$root/build-logs
export RUNBOX_LOG_DIR=$logdir
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# The stages, in order: name, then the stages whose output it needs.
STAGES=(
    "deps"
    "npm          deps"
    "build        deps"
    "test         build npm"
    "lune         build npm"
    "asan-build   deps"
    "asan-test    asan-build npm"
    "tsan-build   deps"
    "tsan-test    tsan-build npm"
    "fuzz         deps"
    "tidy         build"
    "format       deps"
)

# --- helpers the stages use ---

# Node.js >= 22.19 first on PATH: the one on PATH when new enough, else the one install-deps
# unpacked. NODE names it for cmake.
use_node() {
    local n v
    for n in "$(command -v node || true)" /opt/runbox-node22/bin/node; do
        [ -n "$n" ] && [ -x "$n" ] || continue
        v=$("$n" -p 'process.versions.node' 2>/dev/null || true)
        if [ -n "$v" ] && [ "$(printf '%s\n22.19.0\n' "$v" | sort -V | head -n 1)" = 22.19.0 ]; then
            NODE=$n
            PATH=$(dirname "$n"):$PATH
            export NODE PATH
            return 0
        fi
    done
    echo "no Node.js >= 22.19 on PATH or in /opt/runbox-node22 (the deps stage installs it)"
    return 1
}

# Configures and builds one build directory: DIR, then cmake options.
configure_and_build() {
    local dir=$1
    shift
    use_node
    echo "+ cmake -S . -B $dir $*"
    cmake -S . -B "$dir" -DWERROR=ON -DRUNBOX_TESTS=ON -DNODE="$NODE" "$@"
    cmake --build "$dir" -j "$jobs"
}

# ctest in build directory DIR with the rest as ctest options.
run_ctest() {
    local dir=$1
    shift
    use_node
    cd "$dir"
    ctest --output-on-failure --no-tests=error -j "$jobs" "$@"
}

# --- the stages ---

stage_deps() {
    bash scripts/install-deps.sh test
}

stage_npm() {
    use_node
    cd tests
    # No install scripts: none of these packages needs one (the Inspector's only no-ops here).
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
    echo "npm ci: $(find node_modules -mindepth 1 -maxdepth 2 -name package.json | wc -l) packages"
}

stage_build() {
    configure_and_build build -DRUNBOX_FUZZ=OFF -DSANITIZE=
}

stage_test() {
    run_ctest build
}

# The plugin under real Luau: the bundle compiles, values and handlers against
# reflection-backed Instances, the real poll loop against the real runboxd. Fails (never
# skips) when Lune cannot be had.
stage_lune() {
    local dir=${RUNBOX_LUNE_DIR:-$root/build-lune}
    use_node
    bash scripts/get-lune.sh "$dir"
    lua5.1 plugin-bridge/build.lua
    RUNBOX_ROOT=$root "$dir/lune" run plugin-bridge/tests/lune/run.luau
    LUNE=$dir/lune RUNBOXD=$root/build/daemon/runboxd RUNBOX=$root/build/mcp-proxy/runbox \
        node --test tests/lune/*.test.mjs
}

stage_asan_build() {
    configure_and_build build-asan -DRUNBOX_FUZZ=OFF -DSANITIZE=address,undefined
}

stage_asan_test() {
    ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        run_ctest build-asan
}

stage_tsan_build() {
    configure_and_build build-tsan -DRUNBOX_FUZZ=OFF -DSANITIZE=thread
}

# ThreadSanitizer over the unit and integration suites (the e2e and interop ones add no threads
# of runboxd's that integration does not already drive), then the conformance runs, whose
# concurrent streams, listen subscriptions and cancellations drive the MCP library's threads
# (about 30 s; after the others, so that they add no load to integration's timed checks).
stage_tsan_test() {
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_ctest "$root/build-tsan" \
        -L 'unit|integration'
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_ctest "$root/build-tsan" \
        -L conformance
}

# Names of the libFuzzer targets the fuzz build defines (Makefile generator: the help target
# lists them). fuzz_replay_* are the plain corpus replays that ctest runs, not fuzzers.
fuzz_targets() {
    { cmake --build build-fuzz --target help | grep -o '\bfuzz_[A-Za-z0-9_]*' |
        grep -v '^fuzz_replay_' | sort -u; } || true # none yet is not a failure
}

stage_fuzz() {
    # ASan+UBSan everywhere, so the library code the fuzzers reach is checked too.
    cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DRUNBOX_FUZZ=ON -DRUNBOX_TESTS=ON \
        -DWERROR=OFF -DSANITIZE=address,undefined
    local targets
    targets=$(fuzz_targets)
    if [ -z "$targets" ]; then
        echo "tests/fuzz defines no fuzz_* target"
        exit 77
    fi
    # shellcheck disable=SC2086 # one word per target
    cmake --build build-fuzz -j "$jobs" --target $targets
    # tests/fuzz/run.sh prints a line per target and the crash inputs when one fails.
    bash tests/fuzz/run.sh --seconds "$fuzz_seconds" build-fuzz $targets
}

# clang-tidy (.clang-tidy at the root) over every C file of the build, from its compilation
# database; any finding fails the stage.
stage_tidy() {
    local files
    files=$(git ls-files --cached --others --exclude-standard 'common/*.c' 'daemon/*.c' \
        'mcp-proxy/*.c' 2>/dev/null || find common daemon mcp-proxy -name '*.c')
    echo "clang-tidy over $(echo "$files" | wc -l) files, $jobs at a time"
    local out=$logdir/tidy.raw rc=0
    # shellcheck disable=SC2086 # one word per file
    printf '%s\n' $files | xargs -P "$jobs" -n 4 clang-tidy -p build --quiet --warnings-as-errors='*' \
        >"$out" 2>&1 || rc=$?
    grep -v '^[0-9]* warnings\? generated\.$' "$out" || true
    if [ "$rc" -ne 0 ]; then
        echo "clang-tidy: the findings above fail the stage (.clang-tidy lists the checks)"
        return 1
    fi
    echo "clang-tidy: no findings"
}

stage_format() {
    local files
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked files, plus new ones not yet added (the same set in a clean clone).
        files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h')
    else
        files=$(find common daemon mcp-proxy tests -name '*.[ch]' 2>/dev/null)
    fi
    echo "$files" | xargs clang-format --dry-run -Werror
    echo "clang-format: $(echo "$files" | wc -l) files formatted as .clang-format says"
}

# --- progress and failure reports, by the kind of log ---

# One line on what a running ctest is doing: "41/130 done; running unit_vfs, integration_exec".
ctest_progress() {
    awk '
        /^ *Start +[0-9]+: / { run[$3] = 1 }
        /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / { split($1, nm, "/"); done = nm[1]; total = nm[2];
            name = $0; sub(/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /, "", name); sub(/ .*/, "", name);
            delete run[name] }
        END { s = ""; n = 0; for (t in run) { if (n < 4) s = s (n ? ", " : "") t; n++ }
              if (n > 4) s = s ", ..."
              printf "%d/%s tests done%s%s", done + 0, total ? total : "?", n ? "; running " : "", s }
    ' "$1"
}

# The output of each failed test in a ctest log, and ctest's closing lines. Of a node test's
# output only its "failing tests" summary, which names each failed case and its error.
ctest_failures() {
    awk '
        function flush(   i, from, k) {
            if (!show) return
            print head
            from = 1
            for (i = 1; i <= n; i++) if (buf[i] ~ /failing tests:/) from = i
            for (i = from; i <= n && i < from + 150; i++) print buf[i]
            if (n >= from + 150) print "    ... (more in the log)"
            show = 0; n = 0
        }
        /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / { flush(); show = ($0 ~ /\*\*\*|Failed|Timeout|Exception/);
            head = $0; n = 0; next }
        /^ *Start +[0-9]+: / { flush(); next }
        /tests passed, [0-9]+ tests failed/ { flush(); tail = 1 }
        tail { print; next }
        show { buf[++n] = $0 }
        END { flush() }
    ' "$1"
}

# What a running stage is doing, in one line.
progress_of() {
    local name=$1 log=$2
    case $name in
    test | asan-test | tsan-test) ctest_progress "$log" ;;
    *build) grep -o '^\[ *[0-9]*%\] .*' "$log" | tail -n 1 | cut -c1-100 ;;
    *) grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-100 ;;
    esac
}

failure_of() {
    local name=$1 log=$2
    case $name in
    test | asan-test | tsan-test)
        if grep -q 'tests passed, [0-9]* tests failed' "$log"; then
            ctest_failures "$log"
            return
        fi
        ;;
    esac
    tail -n 60 "$log"
}

# The first error line of a failed stage's log (or its last line), for the stages that need it.
reason_of() {
    local log=$logdir/$1.log line
    line=$(grep -m 1 -iE 'error|fail|cannot|not found|no such' "$log" || tail -n 1 "$log")
    printf '%s (build-logs/%s.log)' "$(echo "$line" | cut -c1-120)" "$1"
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
    echo NOTRUN
}

selected() {
    [ -z "${RUNBOX_STAGES:-}" ] && return 0
    case " ${RUNBOX_STAGES//,/ } " in
    *" $1 "*) return 0 ;;
    esac
    return 1
}

# record NAME VERDICT NOTE: keeps the verdict and prints the stage's line.
record() {
    names+=("$1") verdicts+=("$2") notes+=("$3")
    printf '[%2d/%d] %-11s %-4s  %s\n' "${#names[@]}" "$nstages" "$1" "$2" "$3"
}

fmt_time() {
    if [ "$1" -ge 60 ]; then
        printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
    else
        printf '%ds' "$1"
    fi
}

# run_stage NAME [STAGE-IT-NEEDS...]
run_stage() {
    local name=$1 fn=stage_${1//-/_} log=$logdir/$1.log dep v t0 pid mon rc note
    shift
    for dep in "$@"; do
        v=$(verdict_of "$dep")
        case $v in
        FAIL)
            record "$name" FAIL "needs $dep, which failed: $(reason_of "$dep")"
            return
            ;;
        SKIP)
            record "$name" SKIP "needs $dep, which was skipped"
            return
            ;;
        esac
    done
    t0=$SECONDS
    (
        set -e
        "$fn"
    ) >"$log" 2>&1 </dev/null &
    pid=$!
    (
        while sleep 30; do
            printf '        %s (%s): %s\n' "$name" "$(fmt_time $((SECONDS - t0)))" \
                "$(progress_of "$name" "$log")"
        done
    ) &
    mon=$!
    wait "$pid"
    rc=$?
    kill "$mon" 2>/dev/null
    wait "$mon" 2>/dev/null
    note=$(fmt_time $((SECONDS - t0)))
    case $rc in
    0) record "$name" PASS "$note" ;;
    77) record "$name" SKIP "$note: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1)" ;;
    *)
        record "$name" FAIL "$note (exit $rc; build-logs/$name.log)"
        failure_of "$name" "$log" | sed 's/^/    | /'
        ;;
    esac
}

mkdir -p "$logdir"
nstages=0
for line in "${STAGES[@]}"; do
    read -r name _ <<<"$line"
    selected "$name" && nstages=$((nstages + 1))
done
echo "test.sh: $nstages stage(s), -j$jobs; each stage's output is in build-logs/<stage>.log"
start=$SECONDS
for line in "${STAGES[@]}"; do
    read -r name needs <<<"$line"
    selected "$name" || continue
    # shellcheck disable=SC2086 # one word per stage it needs
    run_stage "$name" $needs
done

echo
echo "summary ($(fmt_time $((SECONDS - start)))):"
passed=0
failed=0
skipped=0
for i in "${!names[@]}"; do
    printf '  %-4s  %-11s  %s\n' "${verdicts[$i]}" "${names[$i]}" "${notes[$i]}"
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
