#!/bin/bash
# Session 4, ninth H200 call (final tree): the cooperative-matrix kernel's k step as a define
# (64 where an operand arrives along k); Vulkan suites; sweep; torch.matmul f16/f32 same call.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
{
  timeout 60 ./gemm_probe f16,f32 1024,2048,4096,8192 auto
  python3 - <<'PY'
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
for dt in [torch.float16, torch.float32]:
    for n in [4096, 8192]:
        a=torch.randn(n,n,device='cuda',dtype=dt); b=torch.randn(n,n,device='cuda',dtype=dt)
        c=a@b; torch.cuda.synchronize(); t=time.perf_counter()
        while time.perf_counter()-t < 0.3: c=a@b
        torch.cuda.synchronize(); it=20
        t=time.perf_counter()
        for _ in range(it): c=a@b
        torch.cuda.synchronize(); per=(time.perf_counter()-t)/it
        print(f"torch {dt} n={n} {per*1e3:.4f} ms {2*n**3/per/1e12:.1f} TFLOP/s")
PY
} > $OUT/probe.txt 2>&1
el probe; grep -v "^ *$" $OUT/probe.txt
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt; grep -E "Failure|FAILED|PASSED" $OUT/tests.txt | head
