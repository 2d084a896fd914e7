#!/usr/bin/env bash
# Configures and builds one flavour of wick: build.sh [release|asan|tsan]  (output in
# build/<flavour>)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  # No CUDA backend under ASan: CI has no CUDA device, the release build compiles the backend and
  # runs what of it can run without one; here its sources and CUDA-only tests cost ~90 CPU-seconds.
  # -g1: line tables and function names, what the sanitizers' reports print; full debug info made
  # each file ~25% slower to compile (test_qmatmul_fused.cpp: 21.3 s against 16.6 s). -O1 (ASan's
  # own advice): the library compiled in 595 CPU-seconds against 842 at -O2 and the ASan tests
  # ran 284 s against 276.
  asan) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWICK_SANITIZE=ON -DWICK_CUDA=OFF
              "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
              "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG") ;;
  # ThreadSanitizer, by hand (not in CI: the suite runs 5-15x slower under it): e.g.
  # build/tsan/tests/wick_tests --gtest_filter='ThreadPool.*:Gpu/GpuReadBack*', or
  # tests/serve/test_serve.py build/tsan/wick. CPU kernels take their baseline version there
  # (src/cpu/row_math.h). No CUDA, as under ASan.
  tsan) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWICK_CUDA=OFF
              "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG -fsanitize=thread"
              "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG -fsanitize=thread"
              -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread) ;;
  *) echo "build.sh: unknown flavour '$flavour'" >&2; exit 2 ;;
esac
# ccache when installed: scripts/consumers.sh rebuilds the library with the release flags, and
# paths relative to the tree make those builds cache hits.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# The release build has the Python module too (python/, against install-deps.sh's venv).
if [ "$flavour" = release ] && [ -x .cache/venv/bin/python ]; then
  args+=(-DWICK_PYTHON=ON -DPython_EXECUTABLE="$PWD/.cache/venv/bin/python")
fi
cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
cmake --build "build/$flavour" -- -j"$(nproc)"
