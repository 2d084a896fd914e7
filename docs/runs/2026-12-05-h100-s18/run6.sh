#!/bin/bash
# Session 18 run 6: one CUDA server with 8 clients and --log-passes: which passes with prompts are
# slow, and their rows.
cd "$(dirname "$0")/../.."
R=$PWD
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve_log.txt
PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda --log-passes > $S 2>&1; echo "rc=$?" >> $S
grep -E "prompts of [1-9]|^\| [18] |ratio|scheduler" $S | cut -c1-200 | tail -40
