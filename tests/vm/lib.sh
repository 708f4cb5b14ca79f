# shellcheck shell=sh
# tests/vm/lib.sh - helpers for the test scripts that run inside the VM (busybox ash, POSIX sh).
# Sourced by every tests/vm/*.vm.sh; see tests/vm/run.sh for how the VM is built and booted.
#
#   vm_pass NAME / vm_fail NAME WHY     report one result ("VMTEST PASS NAME", "VMTEST FAIL NAME: WHY")
#   vm_failed                           status 0 when a vm_fail was reported
#   health                              GET /health, the body on stdout
#   call_tool NAME JSON                 POST /tool/NAME with JSON as the arguments, the body on stdout
#   json_get PATH < JSON                the JSON value at PATH (.a.b, .list[0]) as text; status 1
#                                       if absent or the JSON is malformed
#   json_str PATH < JSON                the same for a string value, without its quotes
#   assert_eq NAME GOT WANT             pass when GOT is exactly WANT
#   assert_contains NAME TEXT PART      pass when TEXT contains PART
#   wait_until SECONDS COMMAND...       retry COMMAND every 0.1 s until it succeeds or time runs out
#                                       (at least SECONDS: a try under TCG on a busy host is slower)
# A wait's SECONDS is generous (60): far more than the quick path needs under TCG on a loaded
# host, far less than the slow path takes (sleeps of 1000 s, a daemon that never stops), so a
# verdict never rests on how fast the VM runs.

RUNBOX_URL="${RUNBOX_URL:-http://127.0.0.1:7766}"
# How long one HTTP call may take before the test calls it a hang (busybox timeout: wget's own
# -T crashes busybox 1.35's wget).
RUNBOX_CALL_TIMEOUT="${RUNBOX_CALL_TIMEOUT:-60}"
VM_FAILED=0

vm_pass() {
	echo "VMTEST PASS $1"
}

vm_fail() {
	VM_FAILED=1
	# One line: the host side parses it.
	echo "VMTEST FAIL $1: $(printf '%s' "$2" | tr '\r\n' '  ' | cut -c1-300)"
}

vm_failed() {
	[ "$VM_FAILED" != 0 ]
}

health() {
	timeout "$RUNBOX_CALL_TIMEOUT" wget -q -O - "$RUNBOX_URL/health"
}

call_tool() {
	timeout "$RUNBOX_CALL_TIMEOUT" wget -q -O - \
		--header 'Content-Type: application/json' --post-data "$2" "$RUNBOX_URL/tool/$1"
}

# A small JSON reader: prints the raw text of the value whose path is PATH (the root is "",
# members ".name", array items "[i]"), compacted: strings keep their quotes and escapes as
# sent, so comparisons against them are exact. The text is split at its quotes first (an
# exec result can be a megabyte, and busybox awk's substr() costs as much as the whole string).
json_get() {
	awk -v want="$1" '
	function add(type, text) {
		nt++
		tt[nt] = type
		tv[nt] = text
	}
	# Splits the text between two strings into tokens: { } [ ] : , and literals.
	function lex(seg,   i, n, c, lit) {
		n = length(seg)
		lit = ""
		for (i = 1; i <= n; i++) {
			c = substr(seg, i, 1)
			if (index("{}[]:, \t\r\n", c) > 0) {
				if (lit != "")
					add("l", lit)
				lit = ""
				if (index("{}[]:,", c) > 0)
					add("p", c)
			} else {
				lit = lit c
			}
		}
		if (lit != "")
			add("l", lit)
	}
	# The contents of string token t, escapes as sent.
	function str(t,   i, out) {
		out = part[ps[t]]
		for (i = ps[t] + 1; i <= pe[t]; i++)
			out = out "\"" part[i]
		return out
	}
	function emit(a, b,   t, i) {
		for (t = a; t <= b; t++) {
			if (tt[t] != "s") {
				printf "%s", tv[t]
				continue
			}
			printf "\"%s", part[ps[t]]
			for (i = ps[t] + 1; i <= pe[t]; i++)
				printf "\"%s", part[i]
			printf "\""
		}
		printf "\n"
	}
	function value(path,   t0, i) {
		t0 = ti
		if (ti > nt || (tt[ti] == "p" && tv[ti] != "{" && tv[ti] != "[")) {
			bad = 1
			return
		}
		if (tv[ti] == "{" && tt[ti] == "p") {
			ti++
			if (tv[ti] == "}" && tt[ti] == "p")
				ti++
			else
				while (!bad) {
					if (tt[ti] != "s" || tv[ti + 1] != ":") {
						bad = 1
						return
					}
					ti += 2
					value(path "." str(ti - 2))
					if (tt[ti] == "p" && tv[ti] == "}") {
						ti++
						break
					}
					if (tt[ti] != "p" || tv[ti] != ",") {
						bad = 1
						return
					}
					ti++
				}
		} else if (tv[ti] == "[" && tt[ti] == "p") {
			ti++
			if (tv[ti] == "]" && tt[ti] == "p")
				ti++
			else
				for (i = 0; !bad; i++) {
					value(path "[" i "]")
					if (tt[ti] == "p" && tv[ti] == "]") {
						ti++
						break
					}
					if (tt[ti] != "p" || tv[ti] != ",") {
						bad = 1
						return
					}
					ti++
				}
		} else {
			ti++
		}
		if (!bad && path == want && !found) {
			found = 1
			first = t0
			last = ti - 1
		}
	}
	{ s = s $0 "\n" }
	END {
		np = split(s, part, "\"")
		# Odd parts lie between strings; a string ends at the first quote not escaped by an
		# odd number of backslashes.
		nt = 0
		inside = 0
		for (i = 1; i <= np; i++) {
			if (!inside) {
				lex(part[i])
				if (i < np) {
					inside = 1
					add("s", "")
					ps[nt] = i + 1
				}
				continue
			}
			if (i == np) {
				bad = 1
				break
			}
			if (match(part[i], /\\+$/) && RLENGTH % 2 == 1)
				continue
			pe[nt] = i
			inside = 0
		}
		ti = 1
		if (!bad)
			value("")
		if (ti <= nt)
			bad = 1
		if (!found || bad)
			exit 1
		emit(first, last)
	}'
}

json_str() {
	_js_v=$(json_get "$1") || return 1
	case $_js_v in
	\"*\") ;;
	*) return 1 ;;
	esac
	_js_v=${_js_v#\"}
	printf '%s\n' "${_js_v%\"}"
}

assert_eq() {
	if [ "$2" = "$3" ]; then
		vm_pass "$1"
	else
		vm_fail "$1" "got [$2], want [$3]"
	fi
}

assert_contains() {
	case $2 in
	*"$3"*) vm_pass "$1" ;;
	*) vm_fail "$1" "[$3] not in [$(printf '%s' "$2" | cut -c1-200)]" ;;
	esac
}

wait_until() {
	_wu_n=$(($1 * 10))
	shift
	while [ "$_wu_n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		_wu_n=$((_wu_n - 1))
	done
	"$@"
}
