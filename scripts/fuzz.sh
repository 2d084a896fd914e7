#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (ASan + UBSan) and runs each for a bounded
# time from its seed corpus: fuzz.sh [seconds per target, default 60]. The targets run side by
# side (one per core). Exits non-zero when a target finds a crash, a leak, a timeout or an
# out-of-memory input; the input is saved as build/fuzz/run/<target>-crash-... (minimise it with
# `<target> -minimize_crash=1 <input>` and add it to fuzz/corpus/<target>/ as a regression seed).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${WICK_FUZZ_SECONDS:-60}}
build=build/fuzz
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja >/dev/null
cmake --build "$build" -- -j"$(nproc)" | grep -v '^\[' || true
test -x "$build/make_fuzz_seeds"

run="$build/run"
rm -rf "$run"
mkdir -p "$run"
"$build/make_fuzz_seeds" "$run/seeds"

pids=()
names=()
for exe in "$build"/fuzz_*; do
  name=${exe##*/fuzz_}
  corpus="$run/corpus_$name"
  mkdir -p "$corpus" "fuzz/corpus/$name" "$run/seeds/$name"
  dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  echo "== fuzz_$name: ${seconds}s"
  # New inputs go to the scratch corpus; the committed regressions and the seeds are read only.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$exe" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -max_len=65536 -print_final_stats=1 -artifact_prefix="$run/$name-" \
    "$corpus" "fuzz/corpus/$name" "$run/seeds/$name" >"$run/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
done

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
