#!/usr/bin/env python3
"""Fits the erf / erfc polynomials of src/cpu/float_math.h and reports their error in ulp.

Below SPLIT: erf(a) = a * P(a^2). Above: erfc(a) = exp(-a^2) * w * Q(w), w = 1 / (1 + a / 2).
Both are least-squares fits on Chebyshev nodes against mpmath, with coefficients rounded to
float; the error check evaluates them in float32 (Horner, as the C++ does).
Needs numpy and mpmath:  python3 scripts/fit_erf.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30
F32 = np.float32
SPLIT, P_DEGREE, Q_DEGREE, W_SCALE, A_MAX = 0.75, 6, 10, 0.5, 11.0


def chebyshev_nodes(lo, hi, n=500):
    k = np.arange(n)
    return (np.cos(np.pi * (k + 0.5) / n) + 1) / 2 * (hi - lo) + lo


def fit(xs, ys, degree):
    return [float(F32(c)) for c in np.polynomial.polynomial.polyfit(xs, ys, degree)]


def horner32(coeffs, x):
    p = np.full_like(x, F32(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        p = (p * x + F32(c)).astype(F32)
    return p


def main():
    u = chebyshev_nodes(0, SPLIT * SPLIT)
    p = fit(u, [float(mp.erf(mp.sqrt(x)) / mp.sqrt(x)) for x in u], P_DEGREE)
    w = chebyshev_nodes(1 / (1 + W_SCALE * A_MAX), 1 / (1 + W_SCALE * SPLIT))
    a_of_w = (1 / w - 1) / W_SCALE
    q = fit(w, [float(mp.erfc(a) * mp.exp(a * a) / wi) for a, wi in zip(a_of_w, w)], Q_DEGREE)

    a = np.unique(np.concatenate([np.linspace(0, 10, 60001), np.geomspace(1e-8, 1, 1001)]).astype(F32))
    below = (a * horner32(p, (a * a).astype(F32))).astype(F32)
    wa = (F32(1) / (F32(1) + F32(W_SCALE) * a)).astype(F32)
    exp_neg_sq = np.exp(-(a.astype(np.float64) ** 2)).astype(F32)
    above = (exp_neg_sq * (wa * horner32(q, wa)).astype(F32)).astype(F32)
    erf = np.where(a < SPLIT, below, (F32(1) - above).astype(F32))
    erfc = np.where(a < SPLIT, (F32(1) - below).astype(F32), above)
    for name, got, fn in [("erf", erf, mp.erf), ("erfc", erfc, mp.erfc)]:
        want = np.array([float(fn(mp.mpf(float(x)))) for x in a])
        ok = want > 1e-37
        ulps = np.abs(got.astype(np.float64) - want)[ok] / np.spacing(np.abs(want[ok]).astype(F32))
        print(f"{name}: max {ulps.max():.2f} ulp at a = {a[ok][ulps.argmax()]}")
    print("P:", ", ".join(f"{c:.9g}f" for c in p))
    print("Q:", ", ".join(f"{c:.9g}f" for c in q))


if __name__ == "__main__":
    main()
