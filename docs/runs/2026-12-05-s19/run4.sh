#!/bin/bash
# Session 19 run 4: MMA threads (256 vs 512) and SIMT at b=8; servers with the clients sending
# together (bench_serve.py's common start), at the defaults and with MMA 8,512; decode.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/run/wick ] || { mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run; }
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
C=$O/clocks.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $C
date -u >> $C
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
P=$O/pp.txt
for cfg in - 8,512 0 - 8,512 0; do
  if [ "$cfg" = - ]; then e=(); else e=(WICK_QMATVEC_MMA=$cfg); fi
  echo "== MMA $cfg" >> $P
  env "${e[@]}" timeout 60 ./pp /tmp/m.gguf cuda 8 1+0x0 8+0x0 >> $P 2>&1
done
grep -E "==|rep [4-7]" $P | cut -c1-40
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for cfg in "cuda -" "cuda 8,512" "cuda -" "cuda 8,512" "cuda -" "cuda 8,512" "vulkan -"; do
  set -- $cfg
  if [ "$2" = - ]; then e=(); else e=(WICK_QMATVEC_MMA=$2); fi
  echo "== $1 MMA $2" >> $S
  env "${e[@]}" PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $1 >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|scheduler|rc=" $S | cut -c1-200
