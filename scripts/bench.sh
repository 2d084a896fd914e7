#!/usr/bin/env bash
# Builds and runs `wick bench` (the seed's experiments and the speed goals); arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh release >/dev/null
./build/release/wick bench "$@"
