#!/usr/bin/env python3
"""Writes the ggml reference vectors tests/test_quantized.cpp checks wick's block formats against.

Dev-time only (the tests read the committed files). References:
  - the PyPI `gguf` package, whose gguf.quants mirrors ggml's reference quantizers/dequantizers in
    numpy (q4_0 q4_1 q5_0 q5_1 q8_0 quantize; K formats dequantize only);
  - ggml's own C reference quantizers (quantize_row_*_ref) for the K formats, q8_1 and q8_k, called
    through ctypes from the libggml-base.so that the PyPI `pywhispercpp` wheel bundles (ggml
    0.13.1); skipped when --ggml-lib is not given.
Regenerate with

    python3 -m venv /tmp/gguf_venv && /tmp/gguf_venv/bin/pip install gguf==0.19.0 numpy
    /tmp/gguf_venv/bin/pip download --no-deps --only-binary :all: -d /tmp/whl pywhispercpp==1.5.1
    (cd /tmp/whl && python3 -m zipfile -e pywhispercpp-*.whl x)
    /tmp/gguf_venv/bin/python scripts/gen_quant_vectors.py tests/data/quantized \
        --ggml-lib /tmp/whl/x/libggml-base.so

File layout (little-endian): b"WQV1", u32 ggml type id, u32 n elements, u32 has_input,
[f32 input[n] if has_input], u32 nbytes, u8 blocks[nbytes], f32 dequantized[n].
<type>.bin: q4_0..q8_0 get f32 input -> blocks (gguf); the K and IQ4 formats get random blocks with
finite f16 scales -> dequantized values (gguf). <type>_ref.bin (ggml's C quantizers): f32 input -> blocks,
dequantized by gguf where it can (else by ggml's dequantize_row_*).
"""
import argparse
import ctypes
import struct
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

rng = np.random.default_rng(20240611)


def legacy_input(block: int) -> np.ndarray:
    """Blocks that exercise the rounding rules: random scales, zeros, one sign, outliers, ties."""
    blocks = []
    for scale in (1e-3, 0.05, 1.0, 30.0):
        blocks.append(rng.normal(0, scale, block))
    blocks.append(np.zeros(block))
    blocks.append(-np.abs(rng.normal(0, 2.0, block)))          # negative only
    blocks.append(np.abs(rng.normal(0, 2.0, block)) + 0.5)      # positive only, min > 0
    b = rng.normal(0, 0.1, block)
    b[rng.integers(block)] = 50.0                               # one huge outlier
    blocks.append(b)
    # Exact halves: amax 127 makes the q8 scale 1, so x/d hits .5 ties (roundf rounds away from 0).
    t = np.arange(block, dtype=np.float64) - block / 2 + 0.5
    t[0] = 127.0
    blocks.append(t)
    blocks.append(np.full(block, 3.25))                         # constant block
    return np.concatenate(blocks).astype(np.float32)


def random_k_blocks(qtype: T, n_blocks: int, gen=None) -> np.ndarray:
    gen = gen or rng
    block_size, type_size = quants.GGML_QUANT_SIZES[qtype]
    raw = gen.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    # Offsets of the f16 scale fields inside each block (see ggml-common.h).
    f16_fields = {T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
                  T.IQ4_NL: [0], T.IQ4_XS: [0]}
    for off in f16_fields[qtype]:
        vals = gen.uniform(0.001, 0.5, n_blocks).astype(np.float16)
        if qtype in (T.IQ4_NL, T.IQ4_XS):  # both signs of the scale
            vals = vals * gen.choice(np.array([-1, 1], dtype=np.float16), n_blocks)
        raw[:, off:off + 2] = vals.view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(-1)


def write(path: Path, qtype: T, n: int, inp, blocks: np.ndarray, deq: np.ndarray) -> None:
    with open(path, "wb") as f:
        f.write(b"WQV1")
        f.write(struct.pack("<III", int(qtype), n, 0 if inp is None else 1))
        if inp is not None:
            f.write(inp.astype("<f4").tobytes())
        f.write(struct.pack("<I", blocks.size))
        f.write(blocks.astype(np.uint8).tobytes())
        f.write(deq.astype("<f4").tobytes())


def ggml_reference(lib_path: str, out: Path) -> None:
    """Quantizes with ggml's C reference functions (exported by libggml-base.so)."""
    lib = ctypes.CDLL(lib_path)
    names = {T.Q2_K: "q2_K", T.Q3_K: "q3_K", T.Q4_K: "q4_K", T.Q5_K: "q5_K", T.Q6_K: "q6_K",
             T.Q8_K: "q8_K", T.Q8_1: "q8_1"}
    sizes = {T.Q8_K: (256, 292), T.Q8_1: (32, 36)}
    for qtype, name in names.items():
        block, type_size = sizes.get(qtype) or quants.GGML_QUANT_SIZES[qtype]
        x = legacy_input(block)
        if qtype == T.Q8_K:  # ggml leaves the group sums of an all-zero block unset
            x = x[np.abs(x.reshape(-1, block)).max(axis=1).repeat(block) > 0]
        n = x.size
        buf = ctypes.create_string_buffer(n // block * type_size)
        quantize = getattr(lib, f"quantize_row_{name}_ref")
        quantize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        quantize(x.ctypes.data, buf, n)
        blocks = np.frombuffer(buf.raw, dtype=np.uint8)
        deq = np.zeros(n, dtype=np.float32)
        if qtype == T.Q8_1:  # ggml has no q8_1 dequantizer: d * q, d the f16 at offset 0
            b = blocks.reshape(-1, type_size)
            d = b[:, :2].copy().view(np.float16).astype(np.float32)
            deq = (b[:, 4:].copy().view(np.int8).astype(np.float32) * d).reshape(-1)
        else:
            dequantize = getattr(lib, f"dequantize_row_{name}")
            dequantize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            dequantize(buf, deq.ctypes.data, n)
        write(out / f"{qtype.name.lower()}_ref.bin", qtype, n, x, blocks, deq)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ggml-lib", help="libggml-base.so exporting quantize_row_*_ref")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for qtype in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        x = legacy_input(32)
        blocks = quants.quantize(x.reshape(1, -1), qtype).reshape(-1)
        deq = quants.dequantize(blocks.reshape(1, -1), qtype).reshape(-1)
        write(out / f"{qtype.name.lower()}.bin", qtype, x.size, x, blocks, deq)
    for qtype in (T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K):
        blocks = random_k_blocks(qtype, 4)
        deq = quants.dequantize(blocks.reshape(1, -1), qtype).reshape(-1)
        write(out / f"{qtype.name.lower()}.bin", qtype, deq.size, None, blocks, deq)
    if args.ggml_lib:
        ggml_reference(args.ggml_lib, out)
    # IQ4 formats: random blocks with finite f16 scales -> gguf's dequantization (its own random
    # stream, so that the files above do not change).
    iq4_rng = np.random.default_rng(20261204)
    for qtype in (T.IQ4_NL, T.IQ4_XS):
        n_blocks = 24 if qtype == T.IQ4_NL else 4
        blocks = random_k_blocks(qtype, n_blocks, iq4_rng)
        deq = quants.dequantize(blocks.reshape(1, -1), qtype).reshape(-1)
        write(out / f"{qtype.name.lower()}.bin", qtype, deq.size, None, blocks, deq)


if __name__ == "__main__":
    main()
