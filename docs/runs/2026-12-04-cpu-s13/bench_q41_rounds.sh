#!/bin/bash
# Session 13: the real SmolLM2-135M Q4_1, 4 rounds of (previous tree, this tree, llama.cpp) per
# thread count, decode 64 after a 44-token prompt. usage: bench_q41_rounds.sh OLD NEW LB
OLD=$1 NEW=$2 LB=$3 M=models/SmolLM2-135M-Instruct.Q4_1.gguf
for t in 1 2; do
  for r in 1 2 3 4; do
    for v in old new; do
      bin=$OLD; [ $v = new ] && bin=$NEW
      echo -n "t=$t round=$r $v: "
      OMP_NUM_THREADS=$t $bin bench gen --model $M --prompt-tokens 44 -n 64 2>&1 | grep "| cpu" | awk -F'|' '{print "prefill", $6, "decode", $7}'
    done
    echo -n "t=$t round=$r llama.cpp: "
    $LB -m $M -t $t -p 44 -n 64 -r 3 2>&1 | grep CPU | awk -F'|' '{printf "%s %s  ", $7, $8} END {print ""}'
  done
done
