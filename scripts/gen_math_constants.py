#!/usr/bin/env python3
"""Prints the constants of wick's accurate float math (kernels/glsl/include/math.glsl,
kernels/glsl/include/math64.glsl, src/cpu/float_math.h), computed with mpmath at 500 digits:

- 2/pi in 32-bit words (the Payne-Hanek table of the sin/cos argument reduction);
- constants split into two parts, hi = the constant rounded to f32 / f64 and lo = the rest
  rounded: pi/2, 1/sqrt(2), and gelu's A = 2 sqrt(2/pi), B = 0.044715 A;
- the centres c = 0.625 + 0.25 j (j = 0..5) of the f64 erfc Taylor series on [1/2, 2):
  erfc(c) in two parts and 2/sqrt(pi) exp(-c^2).
Needs mpmath and numpy:  python3 scripts/gen_math_constants.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 500
TWO_OVER_PI_WORDS = 40


def two_over_pi_words(n):
    v, words = 2 / mp.pi, []
    for _ in range(n):
        v *= 2**32
        w = int(mp.floor(v))
        words.append(w)
        v -= w
    return words


def split32(x):
    hi = np.float32(float(x))
    return hi, np.float32(float(x - mp.mpf(float(hi))))


def split64(x):
    hi = float(x)
    return hi, float(x - mp.mpf(hi))


def main():
    words = two_over_pi_words(TWO_OVER_PI_WORDS)
    print("2/pi words:", ", ".join(f"0x{w:08X}u" for w in words))
    constants = {
        "pi/2": mp.pi / 2,
        "1/sqrt(2)": 1 / mp.sqrt(2),
        "gelu A = 2 sqrt(2/pi)": 2 * mp.sqrt(2 / mp.pi),
        "gelu B = 0.044715 A": 2 * mp.sqrt(2 / mp.pi) * mp.mpf("0.044715"),
    }
    for name, x in constants.items():
        h32, l32 = split32(x)
        h64, l64 = split64(x)
        print(f"{name}: f32 {h32:.9g}, {l32:.9g}; f64 {h64:.17g}, {l64:.17g}")
    print("erfc centres (erfc hi, erfc lo, 2/sqrt(pi) exp(-c^2)):")
    for j in range(6):
        c = mp.mpf("0.625") + mp.mpf("0.25") * j
        hi, lo = split64(mp.erfc(c))
        print(f"  c = {float(c)}: {hi:.17g}, {lo:.17g}, {float(2 / mp.sqrt(mp.pi) * mp.exp(-c * c)):.17g}")


if __name__ == "__main__":
    main()
