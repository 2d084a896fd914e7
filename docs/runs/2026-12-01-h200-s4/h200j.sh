#!/bin/bash
# Session 4, fourth H200 call (tree after the push-skip and the SIMT k-step 16): Vulkan suites;
# GEMM sweep (f32 SIMT, f16 cooperative) with torch.matmul; wick bench matmul; host record cost
# and the queue bench beside raw CUDA / raw Vulkan; first use; decode on the synthetic model.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
{ date -u; nvidia-smi -L; grep -m1 'model name' /proc/cpuinfo; nproc; cat /proc/loadavg; ./wick info 2>&1 | head -14; } > $OUT/info.txt 2>&1
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt; grep -E "Failure|FAILED" $OUT/tests.txt | head
{
  timeout 100 ./gemm_probe f32,f16 2048,4096,8192 auto
  python3 - <<'PY'
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
for dt in [torch.float32, torch.bfloat16, torch.float16]:
    for n in [2048, 4096, 8192]:
        a=torch.randn(n,n,device='cuda',dtype=dt); b=torch.randn(n,n,device='cuda',dtype=dt)
        c=a@b; torch.cuda.synchronize(); t=time.perf_counter()
        while time.perf_counter()-t < 0.3: c=a@b
        torch.cuda.synchronize(); it=20 if n>4000 else 100
        t=time.perf_counter()
        for _ in range(it): c=a@b
        torch.cuda.synchronize(); per=(time.perf_counter()-t)/it
        print(f"torch {dt} n={n} {per*1e3:.4f} ms {2*n**3/per/1e12:.1f} TFLOP/s")
PY
} > $OUT/probe.txt 2>&1
el probe; grep -v "^ *$" $OUT/probe.txt
timeout 200 ./wick bench matmul --device vulkan:0 > $OUT/bench_matmul.txt 2>&1
el bench; grep -E "^\| (f16|bf16|f32) " $OUT/bench_matmul.txt
{
  echo "== record_probe, no submits (ops per buffer 1e9)"; timeout 30 ./record_probe 1000000000 5000
  echo "== record_probe, default policy"; timeout 30 ./record_probe 50 5000
  echo "== raw CUDA / raw Vulkan anchors"; nvcc -O2 -arch=sm_90 launch.cu -o launch && ./launch; ./vk_queue
  echo "== wick bench queue"; timeout 100 ./wick bench queue --device vulkan:0
} > $OUT/queue.txt 2>&1
el queue; grep -E "record|total" $OUT/queue.txt | head -50
timeout 100 ./wick bench first --device vulkan:0 > $OUT/first.txt 2>&1
el first; tail -25 $OUT/first.txt
{ for r in 1 2 3; do timeout 60 ./wick bench gen --device vulkan:0; done; } > $OUT/gen.txt 2>&1
el gen; grep -E '^\| vulkan' $OUT/gen.txt
