#!/bin/ash
# shellcheck shell=sh
# tests/vm/cgroup.vm.sh - runboxd's memory and process limits through a delegated cgroup v2.
# Runs inside the test VM (tests/vm/run.sh): a pure cgroup v2 hierarchy on /sys/fs/cgroup with
# every controller, runboxd started as root in the root cgroup (it drops to nobody).
#
# The contract: /health reports memory and procs limits by "cgroup" and names the daemon's
# cgroup; a shell that doubles a string past 64 MiB is killed with "[killed: memory limit]" and
# structured killed "memory limit"; a fork bomb is contained and the daemon stays usable; each
# run lives in <cgroup>/exec-<pid>, which goes away with the run; nothing is left behind. A
# second runboxd with clone3 refused (no_clone3) falls back to rlimits and says why.
# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091 # followed with shellcheck -x
. /vmtests/lib.sh

LOG=/tmp/runboxd.log
T=cgroup

runboxd --workspace /tmp/ws --port 7766 --user nobody --exec-memory-mb 64 --exec-procs 64 \
	>"$LOG" 2>&1 &
RBD=$!

health_ok() {
	health >/dev/null 2>&1
}

daemon_gone() {
	[ ! -e "/proc/$RBD/stat" ] || grep -q ') Z ' "/proc/$RBD/stat"
}

sleep_count() {
	# shellcheck disable=SC2009 # busybox has no pgrep
	ps -o comm | grep -cx sleep
}

# shellcheck disable=SC2317 # run by wait_until
no_sleep_left() {
	[ "$(sleep_count)" = 0 ]
}

# The body of an exec call's answer: fails the test NAME when the call itself failed.
exec_call() {
	_name=$1
	if ! R=$(call_tool exec "$2"); then
		vm_fail "$_name" "POST /tool/exec $2 failed (no answer, or an HTTP error status)"
		return 1
	fi
	if [ "$(printf '%s' "$R" | json_get .ok)" != true ]; then
		vm_fail "$_name" "exec $2 answered $R"
		return 1
	fi
	return 0
}

finish() {
	if daemon_gone; then
		vm_fail "$T.daemon_stop" "runboxd died during the tests"
	else
		kill -TERM "$RBD"
		if wait_until 60 daemon_gone; then
			wait "$RBD"
			assert_eq "$T.daemon_stop" "exit status $?" "exit status 0"
		else
			vm_fail "$T.daemon_stop" "runboxd still running 60 s after SIGTERM"
			kill -KILL "$RBD"
		fi
	fi
	if vm_failed; then
		echo "last lines of $LOG:"
		tail -n 30 "$LOG" | sed 's/^/  runboxd.log: /'
		exit 1
	fi
	exit 0
}

# The names of the directories in $1, on one line.
subdirs() {
	for _d in "$1"/*/; do
		[ -d "$_d" ] || continue
		_d=${_d%/}
		printf '%s ' "${_d##*/}"
	done
}

# ---- the harness itself: the VM's cgroups, the daemon answers and runs commands in bwrap ----

ctl=$(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null)
case " $ctl " in
*" memory "*" pids "* | *" pids "*" memory "*) vm_pass "$T.vm_controllers" ;;
*) vm_fail "$T.vm_controllers" "the VM's cgroup v2 root offers [$ctl], not memory and pids" ;;
esac

if ! wait_until 60 health_ok; then
	vm_fail "$T.start" "GET /health did not answer within 60 s"
	finish
fi
H=$(health)
if [ "$(printf '%s' "$H" | json_get .sandbox.available)" = true ]; then
	vm_pass "$T.start"
else
	vm_fail "$T.start" "sandbox not available: $(printf '%s' "$H" | json_get .sandbox.reason)"
fi

if exec_call "$T.exec_echo" '{"command":"echo hi"}'; then
	assert_eq "$T.exec_echo" "$(printf '%s' "$R" | json_get .result)" '"hi\n"'
fi

# ---- /health ----

assert_eq "$T.health_memory" "$(printf '%s' "$H" | json_get .sandbox.memory)" '"cgroup"'
assert_eq "$T.health_procs" "$(printf '%s' "$H" | json_get .sandbox.procs)" '"cgroup"'
CG=$(printf '%s' "$H" | json_str .sandbox.cgroup.path) || CG=""
case $CG in
/sys/fs/cgroup/?*)
	if [ -d "$CG" ]; then
		vm_pass "$T.health_cgroup_path"
	else
		vm_fail "$T.health_cgroup_path" "$CG is not a directory"
	fi
	;;
*)
	vm_fail "$T.health_cgroup_path" \
		"want a string naming a directory under /sys/fs/cgroup, got [$(printf '%s' "$H" | json_get .sandbox.cgroup.path)]"
	CG=""
	;;
esac
assert_eq "$T.health_cgroup_reason" "$(printf '%s' "$H" | json_get .sandbox.cgroup.reason)" null

# The path of a run's cgroup below /sys/fs/cgroup, as /proc/<pid>/cgroup shows it.
CGREL=${CG#/sys/fs/cgroup}

# ---- memory: doubling a shell string past 64 MiB ----

# shellcheck disable=SC2016 # $a is for the sandbox's shell
if exec_call "$T.memory_killed" \
	'{"command":"a=x; while :; do a=\"$a$a\"; done","timeout_ms":30000}'; then
	assert_contains "$T.memory_killed" "$(printf '%s' "$R" | json_get .result)" \
		'[killed: memory limit]'
	assert_eq "$T.memory_flag" "$(printf '%s' "$R" | json_get .structured.killed)" '"memory limit"'
else
	vm_fail "$T.memory_flag" "no exec result"
fi

# ---- processes: a fork bomb is contained, the daemon stays usable ----

t0=$(date +%s)
if exec_call "$T.forkbomb_returns" '{"command":"f(){ f|f& }; f; sleep 2","timeout_ms":5000}'; then
	vm_pass "$T.forkbomb_returns"
	echo "fork bomb: returned after $(($(date +%s) - t0)) s;" \
		"duration_ms $(printf '%s' "$R" | json_get .structured.duration_ms)," \
		"exit_code $(printf '%s' "$R" | json_get .structured.exit_code)," \
		"timed_out $(printf '%s' "$R" | json_get .structured.timed_out)," \
		"killed $(printf '%s' "$R" | json_get .structured.killed)"
fi
if health_ok; then
	vm_pass "$T.forkbomb_health"
else
	vm_fail "$T.forkbomb_health" "GET /health did not answer after the fork bomb"
fi
if exec_call "$T.forkbomb_echo" '{"command":"echo ok"}'; then
	assert_eq "$T.forkbomb_echo" "$(printf '%s' "$R" | json_get .result)" '"ok\n"'
fi

# ---- a command can read its own cgroup ----

if exec_call "$T.proc_self_cgroup" '{"command":"cat /proc/self/cgroup"}'; then
	assert_eq "$T.proc_self_cgroup" "$(printf '%s' "$R" | json_get .structured.exit_code)" 0
fi

# ---- background: its cgroup holds its processes, setsid ones too; kill removes both ----

BG=""
if exec_call "$T.bg_start" '{"command":"setsid sleep 1000 & sleep 1000","background":true}'; then
	BG=$(printf '%s' "$R" | json_get .structured.pid)
	case $BG in
	'' | *[!0-9]*)
		vm_fail "$T.bg_start" "no pid in $R"
		BG=""
		;;
	*) vm_pass "$T.bg_start" ;;
	esac
fi

if [ -n "$BG" ]; then
	# shellcheck disable=SC2317 # run by wait_until
	two_sleeps() {
		[ "$(sleep_count)" = 2 ]
	}
	if wait_until 60 two_sleeps; then
		vm_pass "$T.bg_running"
	else
		vm_fail "$T.bg_running" "want 2 sleep processes, found $(sleep_count)"
	fi

	D="$CG/exec-$BG"
	if [ -z "$CG" ]; then
		vm_fail "$T.bg_cgroup_dir" "no cgroup path in /health"
	elif [ ! -d "$D" ]; then
		vm_fail "$T.bg_cgroup_dir" "$D does not exist; $CG has: $(subdirs "$CG")"
	elif ! grep -qx 'populated 1' "$D/cgroup.events"; then
		vm_fail "$T.bg_cgroup_dir" "$D holds no process ($(tr '\n' ' ' <"$D/cgroup.events"))"
	else
		outside=""
		for p in $(ps -o pid,comm | awk '$2 == "sleep" { print $1 }'); do
			c=$(cat "/proc/$p/cgroup" 2>/dev/null)
			case $c in
			"0::$CGREL/exec-$BG" | "0::$CGREL/exec-$BG/"*) ;;
			*) outside="$outside sleep $p in [$c]" ;;
			esac
		done
		if [ -z "$outside" ]; then
			vm_pass "$T.bg_cgroup_dir"
		else
			vm_fail "$T.bg_cgroup_dir" "not in $D:$outside"
		fi
	fi

	if R=$(call_tool kill "{\"pid\":$BG}") && [ "$(printf '%s' "$R" | json_get .ok)" = true ]; then
		vm_pass "$T.bg_kill"
	else
		vm_fail "$T.bg_kill" "kill {pid: $BG} answered [$R]"
	fi
	# TERM goes to the process group, the whole sandbox is killed 2 s later.
	if wait_until 60 no_sleep_left; then
		vm_pass "$T.bg_no_sleep_left"
	else
		vm_fail "$T.bg_no_sleep_left" "$(sleep_count) sleep processes still running 60 s after kill"
	fi
	# shellcheck disable=SC2317 # run by wait_until
	exec_dir_gone() {
		[ ! -d "$D" ]
	}
	if [ -z "$CG" ]; then
		vm_fail "$T.bg_cgroup_gone" "no cgroup path in /health"
	elif wait_until 60 exec_dir_gone; then
		vm_pass "$T.bg_cgroup_gone"
	else
		vm_fail "$T.bg_cgroup_gone" "$D still exists 60 s after the run ended"
	fi
fi

# ---- nothing left behind ----

exec_dirs() {
	for d in "$CG"/exec-*; do
		[ -d "$d" ] && printf '%s ' "${d##*/}"
	done
}

# shellcheck disable=SC2317 # run by wait_until
no_exec_dirs() {
	[ -z "$(exec_dirs)" ]
}

if [ -z "$CG" ]; then
	vm_fail "$T.no_exec_dirs_left" "no cgroup path in /health"
elif wait_until 60 no_exec_dirs; then
	vm_pass "$T.no_exec_dirs_left"
else
	vm_fail "$T.no_exec_dirs_left" "left in $CG: $(exec_dirs)"
fi

# ---- clone3 refused by seccomp (as in Docker): rlimits again, memory by RLIMIT_DATA and the watchdog ----

if [ -x /usr/bin/no_clone3 ]; then
	RUNBOX_URL=http://127.0.0.1:7767
	no_clone3 /usr/bin/runboxd --workspace /tmp/ws2 --port 7767 --user nobody \
		--exec-memory-mb 64 >/tmp/runboxd-noclone3.log 2>&1 &
	NC=$!
	if wait_until 60 health_ok; then
		H=$(health)
		assert_eq "$T.noclone3_memory" "$(printf '%s' "$H" | json_get .sandbox.memory)" '"watchdog"'
		assert_eq "$T.noclone3_path" "$(printf '%s' "$H" | json_get .sandbox.cgroup.path)" null
		assert_contains "$T.noclone3_reason" "$(printf '%s' "$H" | json_get .sandbox.cgroup.reason)" \
			'clone3: Function not implemented'
		# shellcheck disable=SC2016 # $a is for the sandbox's shell
		if exec_call "$T.noclone3_hog" \
			'{"command":"a=x; while :; do a=\"$a$a\"; done","timeout_ms":30000}'; then
			# Two bounds at the same limit: RLIMIT_DATA fails the shell's allocation ("[exit
			# code N]"), or the watchdog sees the run past the limit first and kills it ("[killed:
			# memory limit]"); which comes first depends on the moment of the watchdog's reading.
			_text=$(printf '%s' "$R" | json_get .result)
			case "$_text" in
			*"[killed: memory limit]"* | *"[exit code "*) vm_pass "$T.noclone3_hog" ;;
			*) vm_fail "$T.noclone3_hog" "the hog did not fail: $_text" ;;
			esac
		fi
	else
		vm_fail "$T.noclone3_memory" "runboxd under no_clone3 did not answer: $(tail -n 5 /tmp/runboxd-noclone3.log)"
	fi
	kill -TERM "$NC"
	wait "$NC"
	RUNBOX_URL=http://127.0.0.1:7766
else
	vm_fail "$T.noclone3_memory" "no_clone3 is not in the VM (build the no_clone3 target)"
fi

finish
