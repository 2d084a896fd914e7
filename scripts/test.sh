#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build and its Python module (pytest), `wick
# serve` with the openai client (tests/serve/test_serve.py, in both builds), wick used by other
# projects (scripts/consumers.sh), the ASan+UBSan build, then the GGUF and safetensors parsers under
# libFuzzer for a bounded time (WICK_FUZZ_SECONDS per target, default 45).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
for flavour in release asan; do
  echo "== $flavour build"
  ./scripts/build.sh "$flavour"
  echo "== $flavour tests"
  # The conformance suite runs on every device in the release pass (the CPU and lavapipe); under
  # ASan+UBSan it runs on the CPU only, while the GPU runtime's own tests (Gpu/*, Vulkan*) run on
  # lavapipe in both: an instrumented pass over every kernel on a software GPU would double CI time.
  # The sweeps of the quantized formats through lavapipe's kernels (Devices/GpuQMatMulSweeps,
  # Devices/GpuQMatVecFuseSweeps, Devices/GpuQMatVecStageSweeps: minutes under ASan, the kernels'
  # numbers, not host code) and the NVRTC compile of every CUDA
  # kernel (CudaKernels.*: NVRTC's time, not wick's host code) run in the release pass only (the
  # ASan build has no CUDA backend: scripts/build.sh).
  exclude=()
  [ "$flavour" = asan ] && exclude=(-E 'Devices/.*/vulkan_[0-9]+')
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
    ctest --test-dir "build/$flavour" --output-on-failure -j"$(nproc)" "${exclude[@]}"
  echo "== serve ($flavour)"
  # Under ASan a smaller load test: its 200 requests alone take ~2.5 minutes there.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
    .cache/venv/bin/python tests/serve/test_serve.py "build/$flavour/wick" \
    --requests "$([ "$flavour" = asan ] && echo 40 || echo 200)"
  if [ "$flavour" = release ]; then
    echo "== python"
    PYTHONPATH=build/release/python .cache/venv/bin/python -m pytest -q python/tests
    echo "== consumers"
    ./scripts/consumers.sh
  fi
done
echo "== fuzz"
./scripts/fuzz.sh "${WICK_FUZZ_SECONDS:-45}"
