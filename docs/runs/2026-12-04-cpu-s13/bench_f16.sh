#!/bin/bash
# Session 13: plain f16 / bf16 weights on the CPU (the hidden-768 llama of mk_k768.py, and
# llama-quantize's BF16 of it): previous tree, this tree, llama.cpp. usage: bench_f16.sh OLD NEW LB
OLD=$1 NEW=$2 LB=$3
for m in /tmp/k768-f16.gguf /tmp/k768-bf16.gguf; do
  for t in 1 2; do
    for v in old new; do
      bin=$OLD; [ $v = new ] && bin=$NEW
      echo -n "$m t=$t $v: "
      OMP_NUM_THREADS=$t timeout 600 $bin bench gen --model $m --prompt-tokens 44 -n 8 2>&1 | grep "| cpu" | awk -F'|' '{print "prefill", $6, "decode", $7}'
    done
  done
  $LB -m $m -t 1,2 -p 44 -n 8 -r 2 2>&1 | grep CPU
done
