#!/bin/bash
# One H200 session: wick's tests and benchmarks on Vulkan and the host CPU, beside the anchors.
cd "$(dirname "$0")"
for f in ../.gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
mkdir -p run && tar xJf bundle.tar.xz -C run && cd run
export LD_LIBRARY_PATH=$PWD/lib
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
{ date -u; nvidia-smi -L; nproc; grep -m1 'model name' /proc/cpuinfo; ./wick info; } > $OUT/info.txt 2>&1
el info
WICK_TEST_DEVICES=vulkan:0 timeout ${TEST_S:-150} ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt
{
  nvcc -O2 -arch=sm_90 launch.cu -o launch && ./launch
  ./vk_queue
  timeout 150 python3 torch_anchor.py
  python3 - <<'PY'
import torch, time
for dt in [torch.float32, torch.bfloat16, torch.float16]:
    for n in [512, 4096]:
        a=torch.randn(n,n,device='cuda',dtype=dt); b=torch.randn(n,n,device='cuda',dtype=dt)
        c=a@b; torch.cuda.synchronize(); it=50 if n>1000 else 500
        t=time.perf_counter()
        for _ in range(it): c=a@b
        torch.cuda.synchronize(); per=(time.perf_counter()-t)/it
        print(f"torch matmul {dt} n={n} {per*1e3:.4f} ms {2*n**3/per/1e12:.1f} TFLOP/s (allow_tf32={torch.backends.cuda.matmul.allow_tf32})")
PY
} > $OUT/anchors.txt 2>&1
el anchors
timeout ${BENCH_S:-200} ./wick bench queue first batch_mm storage matmul --device vulkan:0 > $OUT/bench_vk.txt 2>&1
el bench_vk
timeout 120 ./wick bench qmatmul gen --device vulkan:0 > $OUT/bench_vk_gen.txt 2>&1
el bench_vk_gen
timeout 90 ./wick bench gen qmatmul --device cpu > $OUT/bench_cpu_gen.txt 2>&1
el bench_cpu_gen
