#!/usr/bin/env bash
# tests/fresh/debian12-root.sh - a bare Debian 12 root (debootstrap --variant=minbase bookworm,
# plus git) in which to run the README's two commands as a new user would. Not part of
# scripts/test.sh or CI: it needs root on the host, about 1.5 GiB of disk and the network.
#
#   tests/fresh/debian12-root.sh make          make the pristine root (once; kept in $ROOT.base)
#   tests/fresh/debian12-root.sh reset         copy the pristine root to $ROOT, dropping $ROOT
#   tests/fresh/debian12-root.sh enter [CMD]   a shell (or CMD) as root in $ROOT
#   tests/fresh/debian12-root.sh chroot [CMD]  CMD in $ROOT entered with a plain chroot(2)
#   tests/fresh/debian12-root.sh readme        reset, clone this checkout into $ROOT/root/runbox and
#                                              run ./scripts/run.sh (checking /health and exec) and
#                                              ./scripts/test.sh there; logs in $ROOT.logs/
#   tests/fresh/debian12-root.sh clean         remove $ROOT and $ROOT.base
#
# ROOT is /work/debian12-root unless RUNBOX_FRESH_ROOT says otherwise.
#
# How `enter` enters: new mount, pid and network namespaces (unshare), the root bind-mounted onto
# itself with fresh /proc, /sys, /tmp and the host's /dev, then pivot_root into it. A process
# there is not "chrooted" in the kernel's sense, so bubblewrap can make user namespaces as on a
# real machine (a chroot cannot: unshare(CLONE_NEWUSER) fails with EPERM; `chroot` shows what
# runboxd says then). The network namespace reaches the outside through slirp4netns, a user-mode
# NAT, and has a loopback of its own, so the suite run inside uses port 7766 without meeting the
# host's. The mirror is the one the host's apt uses; the host's extra certificate authorities
# (/usr/local/share/ca-certificates) are copied in, for networks that inspect TLS.
set -euo pipefail

ROOT=${RUNBOX_FRESH_ROOT:-/work/debian12-root}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() {
    echo "debian12-root: $*" >&2
    exit 1
}

[ "$(id -u)" -eq 0 ] || die "run me as root (debootstrap, unshare and pivot_root need it)"

need_host_pkgs() {
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

# The first bookworm mirror in the host's apt sources (deb822 or one-line), else debootstrap's
# default.
host_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' "$f"
    done | head -n 1
    grep -hs '^deb .* bookworm main' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
        awk '{ print $2 }' | head -n 1 || true
}

cmd_make() {
    local mirror tmp
    if [ -x "$ROOT.base/bin/sh" ]; then
        echo "debian12-root: $ROOT.base exists (clean to remake it)"
        return
    fi
    need_host_pkgs debootstrap slirp4netns
    mirror=$(host_mirror | head -n 1 || true)
    tmp=$ROOT.base.partial
    rm -rf "$tmp"
    echo "debian12-root: debootstrap --variant=minbase --include=git bookworm ${mirror:-(default mirror)}"
    debootstrap --variant=minbase --include=git bookworm "$tmp" ${mirror:+"$mirror"}
    # A user's machine has apt lists of its own; this one starts with none, like a new install.
    rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/archives/*.deb
    mv "$tmp" "$ROOT.base"
    echo "debian12-root: made $ROOT.base ($(du -sh "$ROOT.base" | cut -f1))"
}

cmd_reset() {
    [ -x "$ROOT.base/bin/sh" ] || die "no pristine root at $ROOT.base: run '$0 make' first"
    rm -rf "$ROOT"
    cp -a "$ROOT.base" "$ROOT"
    # The host's own certificate authorities: where the network inspects TLS (as here), npm in
    # the root needs them as the host's does. They join the root's bundle when the README's
    # commands install ca-certificates, and NODE_EXTRA_CA_CERTS points node at that bundle.
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
        mkdir -p "$ROOT/usr/local/share/ca-certificates"
        cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
    fi
    echo "debian12-root: $ROOT is a fresh copy of $ROOT.base"
}

# The inside of `enter`: runs in the new namespaces as pid 1, still seeing the host's files.
# $1: the fifo slirp4netns reports ready on; the rest: the command.
inner() {
    local ready=$1
    shift
    read -r _ <"$ready"
    ip link set lo up
    mount --make-rprivate /
    mount --bind "$ROOT" "$ROOT"
    mount -t proc proc "$ROOT/proc"
    # No cgroup tree: the root's runboxd limits its runs with rlimits, as in a container without
    # cgroup access. Sharing the host's tree would let runboxds of different pid namespaces take
    # each other's cgroups for stale (fixed in this one, not in older builds on the host).
    mount -t sysfs sysfs "$ROOT/sys"
    mount --rbind /dev "$ROOT/dev"
    # A /dev/shm of its own, as a container has: :memory: workspaces live there, and older
    # runboxd builds on the host took those of another pid namespace's daemons for stale.
    mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"
    mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
    # slirp4netns's DNS forwarder.
    echo "nameserver 10.0.2.3" >"$ROOT/etc/resolv.conf"
    mkdir -p "$ROOT/.oldroot"
    cd "$ROOT"
    pivot_root . .oldroot
    umount -l /.oldroot
    rmdir /.oldroot
    cd /root
    exec env -i HOME=/root TERM="${TERM:-dumb}" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt} "$@"
}

cmd_enter() {
    local tmp pid slirp rc=0
    [ -x "$ROOT/bin/sh" ] || die "no root at $ROOT: run '$0 make' and '$0 reset' first"
    need_host_pkgs slirp4netns
    [ $# -gt 0 ] || set -- bash -l
    tmp=$(mktemp -d /tmp/12a-fresh-XXXXXX)
    mkfifo "$tmp/ready"
    unshare --mount --pid --net --fork bash -c "$(declare -f inner); ROOT='$ROOT'; inner \"\$@\"" \
        inner "$tmp/ready" "$@" &
    pid=$!
    # unshare itself is in the new network namespace; slirp4netns gives it tap0 with NAT.
    slirp4netns --configure --mtu=65520 --disable-host-loopback --ready-fd=3 "$pid" tap0 \
        3>"$tmp/ready" >"$tmp/slirp.log" 2>&1 &
    slirp=$!
    wait "$pid" || rc=$?
    kill "$slirp" 2>/dev/null || true
    wait "$slirp" 2>/dev/null || true
    rm -rf "$tmp"
    return "$rc"
}

cmd_chroot() {
    [ -x "$ROOT/bin/sh" ] || die "no root at $ROOT: run '$0 make' and '$0 reset' first"
    [ $# -gt 0 ] || set -- bash -l
    unshare --mount --fork bash -c '
        mount --make-rprivate /
        mount -t proc proc "$0/proc"
        mount --rbind /dev "$0/dev"
        mount -t tmpfs tmpfs "$0/tmp"
        exec chroot "$0" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin "$@"' "$ROOT" "$@"
}

# The README as a new user meets it: clone, ./scripts/run.sh, then ./scripts/test.sh.
cmd_readme() {
    local logs=$ROOT.logs rc=0
    cmd_reset
    mkdir -p "$logs"
    rm -f "$logs"/*
    git clone -q --no-hardlinks "$repo" "$ROOT/root/runbox"
    git -C "$ROOT/root/runbox" log --oneline -1 | tee "$logs/commit"
    cat >"$ROOT/root/readme.sh" <<'INNER'
#!/bin/bash
# Runs in the fresh root: the README's commands, in order, as root.
set -u
cd /root/runbox
start=$SECONDS
./scripts/run.sh --port 20766 --workspace :memory: >/root/run.log 2>&1 &
runpid=$!
ok=0
# run.sh installs, builds, then starts runboxd; wait for it or for run.sh to fail.
while kill -0 "$runpid" 2>/dev/null; do
    if command -v curl >/dev/null && curl -sf localhost:20766/health >/root/health.json 2>/dev/null; then
        ok=1
        break
    fi
    sleep 1
done
if [ "$ok" = 1 ]; then
    echo "run.sh: runboxd answered /health after $((SECONDS - start))s"
    curl -s -H 'Content-Type: application/json' -d '{"command":"echo sandboxed; id -u"}' \
        localhost:20766/tool/exec | tee /root/exec.json
    echo
    grep -q '"ok":true' /root/exec.json && grep -q sandboxed /root/exec.json || ok=0
fi
# run.sh exec'd runboxd, so $runpid is the daemon now.
kill "$runpid" 2>/dev/null
wait "$runpid" 2>/dev/null
if [ "$ok" != 1 ]; then
    echo "run.sh: FAILED; end of its output:"
    tail -n 40 /root/run.log
    exit 1
fi
./scripts/test.sh
INNER
    chmod +x "$ROOT/root/readme.sh"
    set +e
    cmd_enter /root/readme.sh 2>&1 | tee "$logs/readme.log"
    rc=${PIPESTATUS[0]}
    set -e
    cp "$ROOT"/root/*.log "$ROOT"/root/*.json "$logs/" 2>/dev/null || true
    echo "debian12-root: readme exited $rc; logs in $logs"
    return "$rc"
}

cmd_clean() {
    rm -rf "$ROOT" "$ROOT.base" "$ROOT.base.partial" "$ROOT.logs"
}

case ${1:-} in
make | reset | enter | chroot | readme | clean)
    c=$1
    shift
    "cmd_$c" "$@"
    ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
