#!/usr/bin/env bash
# Configures and builds one flavour of wick: build.sh [release|asan]  (output in build/<flavour>)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWICK_SANITIZE=ON) ;;
  *) echo "build.sh: unknown flavour '$flavour'" >&2; exit 2 ;;
esac
cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
cmake --build "build/$flavour" -- -j"$(nproc)"
