/* opmix.c: the AVX-512 VNNI Q8_0 tile's per-output-pair instructions alone (vpdpbusd, vcvtdq2ps,
 * vmulps, vfmadd over 2 row pairs x 8 tokens, activations and scales loaded), to time their
 * throughput without the tile's per-pair work. Build: gcc -O2 -mavx512f -mavx512vnni opmix.c
 * -o opmix; run: ./opmix (cycles assume 4.2 GHz). */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define NT 8
/* the kernel's block loop: 2 row pairs (wv, nbias, dw in registers) x NT tokens (au, da loaded) */
__attribute__((noinline)) void run(long n, __m512 *acc, const __m512i *au, const float *da, __m512i w0, __m512i w1, __m512i nb0, __m512i nb1, __m512 d0, __m512 d1){
  __m512 c[2][NT]; for(int i=0;i<2*NT;i++) c[i/NT][i%NT]=acc[i];
  for(long k=0;k<n;k++){
#pragma GCC unroll 8
    for(int t=0;t<NT;t++){
      const __m512i a=_mm512_load_si512(au+t); const __m512 d=_mm512_set1_ps(da[t]);
      __m512i s0=_mm512_dpbusd_epi32(nb0,a,w0), s1=_mm512_dpbusd_epi32(nb1,a,w1);
      c[0][t]=_mm512_fmadd_ps(_mm512_mul_ps(d0,d),_mm512_cvtepi32_ps(s0),c[0][t]);
      c[1][t]=_mm512_fmadd_ps(_mm512_mul_ps(d1,d),_mm512_cvtepi32_ps(s1),c[1][t]);
    }
    __asm__ volatile("" : "+v"(w0), "+v"(w1), "+v"(d0), "+v"(d1));
  }
  for(int i=0;i<2*NT;i++) acc[i]=c[i/NT][i%NT];
}
int main(int argc, char **argv){
  static __m512 a[2*NT]; static __m512i au[NT]; static float da[NT];
  for(int i=0;i<2*NT;i++)a[i]=_mm512_set1_ps(i);
  for(int t=0;t<NT;t++){au[t]=_mm512_set1_epi8(t+1); da[t]=1e-3f*(t+1);}
  long n=20000000; int cvt = argc > 1;
  for(int r=0;r<3;r++){double t0=now(); run(n,a,au,da,_mm512_set1_epi8(3),_mm512_set1_epi8(4),_mm512_set1_epi32(1),_mm512_set1_epi32(2),_mm512_set1_ps(1e-3f),_mm512_set1_ps(2e-3f)); double t=now()-t0;
  printf("%.3f ns per (pair,token) unit, %.2f cycles at 4.2 GHz, %.1f GMAC/s\n", t/(n*2.0*NT)*1e9, t/(n*2.0*NT)*4.2e9, n*2.0*NT*64/t/1e9);}
  float l[16]; _mm512_storeu_ps(l,a[3]); printf("%f\n",l[0]);
}
