// Rotary pairs, the one definition rope.comp and rope_kv.comp share so that rope_kv_cache equals
// rope / rope_i bit for bit. Define CT (the compute type) first.

// Element i of a row of d: the pair it belongs to (the angle's index) and the pair's elements:
// (2 pair, 2 pair + 1) when interleaved (rope_i), else (pair, pair + d/2) (rope).
void rope_pair(uint i, uint d, bool interleaved, out uint pair, out uint lo, out uint hi) {
  if (interleaved) {
    pair = i / 2u;
    lo = 2u * pair;
    hi = lo + 1u;
  } else {
    pair = i % (d / 2u);
    lo = pair;
    hi = pair + d / 2u;
  }
}

// The pair (a, b) = (x[lo], x[hi]) rotated by (c, s): element lo is a c - b s, element hi a s + b c.
// precise: no fma contraction, which a compiler may choose differently in each kernel that rotates
// (rope.comp, rope_kv.comp, qmatvec.comp's ROPE_KV), and they must agree bit for bit.
CT rope_rotate(bool is_lo, CT a, CT b, CT c, CT s) {
  precise CT r = is_lo ? a * c - b * s : a * s + b * c;
  return r;
}
