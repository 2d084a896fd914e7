#!/bin/bash
# Session 33 run 2: perplexity beside llama.cpp's llama-perplexity (CPU, Vulkan, CUDA against
# llama.cpp's CUDA with flash attention on and off), the serve features on GPUs (logprobs, echo),
# the device tests of forward_all.
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
( mkdir -p /tmp/lsrc && tar xJf $R/.dev/llama_src.tar.xz -C /tmp/lsrc && cmake -S /tmp/lsrc/llama.cpp -B /tmp/lb -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build /tmp/lb -j16 --target llama-perplexity > /dev/null; echo "rc=$? t=$(( $(date +%s) - S0 ))" ) > $O/llama_build.txt 2>&1 &
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
echo "model t=$(( $(date +%s) - S0 ))"
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 150 ./wick_tests --gtest_filter="*Llama.F32*:*Llama.Quantized*:*Llama.Architectures*:*Sampling*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -8
echo "t=$(( $(date +%s) - S0 ))"
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo > /dev/null; done
PYTHONPATH=/tmp/pyo timeout 120 python3 $R/.dev/s33/gpu_api.py ./wick /tmp/m.gguf $O/gpu_api.json > $O/gpu_api.txt 2>&1; echo "rc=$?" >> $O/gpu_api.txt
cat $O/gpu_api.txt | cut -c1-250
echo "t=$(( $(date +%s) - S0 ))"
P=$O/ppl.txt
C=$R/.dev/s33/corpus.txt
ppl() { echo "== $*" >> $P; /usr/bin/time -f "wall %e s" timeout 60 "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
for d in cuda vulkan cpu; do ppl ./wick perplexity -m /tmp/m.gguf -f $C -c 512 --chunks 16 --device $d; done
while ! grep -q rc= $O/llama_build.txt && [ $(( $(date +%s) - S0 )) -lt 470 ]; do sleep 5; done
cat $O/llama_build.txt
for fa in on off; do ppl env LD_LIBRARY_PATH=/tmp/lb/bin /tmp/lb/bin/llama-perplexity -m /tmp/m.gguf -f $C -c 512 --chunks 16 -ngl 99 -fa $fa; done
for d in cuda vulkan; do ppl ./wick perplexity -m /tmp/m.gguf -f $C -c 512 --chunks 16 --device $d; done
grep -hE "^==|Final|wall|rc=[^0]|chunks in|eval time" $P | cut -c1-200
echo "t=$(( $(date +%s) - S0 ))"
