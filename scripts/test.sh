#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build, then the ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
for flavour in release asan; do
  echo "== $flavour build"
  ./scripts/build.sh "$flavour"
  echo "== $flavour tests"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "build/$flavour" --output-on-failure -j"$(nproc)"
done
