"""Python per-op overhead of wick beside PyTorch, in one process, on 1-element CPU tensors; and the
cost of the zero-copy NumPy round trip at two sizes (constant: no bytes copied).

    PYTHONPATH=build/release/python .cache/venv/bin/python bench/python_overhead.py

PyTorch is optional (the wick column alone without it); it is not a dependency of wick or its CI.
"""
import platform
import statistics
import sys
import time

import numpy as np

import wick

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None

REPEAT, NUMBER = 15, 20000


def per_call_us(fn):
    """Median over REPEAT batches of NUMBER calls, in µs per call."""
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        for _ in range(NUMBER):
            fn()
        times.append((time.perf_counter() - t0) / NUMBER * 1e6)
    return statistics.median(times)


def main():
    a, b = wick.ones(1), wick.full(1, 2.0)
    m1, m2 = wick.ones((1, 1)), wick.ones((1, 1))
    v = wick.ones((4, 4))
    cases = [
        ("a + b", lambda: a + b),
        ("a * 2.0", lambda: a * 2.0),
        ("a.exp()", lambda: a.exp()),
        ("a.sum()", lambda: a.sum()),
        ("m1 @ m2 (1x1)", lambda: m1 @ m2),
        ("v[1, 1:3] (a view)", lambda: v[1, 1:3]),
    ]
    if torch is not None:
        ta, tb = torch.ones(1), torch.full((1,), 2.0)
        tm1, tm2 = torch.ones((1, 1)), torch.ones((1, 1))
        tv = torch.ones((4, 4))
        torch_cases = [lambda: ta + tb, lambda: ta * 2.0, lambda: ta.exp(), lambda: ta.sum(),
                       lambda: tm1 @ tm2, lambda: tv[1, 1:3]]
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else '(not installed)'}, {platform.processor() or platform.machine()}")
    print("| op | wick µs/op | torch µs/op | wick / torch |")
    print("| --- | --- | --- | --- |")
    for i, (name, fn) in enumerate(cases):
        w = per_call_us(fn)
        if torch is not None:
            t = per_call_us(torch_cases[i])
            print(f"| {name} | {w:.3f} | {t:.3f} | {w / t:.2f} |")
        else:
            print(f"| {name} | {w:.3f} | - | - |")

    print()
    print("| NumPy round trip (from_numpy + np.asarray) | µs | np.copy µs | same pointer |")
    print("| --- | --- | --- | --- |")
    for n in (16, 16 * 1024 * 1024):
        arr = np.ones(n, dtype=np.float32)
        trip = per_call_us(lambda: np.asarray(wick.from_numpy(arr))) if n < 1024 else \
            statistics.median(_timed(lambda: np.asarray(wick.from_numpy(arr))) for _ in range(50))
        copy = statistics.median(_timed(lambda: np.copy(arr)) for _ in range(20 if n > 1024 else 2000))
        same = np.asarray(wick.from_numpy(arr)).__array_interface__["data"][0] == \
            arr.__array_interface__["data"][0]
        print(f"| {n * 4} bytes | {trip:.3f} | {copy:.3f} | {same} |")
    return 0


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e6


if __name__ == "__main__":
    sys.exit(main())
