#!/bin/bash
# Session 20 on this 2-vCPU Xeon (AVX-512 VNNI): the tree before the session (OLD, 4eb473b) and
# this one (NEW), alternating; llama.cpp 0.3.36's CPU llama-bench (LB, -DGGML_NATIVE=ON).
# usage (from the repository root): run_cpu.sh OLD NEW LB > out.txt
OLD=$1 NEW=$2 LB=$3 M=models/SmolLM2-135M-Instruct.Q4_1.gguf D=.dev/s20
PY=.cache/venv/bin/python
bin_of() { if [ "$1" = old ]; then echo "$OLD"; else echo "$NEW"; fi; }
echo "## wick bench qmatmul -t 1 (us)"
for r in 1 2; do for v in old new; do
  echo "### $v, round $r"; $(bin_of $v) bench qmatmul -t 1 2>&1 | grep -E "^\| [0-9]+ x"
done; done
echo "## passes: fb_{old,new} M cpu B 200 (B sequences, 200 one-token passes from position 4)"
for r in 1 2 3; do for b in 1 8; do for v in old new; do
  echo -n "$v round $r: "; $D/fb_$v $M cpu $b 200
done; done; done
echo "## serve: bench_serve.py BIN M --clients 8 --tokens 128"
for r in 1 2 3 4; do for v in old new; do
  echo "### $v, round $r"
  $PY tests/serve/bench_serve.py $(bin_of $v) $M --clients 8 --tokens 128 2>&1 | grep -E "^\| [18] |ratio|scheduler"
done; done
echo "## decode and prefill: bench gen --model M --prompt-tokens 44 -n 64; llama-bench -p 44 -n 64 -r 3"
for t in 1 2; do for r in 1 2; do
  for v in old new; do
    echo -n "t=$t round $r $v: "
    OMP_NUM_THREADS=$t $(bin_of $v) bench gen --model $M --prompt-tokens 44 -n 64 2>&1 | grep "| cpu" | awk -F'|' '{print "prefill", $6, "decode", $7}'
  done
  echo -n "t=$t round $r llama.cpp: "
  $LB -m $M -t $t -p 44 -n 64 -r 3 2>&1 | grep CPU | awk -F'|' '{printf "%s %s  ", $7, $8} END {print ""}'
done; done
