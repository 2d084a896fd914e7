#!/bin/bash
# Session 4, third H200 call: the merged tree (SIMT GEMM rewrite + cooperative-matrix f16 GEMM):
# Vulkan suites; GEMM sweeps (f32/bf16 SIMT, f16 cooperative + kernel variants v1 all-B-first,
# v2 BK=16, v3 BK=64 on 64 tiles); torch.matmul; wick bench matmul; host record cost; queue
# bench beside raw CUDA / raw Vulkan anchors.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; grep -m1 'model name' /proc/cpuinfo; nproc; cat /proc/loadavg; } > $OUT/info.txt 2>&1
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -4 $OUT/tests.txt; grep -E "Failure|FAILED" $OUT/tests.txt | head
{
  timeout 120 ./gemm_probe f32,bf16 1024,2048,4096,8192 auto
  timeout 60 ./gemm_probe f16 1024,2048,4096,8192 auto
  timeout 40 ./gemm_probe_v1 f16 2048,4096,8192 auto
  timeout 40 ./gemm_probe_v2 f16 2048,4096,8192 auto
  timeout 40 ./gemm_probe_v3 f16 2048,4096,8192 t64w4,t64
} > $OUT/probe.txt 2>&1
el probe; grep -v "^ *$" $OUT/probe.txt
python3 - > $OUT/torch.txt 2>&1 <<'PY'
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
for dt in [torch.float32, torch.bfloat16, torch.float16]:
    for n in [1024, 2048, 4096, 8192]:
        a=torch.randn(n,n,device='cuda',dtype=dt); b=torch.randn(n,n,device='cuda',dtype=dt)
        c=a@b; torch.cuda.synchronize(); t=time.perf_counter()
        while time.perf_counter()-t < 0.3: c=a@b
        torch.cuda.synchronize(); it=20 if n>4000 else 100
        t=time.perf_counter()
        for _ in range(it): c=a@b
        torch.cuda.synchronize(); per=(time.perf_counter()-t)/it
        print(f"torch {dt} n={n} {per*1e3:.4f} ms {2*n**3/per/1e12:.1f} TFLOP/s")
PY
el torch; cat $OUT/torch.txt
timeout 200 ./wick bench matmul --device vulkan:0 > $OUT/bench_matmul.txt 2>&1
el bench; grep -E "^\| (f16|bf16|f32) " $OUT/bench_matmul.txt
{
  echo "== record_probe, no submits (ops per buffer 1e9)"; timeout 30 ./record_probe 1000000000 5000
  echo "== record_probe, default policy"; timeout 30 ./record_probe 50 5000
  echo "== raw CUDA / raw Vulkan anchors"; nvcc -O2 -arch=sm_90 launch.cu -o launch && ./launch; ./vk_queue
  echo "== wick bench queue"; timeout 100 ./wick bench queue --device vulkan:0
} > $OUT/queue.txt 2>&1
el queue; grep -E "record|total|ms" $OUT/queue.txt | head -40
