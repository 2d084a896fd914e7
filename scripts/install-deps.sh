#!/usr/bin/env bash
# Installs every system package wick's build, tests and benchmarks need (Debian 12; run as root).
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config python3
  libopenblas-dev libgtest-dev nlohmann-json3-dev
  # the tokenizer's pre-tokenizer regexes
  libpcre2-dev
  # scripts/fuzz.sh: clang with libFuzzer and the sanitizer runtimes; llvm for llvm-symbolizer
  clang libclang-rt-14-dev libfuzzer-14-dev llvm
  # Vulkan backend: headers, loader, lavapipe (Mesa's CPU driver), shaderc + glslang + SPIRV-Tools
  libvulkan-dev mesa-vulkan-drivers libshaderc-dev glslang-dev glslang-tools spirv-tools
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
