#!/bin/bash
# Session 27 run 4 (run 3's machine, still warm; the command as given to the device):
cd /tmp/run && export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json && R=$OLDPWD && for d in vulkan cuda; do PYTHONPATH=/tmp/pyo timeout 60 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 2 > $OUT/serve_$d.txt 2>&1; echo "rc=$?" >> $OUT/serve_$d.txt; echo "== $d"; grep -E "^\| [18] |ratio|rc=" $OUT/serve_$d.txt | cut -c1-200; done; date -u
