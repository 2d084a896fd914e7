#!/bin/bash
# Session 8 call 2 (diagnostic build): GPU time of the replayed graph vs the token period.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
G=$OUT/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for pdl in 1 0; do
  echo "== PDL=$pdl" >> $G
  WICK_DIAG=1 WICK_CUDA_PDL=$pdl timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done
grep -E "^== |\| cuda|rc=|DIAG" $G | tail -40
