#!/usr/bin/env bash
# Runs libFuzzer targets of a fuzz build, one after the other, and prints one line per target.
#
#   tests/fuzz/run.sh --seconds N BUILD_DIR [TARGET...]   each target for N seconds (test.sh: 15)
#   tests/fuzz/run.sh --runs N BUILD_DIR [TARGET...]      each target for N executions
#   tests/fuzz/run.sh --long [-j N] [--workers W] [--budget S] [TARGET...]
#                                                         the long run: build-fuzz/ rebuilt
#                                                         from the checkout, then each target
#                                                         for 10 000 000 executions at nice 19,
#                                                         N at a time (default 1), each by W
#                                                         processes sharing its corpus (default
#                                                         1; each makes 10 M / W), each stopped
#                                                         after S seconds if given (the table
#                                                         says which reached 10 M); the rows of
#                                                         the targets run replace theirs in the
#                                                         table of docs/fuzzing.md
#
# With no TARGET, every fuzz_* libFuzzer binary under BUILD_DIR/tests/fuzz. Each target starts
# from its seed corpus (tests/fuzz/corpus/<target>/, never written) and a scratch corpus of its
# own (BUILD_DIR/corpus/<target>/, kept between runs). Logs: BUILD_DIR/logs/<target>.log; crash
# inputs: BUILD_DIR/artifacts/<target>-crash-*. Exit status 1 when a target crashed, leaked,
# timed out or went past 2 GiB of RSS. The time limit per input is 10 s of wall-clock time, 60 s
# in the long run: at nice 19 beside other work an input can wait seconds for a core.
#
# A fuzz build (test.sh's fuzz stage makes it):
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DRUNBOX_FUZZ=ON -DSANITIZE=address,undefined
#   cmake --build build-fuzz -j2
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
limit=()
long=0
timeout=10
case ${1:-} in
--seconds) limit=(-max_total_time="$2") ;;
--runs) limit=(-runs="$2") ;;
--long)
    long=1
    limit=(-runs=10000000)
    timeout=60
    ;;
*)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
parallel=1
workers=1
if [ "$long" = 1 ]; then
    shift
    while :; do
        case ${1:-} in
        -j)
            parallel=${2:?-j needs a number}
            shift 2
            ;;
        --workers)
            workers=${2:?--workers needs a number}
            shift 2
            ;;
        --budget)
            limit+=(-max_total_time="${2:?--budget needs seconds}")
            shift 2
            ;;
        *) break ;;
        esac
    done
    build=$root/build-fuzz
else
    shift 2
    build=${1:?BUILD_DIR}
    shift
fi
case ${limit[0]} in
*=[0-9]*) ;;
*)
    echo "fuzz/run.sh: ${limit[0]%%=*} needs a number" >&2
    exit 2
    ;;
esac
if ! [[ $parallel =~ ^[1-9][0-9]*$ && $workers =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz/run.sh: -j and --workers need a whole number from 1 up" >&2
    exit 2
fi
# Each worker of a target makes its share of the executions: W processes of one target fuzz
# the same corpus directory, and libFuzzer reads what the others added every second (-reload).
worker_limit=("${limit[@]}")
[ "$long" = 1 ] && worker_limit[0]=-runs=$(((10000000 + workers - 1) / workers))

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(find "$build/tests/fuzz" -maxdepth 1 -type f -perm -u+x -name 'fuzz_*' \
        ! -name 'fuzz_replay_*' -printf '%f\n' 2>/dev/null | sort)
fi
if [ ${#targets[@]} -eq 0 ]; then
    echo "fuzz/run.sh: no fuzz_* binaries in $build/tests/fuzz (see the fuzz build above)" >&2
    exit 2
fi

nice_cmd=()
commit=
if [ "$long" = 1 ]; then
    nice_cmd=(nice -n 19)
    # The binaries are the checkout's: the table names the commit they were built from.
    if ! cmake --build "$build" -j "$(nproc)" >"$build/long-build.log" 2>&1; then
        echo "fuzz/run.sh: building $build failed (see $build/long-build.log); configure it first:" >&2
        sed -n '24,25p' "$0" >&2
        exit 2
    fi
    commit=$(git -C "$root" rev-parse --short HEAD)
    git -C "$root" diff --quiet HEAD -- common daemon mcp-proxy tests/fuzz || commit="$commit+changes"
fi
mkdir -p "$build/artifacts" "$build/logs"
t_all=$SECONDS
rowdir=$(mktemp -d)

# run_one TARGET: runs it, prints its line, leaves its table row in $rowdir/TARGET (first line:
# ok or FAIL).
run_one() {
    local t=$1 bin work seeds log t0 verdict runs rss cov secs
    bin=$build/tests/fuzz/$t
    if [ ! -x "$bin" ]; then
        echo "FAIL $t: no executable $bin"
        printf 'FAIL\n| `%s` | - | - | - | - | not built | %s | %s |\n' "$t" "$(date -u +%Y-%m-%d)" \
            "$commit" >"$rowdir/$t"
        return
    fi
    work=$build/corpus/$t
    mkdir -p "$work"
    seeds=$root/tests/fuzz/corpus/$t
    [ -d "$seeds" ] || seeds=
    log=$build/logs/$t.log
    t0=$SECONDS
    # Worker 1 logs to <target>.log, worker K to <target>.K.log.
    local w logs=() pids=()
    rm -f "$build/logs/$t".[0-9]*.log
    for w in $(seq "$workers"); do
        logs+=("$([ "$w" = 1 ] && echo "$log" || echo "$build/logs/$t.$w.log")")
        "${nice_cmd[@]}" "$bin" "${worker_limit[@]}" -timeout="$timeout" -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "$work" \
            ${seeds:+"$seeds"} >"${logs[-1]}" 2>&1 &
        pids+=($!)
    done
    # The first worker to fail stops the others: its log is the one that tells.
    local left=("${pids[@]}") first_bad="" p
    verdict=ok
    while [ ${#left[@]} -gt 0 ]; do
        # One worker is waited for; of several, whichever ends first (checked every second).
        [ ${#left[@]} = 1 ] || sleep 1
        for p in "${!left[@]}"; do
            [ ${#left[@]} -gt 1 ] && kill -0 "${left[p]}" 2>/dev/null && continue
            if ! wait "${left[p]}" && [ "$verdict" = ok ]; then
                verdict=FAIL
                first_bad=${left[p]}
                kill "${left[@]}" 2>/dev/null
            fi
            unset 'left[p]'
        done
    done
    # The target's figures: executions summed over its workers, the highest coverage and RSS.
    runs=$(for w in "${logs[@]}"; do sed -n 's/^stat::number_of_executed_units: *//p' "$w" | tail -n 1; done |
        awk '{ n += $1 } END { if (NR) print n }')
    rss=$(for w in "${logs[@]}"; do sed -n 's/^stat::peak_rss_mb: *//p' "$w" | tail -n 1; done | sort -n | tail -n 1)
    cov=$(for w in "${logs[@]}"; do grep -o 'cov: [0-9]*' "$w" | tail -n 1 | cut -d' ' -f2; done | sort -n | tail -n 1)
    secs=$((SECONDS - t0))
    printf '%-4s %-22s %10s runs in %5ss, coverage %5s edges, peak RSS %4s MB\n' "$verdict" "$t" \
        "${runs:-?}" "$secs" "${cov:-?}" "${rss:-?}"
    local reached=yes
    if [ "$verdict" != ok ]; then
        reached="no: stopped by its finding"
    elif [ "${runs:-0}" -lt 10000000 ]; then
        reached="no: stopped at the time budget"
    fi
    printf '%s\n| `%s` | %s | %s | %s s | %s | %s | %s | %s |\n' "$verdict" "$t" "${runs:-?}" \
        "$reached" "$secs" "${cov:-?}" "$([ "$verdict" = ok ] && echo 0 || echo "**1**")" \
        "$(date -u +%Y-%m-%d)" "$commit" >"$rowdir/$t"
    if [ "$verdict" != ok ]; then
        echo "     crash inputs: $(ls "$build/artifacts/$t-"* 2>/dev/null | tr '\n' ' ')"
        for w in "${!pids[@]}"; do
            [ "${pids[w]}" = "$first_bad" ] || continue
            echo "     end of ${logs[w]}:"
            grep -v '^#[0-9]' "${logs[w]}" | tail -n 40 | sed 's/^/     | /'
        done
    fi
}

running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$parallel" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$t" &
    running=$((running + 1))
done
wait
bad=0
rows=()
for t in "${targets[@]}"; do
    [ "$(head -n 1 "$rowdir/$t")" = ok ] || bad=1
    rows+=("$(tail -n 1 "$rowdir/$t")")
done
rm -rf "$rowdir"

if [ "$long" = 1 ]; then
    doc=$root/docs/fuzzing.md
    {
        sed '/^<!-- long-run -->$/q' "$doc"
        echo
        echo "The last long run of each target: \`tests/fuzz/run.sh --long\` at nice 19 on $(nproc) cores" \
            "shared with other work, 10 000 000 executions unless the row says it stopped short."
        opts="-j $parallel --workers $workers${limit[1]:+ ${limit[*]:1}}"
        echo "This run ($(date -u +%Y-%m-%d), \`$opts\`, ${#targets[@]} of the targets) took" \
            "$(((SECONDS - t_all) / 60)) minutes (load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)."
        echo
        echo "| target | executions | 10 M reached | time | coverage (edges) | crashes | date | commit |"
        echo "|---|---|---|---|---|---|---|---|"
        # The rows of this run, and the earlier rows of the targets it did not run.
        {
            printf '%s\n' "${rows[@]}"
            sed -n '/^<!-- long-run -->$/,$p' "$doc" | grep '^| `fuzz_' | while IFS= read -r row; do
                name=${row#| \`}
                name=${name%%\`*}
                case " ${targets[*]} " in *" $name "*) ;; *) echo "$row" ;; esac
            done
        } | sort
    } >"$doc.new"
    mv "$doc.new" "$doc"
    echo "fuzz/run.sh: wrote the table of $doc"
fi
exit "$bad"
