#!/usr/bin/env bash
# The main job: sets up, builds, fetches SmolLM2-135M-Instruct when missing, and generates text on the
# CPU (WICK_DEVICE or --device picks another device). Arguments go to `wick generate`; without any,
# it answers one chat question.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh release >/dev/null
./scripts/fetch-model.sh
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ $# -eq 0 ]; then
  set -- --chat --prompt "What is the capital of France, and what is it famous for?" -n 96
fi
./build/release/wick generate --model "$model" "$@"
