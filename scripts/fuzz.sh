#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (ASan + UBSan) and runs each for a bounded
# time: fuzz.sh [seconds per target, default 60]. The targets run side by side (one per core),
# each from its committed corpus (fuzz/corpus/<name>.tar.gz), the regression inputs in
# fuzz/regressions/<name>/ and fresh seeds from make_fuzz_seeds. Exits non-zero when a target finds
# a crash, a leak, a timeout or an out-of-memory input; the input is saved as
# build/fuzz/run/<name>-crash-... (see fuzz/README.md for what to do with it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${WICK_FUZZ_SECONDS:-60}}
build=build/fuzz
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja >/dev/null
if ! cmake --build "$build" -- -j"$(nproc)" >"$build/build.log" 2>&1; then
  cat "$build/build.log"
  echo "fuzz.sh: the fuzz build failed" >&2
  exit 1
fi

run="$build/run"
rm -rf "$run"
mkdir -p "$run"
"$build/make_fuzz_seeds" "$run/seeds"

pids=()
names=()
for exe in "$build"/fuzz_*; do
  [ -x "$exe" ] || continue
  name=${exe##*/fuzz_}
  # New inputs go to the first folder (build/fuzz/run/corpus_<name>); the others are read only.
  inputs=("$run/corpus_$name" "$run/base_$name" "$run/seeds/$name")
  mkdir -p "${inputs[@]}"
  if [ -f "fuzz/corpus/$name.tar.gz" ]; then tar xzf "fuzz/corpus/$name.tar.gz" -C "$run/base_$name"; fi
  if [ -d "fuzz/regressions/$name" ]; then inputs+=("fuzz/regressions/$name"); fi
  dict=()
  if [ -f "fuzz/$name.dict" ]; then dict=(-dict="fuzz/$name.dict"); fi
  echo "== fuzz_$name: ${seconds}s"
  # Inputs up to 4 MiB: big enough for headers of 100,000 entries (a quadratic parser shows as a
  # timeout), while libFuzzer still grows most inputs from the small corpus ones.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$exe" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -max_len=$((4 << 20)) -print_final_stats=1 -artifact_prefix="$run/$name-" \
    "${inputs[@]}" >"$run/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
done

if [ ${#pids[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets were built" >&2
  exit 1
fi
failed=0
for i in "${!pids[@]}"; do
  name=${names[$i]}
  if wait "${pids[$i]}"; then
    grep -E '^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb' "$run/$name.log" |
      sed "s/^/fuzz_$name: /"
    echo "fuzz_$name: passed"
  else
    echo "fuzz_$name: FAILED (log: $run/$name.log)"
    tail -n 60 "$run/$name.log"
    failed=1
  fi
done
exit $failed
