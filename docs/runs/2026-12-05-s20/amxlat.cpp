#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
struct Cfg { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; };
alignas(64) int8_t A[64 * 1024]; alignas(64) uint8_t B[64 * 1024]; alignas(64) int32_t C[64 * 1024];
#define AMX __attribute__((target("amx-tile,amx-int8,avx512f")))
template <int MODE> AMX double run(long n, int M) {
  Cfg c{}; c.palette = 1;
  for (int t = 0; t < 6; t += 3) { c.rows[t] = M; c.colsb[t] = 64; c.rows[t + 1] = M; c.colsb[t + 1] = 32; c.rows[t + 2] = 8; c.colsb[t + 2] = 64; }
  _tile_loadconfig(&c);
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; i++) {
    int b = i % 32;
    if (MODE == 0) { // load A,B; zero; dp; store  (1 set)
      _tile_loadd(1, A + 32 * b, 1024); _tile_loadd(2, B + 512 * b, 64); _tile_zero(0); _tile_dpbsud(0, 1, 2); _tile_stored(0, C + 128 * b, 64);
    } else if (MODE == 1) { // only loads + dp into accumulating C (no zero/store)
      _tile_loadd(1, A + 32 * b, 1024); _tile_loadd(2, B + 512 * b, 64); _tile_dpbsud(0, 1, 2);
    } else if (MODE == 2) { // 2 sets alternating
      if (i & 1) { _tile_loadd(1, A + 32 * b, 1024); _tile_loadd(2, B + 512 * b, 64); _tile_zero(0); _tile_dpbsud(0, 1, 2); _tile_stored(0, C + 128 * b, 64); }
      else { _tile_loadd(4, A + 32 * b, 1024); _tile_loadd(5, B + 512 * b, 64); _tile_zero(3); _tile_dpbsud(3, 4, 5); _tile_stored(3, C + 128 * b, 64); }
    } else if (MODE == 3) { // store only
      _tile_stored(0, C + 128 * b, 64);
    } else if (MODE == 4) { // loads only
      _tile_loadd(1, A + 32 * b, 1024); _tile_loadd(2, B + 512 * b, 64);
    } else if (MODE == 5) { // zero+dp+store
      _tile_zero(0); _tile_dpbsud(0, 1, 2); _tile_stored(0, C + 128 * b, 64);
    }
  }
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  _tile_release();
  return t / n * 1e9;
}
int main() {
  syscall(SYS_arch_prctl, 0x1023, 18);
  for (int M : {1, 8, 16}) {
    run<0>(100000, M);
    printf("M=%2d full1 %.1f ns, accum %.1f, full2 %.1f, store %.1f, loads %.1f, zero+dp+store %.1f\n", M, run<0>(2000000, M), run<1>(2000000, M), run<2>(2000000, M), run<3>(2000000, M), run<4>(2000000, M), run<5>(2000000, M));
  }
}
