#!/usr/bin/env bash
# tests/vm/run.sh - run runboxd's VM tests: tests that need a kernel set up unlike the host's,
# today the cgroup v2 memory and process limits of the exec sandbox (this host and CI have a
# hybrid cgroup layout whose v2 hierarchy offers no memory or pids controller).
#
#   tests/vm/run.sh BUILD_DIR [TEST...]     e.g. tests/vm/run.sh build cgroup
#   ctest --test-dir BUILD_DIR -L vm        the same, registered as the ctest test vm_cgroup
#
# TEST names a script tests/vm/TEST.vm.sh (default: all of them). The runboxd under test is
# BUILD_DIR/daemon/runboxd: build it first (cmake --build BUILD_DIR --target runboxd).
#
# What happens: an initramfs is built in a temporary directory (removed afterwards) with static
# busybox and its applet links, dash as /bin/sh, runboxd, bwrap, every shared library they load
# (as ldd lists them, at the same paths), /etc/passwd and /etc/group (root, nobody) and the test
# scripts. qemu boots the newest /boot/vmlinuz-* or /var/cache/runbox-vm/boot/vmlinuz-* (or
# $RUNBOX_VM_KERNEL) with 1 GiB and 2 CPUs;
# tests/vm/init mounts a pure cgroup v2 hierarchy on /sys/fs/cgroup, moves the root onto a
# tmpfs (bwrap cannot pivot_root out of the initramfs' rootfs), runs each TEST.vm.sh as root
# and powers off. The scripts run runboxd as root (it drops to nobody) and call its HTTP API
# with busybox wget (helpers in tests/vm/lib.sh). No network, no disk image, no modules: the
# kernel needs initramfs, devtmpfs, tmpfs, cgroup2 with memory and pids, user namespaces and a
# serial console built in (Debian's linux-image-cloud-amd64 has them).
#
# What they cover (cgroup.vm.sh, runboxd with --exec-memory-mb 64 --exec-procs 64): /health
# reports memory and procs limits by "cgroup" and the daemon's cgroup directory; a shell that
# outgrows 64 MiB is killed with "[killed: memory limit]" (structured killed: "memory limit"); a fork bomb
# returns and leaves the daemon usable; a background run's processes (setsid ones too) live in
# <cgroup>/exec-<pid>, and kill removes them and the directory; no exec-* is left at the end;
# runboxd under no_clone3 (clone3 refused by seccomp, as in Docker) reports rlimits with the
# reason, and a memory hog then fails an allocation instead of being OOM-killed.
# The first checks (vm_controllers, start, exec_echo, daemon_stop) test the harness itself.
#
# Output: one line per result ("PASS cgroup.exec_echo", "FAIL cgroup.memory_killed: why"), a
# summary with the boot time, and on any failure the last 60 lines of the VM's console (with
# the tail of runboxd's log). A run takes about 7 s under TCG on a 2-core machine.
# Exit status: 0 all passed; 1 a test failed, the VM did not finish, or the run timed out;
# 2 usage error; 77 skipped (qemu, a readable kernel image, bwrap, dash, static busybox or
# cpio missing), with the reason on one line. ctest counts 77 as skipped.
#
# Requirements (Debian): qemu-system-x86 busybox-static bubblewrap dash cpio, and a kernel
# (scripts/install-deps.sh test installs them all; the kernel is unpacked from
# linux-image-*-cloud-amd64 into /var/cache/runbox-vm rather than installed). With a usable /dev/kvm it boots with -enable-kvm -cpu host; when that fails or does
# not reach the tests within RUNBOX_VM_KVM_GRACE seconds (default 20; nested VMs whose KVM
# refuses the CPU model or hangs), it boots again with qemu's TCG emulation.
#
# Environment: RUNBOX_VM_KERNEL (kernel image), RUNBOX_VM_TIMEOUT (seconds for the whole run,
# default 180 with KVM, 600 with TCG, where a loaded host has taken 240; qemu is killed when it
# runs out), RUNBOX_VM_ACCEL=kvm|tcg
# (no fallback), RUNBOX_VM_VERBOSE=1 (stream the VM's console to stderr), RUNBOX_VM_KEEP=1
# (keep the temporary directory with the initramfs and the console log).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  echo "usage: tests/vm/run.sh BUILD_DIR [TEST...]   (TEST: a tests/vm/TEST.vm.sh)" >&2
  exit 2
}

skip() {
  echo "vm: skipped: $*"
  exit 77
}

[[ $# -ge 1 ]] || usage
BUILD_DIR="$1"
shift

# ---- what to run --------------------------------------------------------------------------

TESTS=("$@")
if [[ ${#TESTS[@]} -eq 0 ]]; then
  for f in "$HERE"/*.vm.sh; do
    [[ -e $f ]] && TESTS+=("$(basename "$f" .vm.sh)")
  done
fi
[[ ${#TESTS[@]} -gt 0 ]] || { echo "vm: no tests/vm/*.vm.sh found" >&2; exit 2; }
for t in "${TESTS[@]}"; do
  [[ $t =~ ^[A-Za-z0-9_-]+$ && -f $HERE/$t.vm.sh ]] || {
    echo "vm: no test named '$t' (there is no tests/vm/$t.vm.sh)" >&2
    usage
  }
done

# ---- prerequisites ------------------------------------------------------------------------

QEMU="$(command -v qemu-system-x86_64)" ||
  skip "qemu-system-x86_64 is not installed (Debian: apt-get install qemu-system-x86)"
if [[ -n ${RUNBOX_VM_KERNEL:-} ]]; then
  KERNEL="$RUNBOX_VM_KERNEL"
  [[ -f $KERNEL ]] || skip "RUNBOX_VM_KERNEL=$KERNEL does not exist"
else
  shopt -s nullglob
  # /var/cache/runbox-vm/boot: where scripts/install-deps.sh test unpacks Debian's cloud kernel.
  kernels=(/boot/vmlinuz-* /var/cache/runbox-vm/boot/vmlinuz-*)
  shopt -u nullglob
  [[ ${#kernels[@]} -gt 0 ]] ||
    skip "no kernel image in /boot or /var/cache/runbox-vm/boot (scripts/install-deps.sh test unpacks one; or set RUNBOX_VM_KERNEL)"
  KERNEL="$(printf '%s\n' "${kernels[@]}" | sort -V | tail -n 1)"
fi
[[ -r $KERNEL ]] || skip "the kernel image $KERNEL is not readable by this user (set RUNBOX_VM_KERNEL)"
BWRAP="$(command -v bwrap)" || skip "bwrap is not installed (Debian: apt-get install bubblewrap)"
DASH="$(command -v dash)" || skip "dash is not installed (Debian: apt-get install dash)"
BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
  # The static build (busybox-static) has wget, switch_root and the rest in one file.
  if [[ -x $b ]] && ! ldd "$b" >/dev/null 2>&1; then
    BUSYBOX="$b"
    break
  fi
done
[[ -n $BUSYBOX ]] || skip "no static busybox (Debian: apt-get install busybox-static)"
command -v cpio >/dev/null || skip "cpio is not installed (Debian: apt-get install cpio)"

RUNBOXD="$BUILD_DIR/daemon/runboxd"
[[ -x $RUNBOXD ]] || {
  echo "vm: $RUNBOXD is not built: cmake --build $BUILD_DIR --target runboxd" >&2
  exit 1
}

# KVM when /dev/kvm opens for this user (the boot below still falls back to TCG when KVM
# cannot boot the kernel, as in some nested VMs); RUNBOX_VM_ACCEL=kvm|tcg forces one.
ACCEL="${RUNBOX_VM_ACCEL:-}"
if [[ -z $ACCEL ]]; then
  ACCEL=tcg
  if [[ -r /dev/kvm && -w /dev/kvm ]]; then
    ACCEL=kvm
  fi
fi
[[ $ACCEL == kvm || $ACCEL == tcg ]] || { echo "vm: RUNBOX_VM_ACCEL must be kvm or tcg" >&2; exit 2; }
for v in RUNBOX_VM_TIMEOUT RUNBOX_VM_KVM_GRACE; do
  [[ -z ${!v:-} || ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "vm: $v must be whole seconds" >&2; exit 2; }
done
# How long a KVM boot may take to reach the tests before TCG is tried instead.
KVM_GRACE="${RUNBOX_VM_KVM_GRACE:-20}"

# ---- the initramfs ------------------------------------------------------------------------

WORK="$(mktemp -d "${TMPDIR:-/tmp}/runbox-vm.XXXXXX")"
QPID=""
TAILPID=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [[ -n $QPID ]] && kill -0 "$QPID" 2>/dev/null; then
    kill -TERM "$QPID" 2>/dev/null || true
    wait "$QPID" 2>/dev/null || true
  fi
  if [[ -n $TAILPID ]]; then
    kill "$TAILPID" 2>/dev/null || true
  fi
  if [[ ${RUNBOX_VM_KEEP:-0} == 1 ]]; then
    echo "vm: kept $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'echo "vm: interrupted" >&2; exit 130' INT
trap 'echo "vm: terminated" >&2; exit 143' TERM

ROOT="$WORK/root"
mkdir -p "$ROOT"/usr/{bin,sbin,lib,lib64} "$ROOT"/{etc,dev,proc,sys,tmp,mnt,root,vmtests}
for d in bin sbin lib lib64; do
  ln -s "usr/$d" "$ROOT/$d"
done

# Copies host file $1 to $2 in the image (default: the same path), and every library it loads,
# at the paths ldd shows, the dynamic loader included.
add_binary() {
  local src="$1" dst="${2:-$1}" lib
  mkdir -p "$ROOT$(dirname "$dst")"
  cp -L "$src" "$ROOT$dst"
  chmod 0755 "$ROOT$dst"
  while read -r lib; do
    [[ -e $ROOT$lib ]] && continue
    mkdir -p "$ROOT$(dirname "$lib")"
    cp -L "$lib" "$ROOT$lib"
  done < <(ldd "$src" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
}

add_binary "$BUSYBOX" /usr/bin/busybox
while read -r applet; do
  # sh is dash, as on Debian: the sandbox runs commands with /bin/sh -c.
  [[ -n $applet && $applet != sh && ! -e $ROOT/usr/bin/$applet ]] || continue
  ln -s busybox "$ROOT/usr/bin/$applet"
done < <("$BUSYBOX" --list)
add_binary "$DASH" /usr/bin/dash
ln -s dash "$ROOT/usr/bin/sh"
add_binary "$BWRAP" /usr/bin/bwrap
add_binary "$RUNBOXD" /usr/bin/runboxd
# tests/helpers/no_clone3.c: runs a program with clone3 refused (as Docker's seccomp profile does).
if [[ -x $BUILD_DIR/tests/no_clone3 ]]; then
  add_binary "$BUILD_DIR/tests/no_clone3" /usr/bin/no_clone3
fi

cat >"$ROOT/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$ROOT/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
cp "$HERE/init" "$ROOT/init"
chmod 0755 "$ROOT/init"
cp "$HERE/lib.sh" "$ROOT/vmtests/"
for t in "${TESTS[@]}"; do
  cp "$HERE/$t.vm.sh" "$ROOT/vmtests/"
done

INITRD="$WORK/initramfs.cpio.gz"
(cd "$ROOT" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) |
  gzip -1 >"$INITRD"

# ---- boot ---------------------------------------------------------------------------------

test_list="$(IFS=,; echo "${TESTS[*]}")"
# no_timer_check: under TCG on a busy host the kernel's early check of the timer interrupt can
# miss it and panic ("IO-APIC + timer doesn't work!"), as it did with the load average at 47.
QARGS=(-m 1024 -smp 2 -nographic -no-reboot -nic none
  -kernel "$KERNEL" -initrd "$INITRD"
  -append "console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdinit=/init runbox.tests=$test_list")

LOG="$WORK/console.log"

# Boots the VM with accelerator $1 and whole-run timeout $2 (seconds) in the background: QPID.
boot() {
  local args=("${QARGS[@]}")
  if [[ $1 == kvm ]]; then
    args+=(-enable-kvm -cpu host)
  else
    args+=(-accel tcg -cpu max)
  fi
  : >"$LOG"
  echo "vm: booting $(basename "$KERNEL") ($1, timeout $2 s): ${TESTS[*]}"
  timeout -k 5 "$2" "$QEMU" "${args[@]}" </dev/null >"$LOG" 2>&1 &
  QPID=$!
  if [[ ${RUNBOX_VM_VERBOSE:-0} == 1 ]]; then
    tail -n +1 -f --pid="$QPID" "$LOG" >&2 &
    TAILPID=$!
  fi
}

# Waits up to $1 seconds for the VM to reach its tests; status 1 when qemu ended or the time
# ran out first.
reached_tests() {
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    grep -q 'VMTEST BOOTED' "$LOG" && return 0
    kill -0 "$QPID" 2>/dev/null || break
    sleep 0.2
  done
  grep -q 'VMTEST BOOTED' "$LOG"
}

stop_qemu() {
  kill -TERM "$QPID" 2>/dev/null || true
  { wait "$QPID"; } 2>/dev/null || true
  QPID=""
}

ulimit -c 0 # a qemu that aborts (KVM refusing the CPU model) leaves no core file
start=$SECONDS
if [[ $ACCEL == kvm ]]; then
  TIMEOUT="${RUNBOX_VM_TIMEOUT:-180}"
  boot kvm "$TIMEOUT"
  # (2>/dev/null: bash's own "Aborted" notice when qemu refuses the CPU model)
  if ! reached_tests "$KVM_GRACE" 2>/dev/null && [[ -z ${RUNBOX_VM_ACCEL:-} ]]; then
    why="$(tr -d '\r' <"$LOG" | grep -m 1 'qemu-system' || true)"
    stop_qemu
    echo "vm: KVM did not boot the kernel within ${KVM_GRACE} s${why:+ ($why)}; using TCG"
    ACCEL=tcg
  fi
fi
if [[ $ACCEL == tcg ]]; then
  TIMEOUT="${RUNBOX_VM_TIMEOUT:-600}"
  boot tcg "$TIMEOUT"
fi
rc=0
wait "$QPID" || rc=$?
QPID=""
elapsed=$((SECONDS - start))

# ---- results ------------------------------------------------------------------------------

CLEAN="$WORK/console.txt"
# Without the carriage returns and the firmware's terminal escapes.
tr -d '\r' <"$LOG" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' >"$CLEAN"
failed=0
passed=0
while read -r line; do
  case $line in
    "VMTEST PASS "*) passed=$((passed + 1)); echo "PASS ${line#VMTEST PASS }" ;;
    "VMTEST FAIL "*) failed=$((failed + 1)); echo "FAIL ${line#VMTEST FAIL }" ;;
  esac
done < <(grep -oE 'VMTEST (PASS|FAIL) .*' "$CLEAN" || true)

for t in "${TESTS[@]}"; do
  end="$(grep -oE "VMTEST END $t [0-9]+" "$CLEAN" | tail -n 1 || true)"
  if [[ -z $end ]]; then
    echo "FAIL $t: the script did not finish (the VM timed out or crashed)"
    failed=$((failed + 1))
  elif [[ ${end##* } != 0 ]] &&
    ! sed -n "/VMTEST BEGIN $t\$/,/VMTEST END $t /p" "$CLEAN" | grep -q 'VMTEST FAIL '; then
    echo "FAIL $t: the script exited with status ${end##* } without reporting a failure"
    failed=$((failed + 1))
  fi
done
if ! grep -q 'VMTEST DONE' "$CLEAN"; then
  if [[ $rc == 124 || $rc == 137 ]]; then
    echo "FAIL vm: killed after the whole-run timeout of ${TIMEOUT} s (RUNBOX_VM_TIMEOUT)"
  else
    echo "FAIL vm: qemu exited with status $rc before the tests finished"
  fi
  failed=$((failed + 1))
fi
if [[ $passed -eq 0 && $failed -eq 0 ]]; then
  echo "FAIL vm: no test reported a result"
  failed=1
fi

booted="$(grep -oE 'VMTEST BOOTED [0-9.]+' "$CLEAN" | head -n 1 | awk '{ print $3 }' || true)"
echo "vm: $passed passed, $failed failed; kernel booted to the tests in ${booted:-?} s, whole run ${elapsed} s ($ACCEL)"
if [[ $failed -gt 0 ]]; then
  echo "vm: last 60 lines of the VM console:"
  tail -n 60 "$CLEAN" | sed 's/^/  | /'
  exit 1
fi
exit 0
