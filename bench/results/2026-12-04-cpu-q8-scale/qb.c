#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "backend/cpu/cpu_gemm_q8.h"
#include "quant/fp16.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  int64_t shapes[][3]={{1024,6144,64},{256,151680,4},{256,151680,16},{3584,1024,64}};
  int reps=argc>1?atoi(argv[1]):30;
  srand(1);
  for(int s=0;s<4;s++){
    int64_t K=shapes[s][0],N=shapes[s][1],T=shapes[s][2],rb=K/32*34;
    uint8_t*w=malloc(rb*N),*a=malloc(rb*T);
    for(int64_t i=0;i<rb*N;i++)w[i]=rand();
    for(int64_t i=0;i<rb*T;i++)a[i]=rand()%200;
    for(int64_t r=0;r<N;r++)for(int64_t b=0;b<K/32;b++){uint16_t h=quant_f32_to_f16(0.01f);memcpy(w+r*rb+b*34,&h,2);}
    for(int64_t r=0;r<T;r++)for(int64_t b=0;b<K/32;b++){uint16_t h=quant_f32_to_f16(0.02f);memcpy(a+r*rb+b*34,&h,2);}
    float*y=malloc(4*N*T);double best=1e9;
    for(int i=0;i<reps;i++){double t0=now();cpu_gemm_q8_0_avx512vnni(K,w,rb,N,a,rb,T,y,N);double d=now()-t0;if(d<best)best=d;}
    double cs=0;for(int64_t i=0;i<N*T;i++)cs+=y[i];
    printf("K=%lld N=%lld T=%lld %.3f ms  (cs %.6g)\n",(long long)K,(long long)N,(long long)T,best*1e3,cs);
    free(w);free(a);free(y);
  }
}
