#!/bin/bash
# Session 20, second set (after the row tiles' prefetch): passes and serve, OLD and NEW
# alternating. usage (from the repository root): run_cpu2.sh OLD NEW > out.txt
OLD=$1 NEW=$2 M=models/SmolLM2-135M-Instruct.Q4_1.gguf D=.dev/s20
PY=.cache/venv/bin/python
bin_of() { if [ "$1" = old ]; then echo "$OLD"; else echo "$NEW"; fi; }
echo "## passes: fb_{old,new} M cpu B 200"
for r in 1 2 3; do for b in 1 8; do for v in old new; do
  echo -n "$v round $r: "; $D/fb_$v $M cpu $b 200
done; done; done
echo "## serve: bench_serve.py BIN M --clients 8 --tokens 128"
for r in 1 2 3 4; do for v in old new; do
  echo "### $v, round $r $(date +%T)"
  $PY tests/serve/bench_serve.py $(bin_of $v) $M --clients 8 --tokens 128 2>&1 | grep -E "^\| [18] |ratio|scheduler"
done; done
