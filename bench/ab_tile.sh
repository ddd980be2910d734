#!/bin/sh
# In-process A/B of the Tile engine against its code at git revision REV: see
# bench/ab_tile.c for why. Builds into a temporary folder, runs, cleans up.
#
#   bench/ab_tile.sh REV [BUILD_DIR [CASE [PASSES]]]
#
# BUILD_DIR is a release meson build of this tree (default build/release); the
# old eval/ sources are compiled with its flags and their symbols renamed.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 REV [BUILD_DIR [CASE [PASSES]]]" >&2; exit 2; }
rev=$1
build=${2:-build/release}
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -f "$build/libtileopt.a" ] || { echo "ab_tile: no $build/libtileopt.a: build it first" >&2; exit 2; }
ninja -C "$build" >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/eval"
for f in $(git ls-tree --name-only "$rev" eval/ | grep -E '\.h$|/tile\.c$'); do
    git show "$rev:$f" >"$tmp/$f"
done

libs=$(pkg-config --libs libprotobuf-c libcjson)
cflags="-std=c11 -O3 -D_GNU_SOURCE -fno-strict-aliasing -I$root/include -I$root/$build -I$root/$build/proto"
rename=""
for s in tile_engine tile_engine_isa kernel_tile kernel_tile1 kernel_tile_promoted; do
    rename="$rename -D$s=old_$s"
done
# shellcheck disable=SC2086 # word splitting of the flag lists is intended
{
    cc $cflags -I"$tmp" -I"$root" $rename -c "$tmp/eval/tile.c" -o "$tmp/old_tile.o"
    cc $cflags -I"$root" -Wall -Wextra -c bench/ab_tile.c -o "$tmp/ab_tile.o"
    cc "$tmp/ab_tile.o" "$tmp/old_tile.o" "$build/libtileopt.a" \
        $libs -lm -o "$tmp/ab_tile"
}
echo "old: $(git rev-parse --short "$rev"), new: this tree"
"$tmp/ab_tile" "${3:-0}" "${4:-12}"
