#!/bin/bash
# Session 21 on the 2-vCPU Xeon: the tree before the session (OLD, b910965) and the final one
# (NEW), alternating: fbprof passes, wick serve with the openai client and with --client raw,
# bench gen --batch 8, decode/prefill beside llama.cpp's llama-bench (LB).
# usage (repository root): run_cpu.sh OLD_WICK NEW_WICK OLD_FB NEW_FB LB > out.txt
OW=$1 NW=$2 OF=$3 NF=$4 LB=$5 M=models/SmolLM2-135M-Instruct.Q4_1.gguf PY=.cache/venv/bin/python
pick() { if [ "$1" = old ]; then echo "$2"; else echo "$3"; fi; }
echo "## passes: fbprof M cpu B 200 (B sequences, 200 one-token passes from position 4)"
for r in 1 2 3; do for b in 1 8; do for v in old new; do
  echo -n "$v round $r: "; $(pick $v $OF $NF) $M cpu $b 200
done; done; done
for c in openai raw; do
  echo "## serve, --client $c: bench_serve.py BIN M --clients 8 --tokens 128"
  for r in 1 2 3; do for v in old new; do
    echo "### $v, round $r"
    $PY tests/serve/bench_serve.py $(pick $v $OW $NW) $M --clients 8 --tokens 128 --client $c 2>&1 | grep -E "^\| [18] |ratio|scheduler"
  done; done
done
echo "## bench gen --batch 8"
for r in 1 2; do for v in old new; do
  echo "### $v, round $r"; $(pick $v $OW $NW) bench gen --batch 8 -m $M 2>&1 | grep -E "^\| cpu +\| [1248] "
done; done
echo "## decode and prefill: bench gen --model M --prompt-tokens 44 -n 64; llama-bench -p 44 -n 64 -r 3"
for t in 1 2; do for r in 1 2; do
  for v in old new; do
    echo -n "t=$t round $r $v: "
    OMP_NUM_THREADS=$t $(pick $v $OW $NW) bench gen --model $M --prompt-tokens 44 -n 64 2>&1 | grep "| cpu" | awk -F'|' '{print "prefill", $6, "decode", $7}'
  done
  echo -n "t=$t round $r llama.cpp: "
  $LB -m $M -t $t -p 44 -n 64 -r 3 2>&1 | grep CPU | awk -F'|' '{printf "%s %s  ", $7, $8} END {print ""}'
done; done
