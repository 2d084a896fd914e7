#!/bin/bash
# Session 13: CPU decode / prefill of the previous tree (d38142b, OLD) and this one (NEW) beside
# llama.cpp 0.3.36's CPU llama-bench (LB), interleaved, on three files: the real SmolLM2-135M Q4_1,
# the same requantized by llama-quantize to Q4_K_M (mostly q5_0: k = 576 is not a multiple of 256),
# and a random-weight llama with hidden 768 quantized to Q4_K_M (q4_K + q6_K).
# usage: bench_cpu.sh OLD NEW LB > out.txt
OLD=$1 NEW=$2 LB=$3
for m in models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/smol-q4km.gguf /tmp/k768-q4km.gguf; do
  for round in 1 2; do
    for t in 1 2; do
      for v in old new; do
        bin=$OLD; [ $v = new ] && bin=$NEW
        echo -n "$m round=$round t=$t $v: "
        OMP_NUM_THREADS=$t $bin bench gen --model $m --prompt-tokens 44 -n 64 2>&1 | grep "| cpu" | awk -F'|' '{print "prefill", $6, "decode", $7}'
      done
    done
  done
  $LB -m $m -t 1,2 -p 44 -n 64 -r 3 2>&1 | grep -E "CPU"
done
