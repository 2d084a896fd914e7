#!/bin/bash
# usage (repository root): serve_ab.sh OLD NEW ROUNDS [BENCH_ARGS] > out.txt — wick serve, 8 clients, alternating.
OLD=$1 NEW=$2 N=${3:-3} EXTRA=$4 M=models/SmolLM2-135M-Instruct.Q4_1.gguf PY=.cache/venv/bin/python
for r in $(seq 1 $N); do for v in old new; do
  if [ $v = old ]; then B=$OLD; else B=$NEW; fi
  echo "### $v, round $r"
  $PY tests/serve/bench_serve.py $B $M --clients 8 --tokens 128 $EXTRA 2>&1 | grep -E "^\| [18] |ratio|scheduler"
done; done
