#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  size_t n=100<<20;
  double t0=now(); char*p=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); memset(p,1,n); double t1=now();
  printf("demand faults: %.1f ms, %.2f us/page\n",(t1-t0)*1e3,(t1-t0)*1e6/(n/4096));
  t0=now(); char*q=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE,-1,0); memset(q,1,n); t1=now();
  printf("populate: %.1f ms, %.2f us/page\n",(t1-t0)*1e3,(t1-t0)*1e6/(n/4096));
  t0=now(); char*r=mmap(0,n+(2<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); r=(char*)(((size_t)r+(2<<20)-1)&~((size_t)(2<<20)-1)); madvise(r,n,MADV_HUGEPAGE); memset(r,1,n); t1=now();
  printf("thp: %.1f ms, %.2f us/page\n",(t1-t0)*1e3,(t1-t0)*1e6/(n/4096));
  t0=now(); memset(p,2,n); t1=now(); printf("touched again: %.1f ms\n",(t1-t0)*1e3);
  return 0;}
