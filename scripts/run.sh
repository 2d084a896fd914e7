#!/usr/bin/env bash
# The main job: sets up, builds, and runs `wick bench` (the seed's experiments) on the default device.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh release >/dev/null
./build/release/wick bench "$@"
