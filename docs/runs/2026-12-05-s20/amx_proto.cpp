// Prototype: tiled Q4_1 layout, VNNI lanes-as-outputs kernel and AMX kernel.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")))
#define AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c,amx-tile,amx-int8")))
constexpr int QK = 32;
struct Cfg { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; };

// tile layout: per 16 rows, per block: codes 256 (group g byte 4j+t: lo = row j elem 4g+t, hi = row j elem 16+4g+t), d[16] f16, m[16] f16
struct Tiles { std::vector<uint8_t> bytes; int64_t n, k; };
Tiles pack(const std::vector<uint8_t>& codes, const std::vector<uint16_t>& d, const std::vector<uint16_t>& mm, int64_t n, int64_t k) {
  int64_t nb = k / QK, nt = (n + 15) / 16;
  Tiles t{std::vector<uint8_t>(nt * nb * 320), n, k};
  for (int64_t ti = 0; ti < nt; ti++) for (int64_t b = 0; b < nb; b++) {
    uint8_t* o = t.bytes.data() + (ti * nb + b) * 320;
    for (int j = 0; j < 16; j++) {
      int64_t r = ti * 16 + j; if (r >= n) continue;
      for (int g = 0; g < 4; g++) for (int tt = 0; tt < 4; tt++)
        o[64 * g + 4 * j + tt] = codes[r * k + b * 32 + 4 * g + tt] | (codes[r * k + b * 32 + 16 + 4 * g + tt] << 4);
      memcpy(o + 256 + 2 * j, &d[r * nb + b], 2);
      memcpy(o + 288 + 2 * j, &mm[r * nb + b], 2);
    }
  }
  return t;
}

template <int R>
AVX512 void vnni_tile(const uint8_t* tile, int64_t nb, const int8_t* qs, int64_t k, const float* ds, float* out, size_t ldo) {
  __m512 acc[R], macc[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) acc[i] = macc[i] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; b++, tile += 320) {
    __m512i B[8];
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
      const __m512i q = _mm512_loadu_si512(tile + 64 * g);
      B[g] = _mm512_and_si512(q, m4);
      B[g + 4] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tile + 256)));
    const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tile + 288)));
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const int32_t* x = (const int32_t*)(qs + i * k + 32 * b);
      __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), B[0], _mm512_set1_epi32(x[0]));
      __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), B[1], _mm512_set1_epi32(x[1]));
      d0 = _mm512_dpbusd_epi32(d0, B[2], _mm512_set1_epi32(x[2]));
      d1 = _mm512_dpbusd_epi32(d1, B[3], _mm512_set1_epi32(x[3]));
      d0 = _mm512_dpbusd_epi32(d0, B[4], _mm512_set1_epi32(x[4]));
      d1 = _mm512_dpbusd_epi32(d1, B[5], _mm512_set1_epi32(x[5]));
      d0 = _mm512_dpbusd_epi32(d0, B[6], _mm512_set1_epi32(x[6]));
      d1 = _mm512_dpbusd_epi32(d1, B[7], _mm512_set1_epi32(x[7]));
      const float* dsi = ds + i * (k / 16) + 2 * b;
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(dsi[0]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), sc, acc[i]);
      macc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dsi[1]), macc[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) _mm512_storeu_ps(out + i * ldo, _mm512_add_ps(acc[i], macc[i]));
}

AVX512 void vnni(const Tiles& t, const int8_t* qs, const float* ds, int m, float* out) {
  int64_t nb = t.k / QK, nt = t.n / 16;
  for (int64_t ti = 0; ti < nt; ti++) {
    const uint8_t* tile = t.bytes.data() + ti * nb * 320;
    int i0 = 0;
    for (; i0 + 8 <= m; i0 += 8) vnni_tile<8>(tile, nb, qs + i0 * t.k, t.k, ds + i0 * (t.k / 16), out + i0 * t.n + ti * 16, t.n);
    switch (m - i0) {
      case 1: vnni_tile<1>(tile, nb, qs + i0 * t.k, t.k, ds + i0 * (t.k / 16), out + i0 * t.n + ti * 16, t.n); break;
      case 2: vnni_tile<2>(tile, nb, qs + i0 * t.k, t.k, ds + i0 * (t.k / 16), out + i0 * t.n + ti * 16, t.n); break;
      case 4: vnni_tile<4>(tile, nb, qs + i0 * t.k, t.k, ds + i0 * (t.k / 16), out + i0 * t.n + ti * 16, t.n); break;
      default: break;
    }
  }
}

template <int R>
AMX void amx_tile(const uint8_t* tile, int64_t nb, const int8_t* qs, int64_t k, const float* ds, float* out, size_t ldo, uint8_t* bbuf, int32_t* cbuf) {
  __m512 acc[R], macc[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) acc[i] = macc[i] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; b++, tile += 320) {
    uint8_t* bb = bbuf + 512 * (b & 1);
    for (int g = 0; g < 4; g++) {
      const __m512i q = _mm512_loadu_si512(tile + 64 * g);
      _mm512_store_si512(bb + 64 * g, _mm512_and_si512(q, m4));
      _mm512_store_si512(bb + 64 * (g + 4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
    }
    _tile_loadd(2, bb, 64);
    _tile_loadd(1, qs + 32 * b, k);
    _tile_zero(0);
    _tile_dpbsud(0, 1, 2);
    _tile_stored(0, cbuf, 64);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tile + 256)));
    const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tile + 288)));
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const float* dsi = ds + i * (k / 16) + 2 * b;
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(dsi[0]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + 16 * i)), sc, acc[i]);
      macc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dsi[1]), macc[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) _mm512_storeu_ps(out + i * ldo, _mm512_add_ps(acc[i], macc[i]));
}

AMX void amx(const Tiles& t, const int8_t* qs, const float* ds, int m, float* out) {
  alignas(64) static uint8_t bbuf[1024];
  alignas(64) static int32_t cbuf[256];
  int64_t nb = t.k / QK, nt = t.n / 16;
  int mr = m >= 8 ? 8 : m;
  Cfg c{}; c.palette = 1;
  c.rows[0] = mr; c.colsb[0] = 64;   // C
  c.rows[1] = mr; c.colsb[1] = 32;   // A: x rows x 32 bytes
  c.rows[2] = 8; c.colsb[2] = 64;    // B
  _tile_loadconfig(&c);
  for (int64_t ti = 0; ti < nt; ti++) {
    const uint8_t* tile = t.bytes.data() + ti * nb * 320;
    for (int i0 = 0; i0 + 8 <= m; i0 += 8) amx_tile<8>(tile, nb, qs + i0 * t.k, t.k, ds + i0 * (t.k / 16), out + i0 * t.n + ti * 16, t.n, bbuf, cbuf);
    if (m < 8) {
      if (m == 1) amx_tile<1>(tile, nb, qs, t.k, ds, out + ti * 16, t.n, bbuf, cbuf);
      if (m == 2) amx_tile<2>(tile, nb, qs, t.k, ds, out + ti * 16, t.n, bbuf, cbuf);
      if (m == 4) amx_tile<4>(tile, nb, qs, t.k, ds, out + ti * 16, t.n, bbuf, cbuf);
    }
  }
  _tile_release();
}


template <int R>
AMX void amx2_group(const uint8_t* tile, const uint8_t* bscr, int64_t nb, const int8_t* qs, int64_t k, const float* ds, float* out, size_t ldo, int32_t* cbuf) {
  // phase 2: all blocks' int dots, alternating 2 tile sets
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    _tile_loadd(1, qs + 32 * b, k);
    _tile_loadd(2, bscr + 512 * b, 64);
    _tile_loadd(4, qs + 32 * b + 32, k);
    _tile_loadd(5, bscr + 512 * b + 512, 64);
    _tile_zero(0); _tile_zero(3);
    _tile_dpbsud(0, 1, 2);
    _tile_dpbsud(3, 4, 5);
    _tile_stored(0, cbuf + 16 * R * b, 64);
    _tile_stored(3, cbuf + 16 * R * (b + 1), 64);
  }
  if (b < nb) {
    _tile_loadd(1, qs + 32 * b, k);
    _tile_loadd(2, bscr + 512 * b, 64);
    _tile_zero(0);
    _tile_dpbsud(0, 1, 2);
    _tile_stored(0, cbuf + 16 * R * b, 64);
  }
  __m512 acc[R], macc[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) acc[i] = macc[i] = _mm512_setzero_ps();
  for (b = 0; b < nb; b++, tile += 320) {
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tile + 256)));
    const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tile + 288)));
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const float* dsi = ds + i * (k / 16) + 2 * b;
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(dsi[0]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + 16 * R * b + 16 * i)), sc, acc[i]);
      macc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dsi[1]), macc[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) _mm512_storeu_ps(out + i * ldo, _mm512_add_ps(acc[i], macc[i]));
}


template <int R>
AMX void amx3_group(const uint8_t* tile, const uint8_t* bscr, int64_t nb, const int8_t* qs, int64_t k, const float* ds, float* out, size_t ldo, int32_t* cbuf) {
  __m512 acc[R], macc[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) acc[i] = macc[i] = _mm512_setzero_ps();
  auto epi = [&](int64_t b) __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c"))) {
    const uint8_t* tb = tile + 320 * b;
    const int32_t* cb = cbuf + 16 * R * (b & 1);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tb + 256)));
    const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tb + 288)));
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const float* dsi = ds + i * (k / 16) + 2 * b;
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(dsi[0]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cb + 16 * i)), sc, acc[i]);
      macc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dsi[1]), macc[i]);
    }
  };
  for (int64_t b = 0; b < nb; b++) {
    if (b & 1) {
      _tile_loadd(4, qs + 32 * b, k); _tile_loadd(5, bscr + 512 * b, 64); _tile_zero(3); _tile_dpbsud(3, 4, 5); _tile_stored(3, cbuf + 16 * R, 64);
    } else {
      _tile_loadd(1, qs + 32 * b, k); _tile_loadd(2, bscr + 512 * b, 64); _tile_zero(0); _tile_dpbsud(0, 1, 2); _tile_stored(0, cbuf, 64);
    }
    if (b > 0) epi(b - 1);
  }
  epi(nb - 1);
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) _mm512_storeu_ps(out + i * ldo, _mm512_add_ps(acc[i], macc[i]));
}

AMX void amx2(const Tiles& t, const int8_t* qs, const float* ds, int m, float* out) {
  int64_t nb = t.k / QK, nt = t.n / 16;
  static std::vector<uint8_t> bv; static std::vector<int32_t> cv;
  bv.resize(nb * 512 + 64); cv.resize(nb * 128 + 16);
  uint8_t* bscr = (uint8_t*)(((uintptr_t)bv.data() + 63) & ~(uintptr_t)63);
  int32_t* cbuf = (int32_t*)(((uintptr_t)cv.data() + 63) & ~(uintptr_t)63);
  int mr = m >= 8 ? 8 : m;
  Cfg c{}; c.palette = 1;
  c.rows[0] = mr; c.colsb[0] = 64; c.rows[3] = mr; c.colsb[3] = 64;
  c.rows[1] = mr; c.colsb[1] = 32; c.rows[4] = mr; c.colsb[4] = 32;
  c.rows[2] = 8; c.colsb[2] = 64; c.rows[5] = 8; c.colsb[5] = 64;
  _tile_loadconfig(&c);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int64_t ti = 0; ti < nt; ti++) {
    const uint8_t* tile = t.bytes.data() + ti * nb * 320;
    for (int64_t b = 0; b < nb; b++) {
      const uint8_t* tb = tile + 320 * b; uint8_t* bb = bscr + 512 * b;
      for (int g = 0; g < 4; g++) {
        const __m512i q = _mm512_loadu_si512(tb + 64 * g);
        _mm512_store_si512(bb + 64 * g, _mm512_and_si512(q, m4));
        _mm512_store_si512(bb + 64 * (g + 4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
      }
    }
    for (int i0 = 0; i0 + 8 <= m; i0 += 8) amx3_group<8>(tile, bscr, nb, qs + i0 * t.k, t.k, ds + i0 * (t.k / 16), out + i0 * t.n + ti * 16, t.n, cbuf);
    if (m == 1) amx3_group<1>(tile, bscr, nb, qs, t.k, ds, out + ti * 16, t.n, cbuf);
    if (m == 2) amx2_group<2>(tile, bscr, nb, qs, t.k, ds, out + ti * 16, t.n, cbuf);
    if (m == 4) amx3_group<4>(tile, bscr, nb, qs, t.k, ds, out + ti * 16, t.n, cbuf);
  }
  _tile_release();
}

// 3-stage pipeline across weight tiles: iteration t unpacks tile t+1, multiplies tile t on the
// tiles, and rescales tile t-1 from its stored products.
AMX void amx4(const Tiles& t, const int8_t* qs, const float* ds, int m, float* out) {
  constexpr int R = 8;
  const int64_t nb = t.k / QK, nt = t.n / 16, k = t.k;
  static std::vector<uint8_t> bv; static std::vector<int32_t> cv;
  bv.resize(2 * nb * 512 + 64); cv.resize(2 * nb * 16 * R + 16);
  uint8_t* bscr = (uint8_t*)(((uintptr_t)bv.data() + 63) & ~(uintptr_t)63);
  int32_t* cbuf = (int32_t*)(((uintptr_t)cv.data() + 63) & ~(uintptr_t)63);
  Cfg c{}; c.palette = 1;
  c.rows[0] = R; c.colsb[0] = 64; c.rows[3] = R; c.colsb[3] = 64;
  c.rows[1] = R; c.colsb[1] = 32; c.rows[4] = R; c.colsb[4] = 32;
  c.rows[2] = 8; c.colsb[2] = 64; c.rows[5] = 8; c.colsb[5] = 64;
  _tile_loadconfig(&c);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  auto unpack = [&](int64_t ti, int64_t b) __attribute__((always_inline, target("avx512f,avx512bw"))) {
    const uint8_t* tb = t.bytes.data() + (ti * nb + b) * 320;
    uint8_t* bb = bscr + 512 * ((ti & 1) * nb + b);
    for (int g = 0; g < 4; g++) {
      const __m512i q = _mm512_loadu_si512(tb + 64 * g);
      _mm512_store_si512(bb + 64 * g, _mm512_and_si512(q, m4));
      _mm512_store_si512(bb + 64 * (g + 4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
    }
  };
  for (int64_t b = 0; b < nb; b++) unpack(0, b);
  __m512 acc[R], macc[R];
  for (int64_t ti = 0; ti <= nt; ti++) {
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) acc[i] = macc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
      if (ti + 1 < nt) unpack(ti + 1, b);
      if (ti < nt) {
        const uint8_t* bb = bscr + 512 * ((ti & 1) * nb + b);
        int32_t* cb = cbuf + 16 * R * ((ti & 1) * nb + b);
        if (b & 1) { _tile_loadd(4, qs + 32 * b, k); _tile_loadd(5, bb, 64); _tile_zero(3); _tile_dpbsud(3, 4, 5); _tile_stored(3, cb, 64); }
        else { _tile_loadd(1, qs + 32 * b, k); _tile_loadd(2, bb, 64); _tile_zero(0); _tile_dpbsud(0, 1, 2); _tile_stored(0, cb, 64); }
      }
      if (ti > 0) {
        const int64_t tp = ti - 1;
        const uint8_t* tb = t.bytes.data() + (tp * nb + b) * 320;
        const int32_t* cb = cbuf + 16 * R * ((tp & 1) * nb + b);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tb + 256)));
        const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(tb + 288)));
#pragma GCC unroll 8
        for (int i = 0; i < R; i++) {
          const float* dsi = ds + i * (k / 16) + 2 * b;
          const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(dsi[0]));
          acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cb + 16 * i)), sc, acc[i]);
          macc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dsi[1]), macc[i]);
        }
      }
    }
    if (ti > 0) {
#pragma GCC unroll 8
      for (int i = 0; i < R; i++) _mm512_storeu_ps(out + i * t.n + (ti - 1) * 16, _mm512_add_ps(acc[i], macc[i]));
    }
  }
  _tile_release();
}

int main(int argc, char** argv) {
  syscall(SYS_arch_prctl, 0x1023, 18);
  int64_t n = atoi(argv[1]), k = atoi(argv[2]); int m = atoi(argv[3]); long reps = atol(argv[4]);
  int64_t nb = k / QK;
  std::mt19937 rng(1);
  std::vector<uint8_t> codes(n * k); std::vector<uint16_t> d(n * nb), mm(n * nb);
  std::vector<float> dfl(n * nb), mfl(n * nb);
  for (auto& c : codes) c = rng() % 16;
  for (int64_t i = 0; i < n * nb; i++) { float a = 0.01f + (rng() % 1000) / 1e5f, b = -((rng() % 1000) / 1e4f);
    d[i] = _cvtss_sh(a, 0); mm[i] = _cvtss_sh(b, 0); dfl[i] = _cvtsh_ss(d[i]); mfl[i] = _cvtsh_ss(mm[i]); }
  Tiles t = pack(codes, d, mm, n, k);
  std::vector<int8_t> qs(m * k); std::vector<float> ds(m * 2 * nb);
  for (int i = 0; i < m; i++) for (int64_t b = 0; b < nb; b++) {
    float dx = 0.01f + (rng() % 100) / 1e3f; int s = 0;
    for (int e = 0; e < 32; e++) { int v = (int)(rng() % 255) - 127; qs[i * k + b * 32 + e] = v; s += v; }
    ds[i * 2 * nb + 2 * b] = dx; ds[i * 2 * nb + 2 * b + 1] = dx * s;
  }
  std::vector<float> o1(m * n), o2(m * n);
  vnni(t, qs.data(), ds.data(), m, o1.data()); amx4(t, qs.data(), ds.data(), m, o2.data());
  double maxerr = 0; int diff = 0;
  for (int i = 0; i < m; i++) for (int64_t r = 0; r < n; r++) {
    double ref = 0; for (int64_t b = 0; b < nb; b++) { double dot = 0; for (int e = 0; e < 32; e++) dot += codes[r * k + b * 32 + e] * (double)qs[i * k + b * 32 + e];
      ref += dfl[r * nb + b] * (double)ds[i * 2 * nb + 2 * b] * dot + mfl[r * nb + b] * (double)ds[i * 2 * nb + 2 * b + 1]; }
    maxerr = std::max(maxerr, std::fabs(ref - o1[i * n + r]) / (std::fabs(ref) + 1));
    diff += memcmp(&o1[i * n + r], &o2[i * n + r], 4) != 0;
  }
  printf("n=%ld k=%ld m=%d: max rel err %.2e, amx!=vnni: %d\n", n, k, m, maxerr, diff);
  for (int which = 0; which < 2; which++) {
    for (int w = 0; w < reps / 10; w++) which ? amx4(t, qs.data(), ds.data(), m, o2.data()) : vnni(t, qs.data(), ds.data(), m, o1.data());
    auto t0 = std::chrono::steady_clock::now();
    for (long w = 0; w < reps; w++) which ? amx4(t, qs.data(), ds.data(), m, o2.data()) : vnni(t, qs.data(), ds.data(), m, o1.data());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("  %s: %.2f us, %.1f GMAC/s\n", which ? "amx " : "vnni", s / reps * 1e6, 1.0 * n * k * m * reps / s / 1e9);
  }
}
