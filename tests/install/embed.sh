#!/usr/bin/env bash
# tests/install/embed.sh BUILD_DIR SOURCE_DIR - the library as an embedder sees it.
#
# Installs the build into a temporary prefix (cmake --install --prefix), takes the example out of
# docs/library.md (the C block after the "<!-- example: greet.c -->" line, so the doc cannot rot),
# compiles it with `pkg-config --cflags --libs runbox-mcp` against the installed library, once
# linked with the shared library and once with the static one, runs both on one tools/call and
# checks the answer. It also compiles the conformance fixture the same way, which proves that the
# fixture uses nothing but the public headers and library. Needs cc and pkg-config.
set -euo pipefail

build=$(cd "${1:?usage: embed.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: embed.sh BUILD_DIR SOURCE_DIR}" && pwd)
for tool in cc pkg-config; do
    command -v "$tool" >/dev/null || {
        echo "embed.sh: $tool is not installed"
        exit 77
    }
done
# A sanitizer build installs instrumented libraries: what links them needs the same runtime.
san=$(sed -n 's/^SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
cflags=(-std=c11 -Wall -Wextra -Werror)
[ -z "$san" ] || cflags+=("-fsanitize=$san" -fno-omit-frame-pointer)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || {
    cat "$tmp/install.log"
    exit 1
}
pc=$(find "$prefix" -name runbox-mcp.pc)
[ -n "$pc" ] || {
    echo "embed.sh: cmake --install put no runbox-mcp.pc under $prefix"
    exit 1
}
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir runbox-mcp)
case $(cd "$libdir" 2>/dev/null && pwd -P) in
"$(cd "$prefix" && pwd -P)"/*) ;;
*)
    echo "embed.sh: runbox-mcp.pc names libdir $libdir, outside the prefix it was installed in"
    exit 1
    ;;
esac

# The example: the first ```c block after the marker line.
awk '/<!-- example: greet.c -->/ { found = 1; next }
     found && /^```c$/ { on = 1; next }
     on && /^```$/ { exit }
     on { print }' "$src/docs/library.md" >"$tmp/greet.c"
[ -s "$tmp/greet.c" ] || {
    echo "embed.sh: no example after <!-- example: greet.c --> in docs/library.md"
    exit 1
}
echo "example: $(wc -l <"$tmp/greet.c") lines from docs/library.md"

# shellcheck disable=SC2046 # pkg-config prints one flag per word
cc "${cflags[@]}" -pedantic -o "$tmp/greet-shared" "$tmp/greet.c" \
    $(pkg-config --cflags --libs runbox-mcp)
# Static: the archive itself, then what it needs (pkg-config --static adds Libs.private).
# shellcheck disable=SC2046
cc "${cflags[@]}" -pedantic -o "$tmp/greet-static" "$tmp/greet.c" \
    $(pkg-config --cflags runbox-mcp) "$libdir/librunbox-mcp.a" \
    $(pkg-config --static --libs runbox-mcp | sed 's/-lrunbox-mcp\b//')
if readelf -d "$tmp/greet-static" | grep -q 'librunbox-mcp\.so'; then
    echo "embed.sh: the static build still needs librunbox-mcp.so"
    exit 1
fi

call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
want='"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false'
for kind in shared static; do
    out=$(printf '%s\n' "$call" | LD_LIBRARY_PATH=$libdir "$tmp/greet-$kind")
    case $out in
    '{"jsonrpc":"2.0","id":1,"result":{'*"$want"*) echo "greet ($kind): $out" ;;
    *)
        echo "embed.sh: greet ($kind) answered: $out"
        echo "expected the tools/call result holding: $want"
        exit 1
        ;;
    esac
done

# shellcheck disable=SC2046
cc "${cflags[@]}" -o "$tmp/fixture" "$src/tests/conformance/fixture.c" \
    $(pkg-config --cflags runbox-mcp) "$libdir/librunbox-mcp.a" \
    $(pkg-config --static --libs runbox-mcp | sed 's/-lrunbox-mcp\b//')
echo "the conformance fixture builds against the installed headers and library alone"
