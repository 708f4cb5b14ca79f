#!/usr/bin/env bash
# Installs the Debian 12 packages Runbox needs, and nothing that is already there.
#
#   scripts/install-deps.sh build   what building and running runbox/runboxd needs, and the
#                                   programs exec promises (node, npm, python3, git)
#   scripts/install-deps.sh test    that, plus what scripts/test.sh needs (Check, clang for the
#                                   fuzz targets, clang-format, qemu and a kernel for the VM tests,
#                                   and Node.js when node >= 18 is missing)
#
# Runs apt-get as root, or through sudo for another user. Safe to run again: when every package
# is installed already it does not even refresh the package lists.
set -euo pipefail

mode=${1:-build}
case "$mode" in
build | test) ;;
*)
    echo "usage: $0 [build|test]" >&2
    exit 2
    ;;
esac

pkgs=(gcc make cmake pkg-config libcurl4-openssl-dev libcjson-dev libcivetweb-dev bubblewrap)
# What exec promises inside the sandbox (the exec tool's catalog "hostTools"): python3 and git
# from Debian, and node and npm (Debian's nodejs and npm) unless a node >= 18 with npm is there.
pkgs+=(python3 git)
# The sandbox sees only /usr, so a node under ~/.nvm or /opt does not count.
sandbox_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
node_major=0
if PATH=$sandbox_path command -v node >/dev/null 2>&1; then
    node_major=$(PATH=$sandbox_path node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
fi
if [ "$node_major" -lt 18 ] || ! PATH=$sandbox_path command -v npm >/dev/null 2>&1; then
    pkgs+=(nodejs npm)
fi
if [ "$mode" = test ]; then
    # libclang-rt-dev carries libFuzzer and the sanitizer runtimes for clang; apt only
    # recommends it, and we install without recommends.
    # lua5.1 with cjson and LuaSocket runs the Studio plugin's tests and its real poll loop.
    pkgs+=(check clang libclang-rt-dev clang-format ca-certificates lua5.1 lua-cjson lua-socket)
    # tests/vm/: qemu boots a pure cgroup v2 kernel with an initramfs of busybox, dash and runboxd.
    pkgs+=(qemu-system-x86 busybox-static cpio dash)
fi

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
    (cd "$tmp" && "${sudo[@]}" apt-get -q download "$pkg")
    "${sudo[@]}" mkdir -p "$dir"
    dpkg-deb --fsys-tarfile "$tmp"/*.deb | "${sudo[@]}" tar -x -C "$dir" --wildcards './boot/vmlinuz-*'
    rm -rf "$tmp"
}

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi

missing=()
for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#pkgs[@]} packages are installed"
else
    if [ ${#sudo[@]} -gt 0 ] && ! command -v sudo >/dev/null 2>&1; then
        echo "install-deps: need root to install: ${missing[*]} (run as root, or install sudo)" >&2
        exit 1
    fi
    echo "install-deps: installing ${missing[*]}"
    # env, not export: sudo would drop an exported DEBIAN_FRONTEND.
    apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
    "${apt[@]}" update
    "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
fi
if [ "$mode" = test ]; then
    vm_kernel
fi
