#!/bin/bash
# Session 4, first H200 call: the cooperative-matrix f16 GEMM (matmul_coop.comp) — its tests,
# the Vulkan suites, a size/layout sweep, wick bench matmul, and torch.matmul in the same call.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
{ date -u; nvidia-smi -L; ./wick info | head -12; } > $OUT/info.txt 2>&1
WICK_TEST_DEVICES=vulkan:0 timeout 60 ./wick_tests --gtest_filter='VulkanCoop*:Devices/Matmul.*' > $OUT/tests_coop.txt 2>&1; echo "rc=$?" >> $OUT/tests_coop.txt
el coop_tests; grep -E "OK|FAILED|Failure|differ|rc=" $OUT/tests_coop.txt | head -30
timeout 120 ./gemm_probe f16 512,1024,2048,4096,8192 > $OUT/probe.txt 2>&1
el probe; cat $OUT/probe.txt
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
el bench; grep -E "f16|bf16|f32" $OUT/bench_matmul.txt | head -20
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -5 $OUT/tests.txt
