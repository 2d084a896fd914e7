#!/bin/bash
# Session 19 run 1: where passes with prompts spend their time (first vs later, stats deltas,
# lazy module loading), and ncu kernel breakdowns of a b=8 decode pass and a 34-token prompt.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=/tmp/o1; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
C="1+0x0 8+0x0 0+1x34 1+1x34 1+2x38 2+2x38 1+7x37 0+1x64 0+1x100 0+1x300 4+4x37"
timeout 60 ./pp /tmp/m.gguf cuda 1 $C > /dev/null 2>&1   # fills the kernel cache
for i in 1 2; do timeout 60 ./pp /tmp/m.gguf cuda 3 $C > $O/pp_$i.txt 2>&1; done
CUDA_MODULE_LOADING=EAGER timeout 100 ./pp /tmp/m.gguf cuda 3 $C > $O/pp_eager.txt 2>&1; echo "rc=$?" >> $O/pp_eager.txt
M=gpu__time_duration.sum
WICK_REPLAY=0 timeout 120 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./pp /tmp/m.gguf cuda 2 8+0x0 > $O/ncu_b8.csv 2> $O/ncu_err.txt
WICK_REPLAY=0 timeout 120 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./pp /tmp/m.gguf cuda 2 0+1x34 > $O/ncu_p34.csv 2>> $O/ncu_err.txt
WICK_REPLAY=0 timeout 120 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./pp /tmp/m.gguf cuda 2 1+7x37 > $O/ncu_p7.csv 2>> $O/ncu_err.txt
for f in b8 p34 p7; do
  # the timed pass's kernels: its dispatches and its cuBLAS products (one kernel each)
  l=$(grep " rep 1:" $O/ncu_$f.csv | tail -1); echo "$f: $l" >> $O/ncu_err.txt
  d=$(echo "$l" | sed -n 's/.*dispatches \([0-9]*\).*coop \([0-9]*\).*/\1 \2/p')
  python3 $R/.dev/s19/ncu_names.py $O/ncu_$f.csv $(( ${d% *} + ${d#* } )) >> $O/ncu_sum.txt 2>&1
done
cat $O/pp_1.txt $O/pp_2.txt $O/pp_eager.txt | cut -c1-160
cat $O/ncu_err.txt | tail -5
head -30 $O/ncu_sum.txt
tar cJf $OUT/run1.tar.xz -C $O .
cp $O/ncu_sum.txt $O/pp_*.txt $O/clocks.txt $OUT/
