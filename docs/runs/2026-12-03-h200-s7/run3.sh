#!/bin/bash
# Session 7's H200 call 2: issue 10's cuda:0 suites (no concurrent build this time) with the rope fma
# fix, then an nsys trace of the CUDA decode step (op by op and replayed) to see where its time goes.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
(which nsys ncu; ls /usr/local/cuda/bin; ls /opt/nvidia 2>&1; nsys --version) > $OUT/tools.txt 2>&1
F10='Devices/*:Gpu/*:Cuda*:Llama*:*OnDevices*:HardeningCore*'
WICK_TEST_DEVICES=cuda:0 timeout 330 ./wick_tests --gtest_filter="$F10" > $OUT/tests10_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests10_cuda.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests10_cuda.txt | head -30
grep -hE "Failure" -A8 $OUT/tests10_cuda.txt | head -40
NS=$(which nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NS" ]; then
  WICK_REPLAY=0 timeout 90 $NS profile -t cuda -o /tmp/p0 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $OUT/nsys0.txt 2>&1
  timeout 90 $NS profile -t cuda --cuda-graph-trace=node -o /tmp/p1 ./wick bench gen --device cuda --model /tmp/m.gguf > $OUT/nsys1.txt 2>&1
  for p in p0 p1; do
    $NS stats -r cuda_gpu_trace -f csv -o $OUT/$p /tmp/$p.nsys-rep > /dev/null 2>&1
    $NS stats -r cuda_gpu_kern_sum,cuda_api_sum -f csv -o $OUT/$p /tmp/$p.nsys-rep > /dev/null 2>&1
  done
  for f in $OUT/*.csv; do xz -9 $f; done
  ls -la $OUT
fi
