#!/bin/bash
# Session 33 run 3: wick perplexity with the log-softmax on the device, beside llama.cpp's
# llama-perplexity (CUDA, flash attention on and off) in the same call; the GPU tests of the
# model, sampler and quantized products.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
S0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
( if [ ! -x /tmp/lb/bin/llama-perplexity ]; then mkdir -p /tmp/lsrc && tar xJf $R/.dev/llama_src.tar.xz -C /tmp/lsrc && cmake -S /tmp/lsrc/llama.cpp -B /tmp/lb -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build /tmp/lb -j16 --target llama-perplexity > /dev/null; fi; echo "rc=$? t=$(( $(date +%s) - S0 ))" ) > $O/llama_build.txt 2>&1 &
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 200 ./wick_tests --gtest_filter="*Llama*:*Sampling*:*QMatMul*:-*Vocab*:*Examples*:*ChatTemplate*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -8
echo "t=$(( $(date +%s) - S0 ))"
P=$O/ppl.txt
C=$R/.dev/s33/corpus.txt
ppl() { echo "== $*" >> $P; /usr/bin/time -f "wall %e s" timeout 60 "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
while ! grep -q rc= $O/llama_build.txt && [ $(( $(date +%s) - S0 )) -lt 480 ]; do sleep 5; done
cat $O/llama_build.txt
for r in 1 2; do
  for d in cuda vulkan; do ppl ./wick perplexity -m /tmp/m.gguf -f $C -c 512 --chunks 32 --device $d; done
  for fa in on off; do ppl env LD_LIBRARY_PATH=/tmp/lb/bin /tmp/lb/bin/llama-perplexity -m /tmp/m.gguf -f $C -c 512 --chunks 32 -ngl 99 -fa $fa; done
done
ppl ./wick perplexity -m /tmp/m.gguf -f $C -c 512 --chunks 32 --device cpu
grep -hE "^==|Final|wall|rc=[^0]|chunks in|per pass|eval time" $P | cut -c1-200
echo "t=$(( $(date +%s) - S0 ))"
