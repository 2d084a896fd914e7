#!/usr/bin/env bash
# Installs every system package wick's build, tests and benchmarks need (Debian 12; run as root).
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config python3
  # the Python module (python/): headers, and a venv for the PyPI packages below
  python3-dev python3-venv
  # tests/gen_chat_references.py: the chat templates' references, rendered by Python's jinja2
  python3-jinja2
  # scripts/build.sh and scripts/consumers.sh: the consumers' builds of wick are cache hits
  ccache
  libopenblas-dev libgtest-dev nlohmann-json3-dev
  # wick serve's HTTP server
  libcpp-httplib-dev
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

# llama.cpp's vocab-only GGUF files and their test vectors (models/ggml-vocab-*.gguf{,.inp,.out}),
# for tests/test_tokenizer_vocab.cpp, and the chat templates of its models/templates/ (into
# templates/, for tests/test_chat_template.cpp): taken from the llama-cpp-python sdist on PyPI,
# which vendors llama.cpp, into .cache/llama-vocab/ (ignored by git). Checked by the sdist's
# SHA-256; skipped when the folder already holds that version with its templates.
VOCAB_SDIST=llama_cpp_python-0.3.36.tar.gz
VOCAB_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
VOCAB_URL=https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/$VOCAB_SDIST
# A copy already on disk (WICK_LLAMA_VOCAB_SDIST=/path/to/the.tar.gz) saves the 77 MB download.
VOCAB_SRC="${WICK_LLAMA_VOCAB_SDIST:-$VOCAB_URL}"
VOCAB_DIR="$(cd "$(dirname "$0")/.." && pwd)/.cache/llama-vocab"
if [ "$(cat "$VOCAB_DIR/.sdist-sha256" 2>/dev/null)" != "$VOCAB_SHA256" ] ||
   [ ! -d "$VOCAB_DIR/templates" ]; then
  echo "install-deps: fetching llama.cpp's vocab test files into $VOCAB_DIR"
  python3 - "$VOCAB_SRC" "$VOCAB_SHA256" "$VOCAB_DIR" <<'PY'
import hashlib, io, os, shutil, sys, tarfile, tempfile, urllib.request
url, sha, out = sys.argv[1:4]
if "://" in url:
    with urllib.request.urlopen(url, timeout=600) as r:
        data = r.read()
else:
    with open(url, "rb") as f:
        data = f.read()
got = hashlib.sha256(data).hexdigest()
if got != sha:
    sys.exit(f"install-deps: {url}: SHA-256 {got}, expected {sha}")
# Beside its destination (a fresh clone has no .cache/ yet), so that the final rename stays on one
# file system.
os.makedirs(os.path.dirname(out), exist_ok=True)
tmp = tempfile.mkdtemp(dir=os.path.dirname(out))
os.mkdir(os.path.join(tmp, "templates"))
n = n_templates = 0
with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
    for m in tar.getmembers():
        parts = m.name.split("/")
        if not m.isfile() or "/vendor/llama.cpp/models/" not in m.name:
            continue
        if parts[-2] == "models" and parts[-1].startswith("ggml-vocab-"):
            dest = os.path.join(tmp, parts[-1])
            n += 1
        elif parts[-2:-1] == ["templates"] and parts[-3] == "models" and parts[-1].endswith(".jinja"):
            dest = os.path.join(tmp, "templates", parts[-1])
            n_templates += 1
        else:
            continue
        with open(dest, "wb") as f:
            f.write(tar.extractfile(m).read())
if n == 0 or n_templates == 0:
    sys.exit(f"install-deps: {url} holds no vendor/llama.cpp/models/ggml-vocab-* files "
             "or no models/templates/*.jinja")
with open(os.path.join(tmp, ".sdist-sha256"), "w") as f:
    f.write(sha)
shutil.rmtree(out, ignore_errors=True)
os.replace(tmp, out)
print(f"install-deps: {n} vocab files and {n_templates} chat templates in {out}")
PY
fi

# The Python module's build and test packages (nanobind, scikit-build-core, NumPy, pytest, and
# the openai client tests/serve/test_serve.py talks to `wick serve` with; PyPI,
# pinned in python/requirements-dev.txt) in a venv, .cache/venv: Debian's python3 refuses pip
# installs into the system (PEP 668). scripts/build.sh builds the module against it; skipped when
# the venv already holds that list.
VENV_DIR="$(cd "$(dirname "$0")/.." && pwd)/.cache/venv"
REQS="$(cd "$(dirname "$0")/.." && pwd)/python/requirements-dev.txt"
if ! cmp -s "$REQS" "$VENV_DIR/.requirements" 2>/dev/null; then
  echo "install-deps: Python packages into $VENV_DIR"
  rm -rf "$VENV_DIR"
  python3 -m venv "$VENV_DIR"
  "$VENV_DIR/bin/python" -m pip install -q -r "$REQS"
  cp "$REQS" "$VENV_DIR/.requirements"
fi
