#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>
struct Cfg { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; };
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double vnni(long n) {
  __m512i a[12]; for (int i=0;i<12;i++) a[i]=_mm512_set1_epi32(i);
  __m512i x=_mm512_set1_epi8(1), y=_mm512_set1_epi8(2);
  auto t0=std::chrono::steady_clock::now();
  for (long i=0;i<n;i++){
#pragma GCC unroll 12
    for(int j=0;j<12;j++) a[j]=_mm512_dpbusd_epi32(a[j],x,y);
    asm volatile("" : "+v"(x));
  }
  auto t1=std::chrono::steady_clock::now();
  __m512i s=a[0]; for(int i=1;i<12;i++) s=_mm512_add_epi32(s,a[i]);
  volatile int z=_mm512_reduce_add_epi32(s); (void)z;
  return std::chrono::duration<double>(t1-t0).count();
}
__attribute__((target("amx-tile,amx-int8"))) double amx(long n, int M, int K, int N) {
  Cfg c{}; c.palette=1;
  for (int t=0;t<4;t++){ c.rows[t]=M; c.colsb[t]=N*4; }   // C tiles 0-3: M x N int32
  c.rows[4]=M; c.colsb[4]=K; c.rows[5]=M; c.colsb[5]=K;       // A tiles
  c.rows[6]=K/4; c.colsb[6]=N*4; c.rows[7]=K/4; c.colsb[7]=N*4; // B tiles
  _tile_loadconfig(&c);
  alignas(64) static int8_t buf[1024*4];
  for (int i=0;i<4096;i++) buf[i]=i&7;
  _tile_loadd(4,buf,64); _tile_loadd(5,buf,64); _tile_loadd(6,buf,64); _tile_loadd(7,buf,64);
  _tile_zero(0);_tile_zero(1);_tile_zero(2);_tile_zero(3);
  auto t0=std::chrono::steady_clock::now();
  for (long i=0;i<n;i++){
    _tile_dpbusd(0,4,6); _tile_dpbusd(1,4,7); _tile_dpbusd(2,5,6); _tile_dpbusd(3,5,7);
  }
  auto t1=std::chrono::steady_clock::now();
  alignas(64) static int32_t out[256]; _tile_stored(0,out,64);
  _tile_release();
  return std::chrono::duration<double>(t1-t0).count();
}
int main(){
  long r = syscall(SYS_arch_prctl, 0x1023, 18);
  printf("perm %ld\n", r);
  long n=20000000; vnni(n/10);
  double t=vnni(n); printf("vnni: %.3f G dpbusd/s = %.1f GMAC/s\n", 12*n/t/1e9, 12*n*64/t/1e9);
  int cfgs[][3]={{16,64,16},{16,32,16},{8,32,16},{8,64,16},{16,32,8},{8,32,8},{4,32,16},{16,64,8}};
  for (auto& c: cfgs){ long m=2000000; amx(m/10,c[0],c[1],c[2]); double t=amx(m,c[0],c[1],c[2]);
    double macs=4.0*m*c[0]*c[1]*c[2]; printf("amx M=%d K=%d N=%d: %.1f ns/op, %.1f GMAC/s\n",c[0],c[1],c[2], t/(4.0*m)*1e9, macs/t/1e9);}
}
