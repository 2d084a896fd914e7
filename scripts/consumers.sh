#!/usr/bin/env bash
# Builds and runs examples/consumer, a project that uses wick, in each way the README shows:
# find_package(wick) against build/release installed with `cmake --install` (nothing is rebuilt),
# add_subdirectory of this tree, FetchContent of this tree (FETCHCONTENT_SOURCE_DIR_WICK: the
# git download itself is not exercised), and pkg-config's wick.pc. Needs build/release
# (scripts/build.sh release). The last two rebuild the library; with ccache they are cache hits
# of the release build: the flags match, and every build lies two levels under this folder, so
# paths relative to CCACHE_BASEDIR match too.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ ! -f build/release/build.ninja ]; then
  echo "consumers.sh: build/release is missing (scripts/build.sh release)" >&2
  exit 1
fi
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
prefix=$root/build/consumer-prefix
rm -rf "$prefix"
cmake --install build/release --prefix "$prefix" >/dev/null

# consumer <way> [cmake args...]: configures, builds and runs build/consumer-<way>.
consumer() {
  local way=$1 dir=build/consumer-$1
  shift
  echo "== consumer: $way"
  rm -rf "$dir"
  cmake -S examples/consumer -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DWICK_FROM="$way" "$@" >"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  cmake --build "$dir" -- -j"$(nproc)" >>"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  (cd "$dir" && ./consumer)
}
consumer find_package -DCMAKE_PREFIX_PATH="$prefix"
consumer add_subdirectory
consumer fetchcontent -DFETCHCONTENT_SOURCE_DIR_WICK="$root"

echo "== consumer: pkg-config"
dir=build/consumer-pkg-config
rm -rf "$dir"
mkdir -p "$dir"
pc=$(find "$prefix" -name wick.pc)
export PKG_CONFIG_PATH=${pc%/wick.pc}
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
${CXX:-c++} -std=c++20 -O2 $(pkg-config --cflags wick) examples/consumer/main.cpp -o "$dir/consumer" \
  $(pkg-config --libs wick)
"$dir/consumer"
