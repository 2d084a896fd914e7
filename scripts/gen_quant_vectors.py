#!/usr/bin/env python3
"""Writes the ggml reference vectors tests/test_quantized.cpp checks wick's block formats against.

Dev-time only (the tests read the committed files). Reference: the PyPI `gguf` package, whose
gguf.quants mirrors ggml's reference quantizers/dequantizers in numpy. Regenerate with

    python3 -m venv /tmp/gguf_venv && /tmp/gguf_venv/bin/pip install gguf==0.19.0 numpy
    /tmp/gguf_venv/bin/python scripts/gen_quant_vectors.py tests/data/quantized

File layout (little-endian): b"WQV1", u32 ggml type id, u32 n elements, u32 has_input,
[f32 input[n] if has_input], u32 nbytes, u8 blocks[nbytes], f32 dequantized[n].
Formats gguf can quantize get f32 input -> blocks (gguf.quants.quantize); the K formats, which it
only dequantizes, get random blocks with finite f16 scales.
"""
import struct
import sys
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


def random_k_blocks(qtype: T, n_blocks: int) -> np.ndarray:
    block_size, type_size = quants.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    # Offsets of the f16 scale fields inside each block (see ggml-common.h).
    f16_fields = {T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}
    for off in f16_fields[qtype]:
        vals = rng.uniform(0.001, 0.5, n_blocks).astype(np.float16)
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


def main() -> None:
    out = Path(sys.argv[1])
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


if __name__ == "__main__":
    main()
