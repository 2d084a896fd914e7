#!/bin/bash
# Session 14 run 5: the AVX-512 activation quantizer's NaN fix on the device's AVX-512 CPU, and
# the cooperative-matrix / reshape tests on vulkan:0 and cuda:0 that run 4's time limit cut.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
grep -m1 -o "avx512[a-z]*" /proc/cpuinfo | head -1 > $OUT/t1.txt
WICK_TEST_DEVICES=cpu timeout 60 ./wick_tests --gtest_filter="QMatMul.*:*Quantiz*" --gtest_brief=1 >> $OUT/t1.txt 2>&1; echo "rc=$?" >> $OUT/t1.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 120 ./wick_tests --gtest_filter="*Core*:*Coop*:*Matmul*" --gtest_brief=1 > $OUT/t2.txt 2>&1; echo "rc=$?" >> $OUT/t2.txt
tail -4 $OUT/t1.txt $OUT/t2.txt; grep -h "FAILED" $OUT/t*.txt | head
