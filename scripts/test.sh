#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build, the ASan+UBSan build, then the GGUF and
# safetensors parsers under libFuzzer for a bounded time (WICK_FUZZ_SECONDS per target, default 45).
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
echo "== fuzz"
./scripts/fuzz.sh "${WICK_FUZZ_SECONDS:-45}"
