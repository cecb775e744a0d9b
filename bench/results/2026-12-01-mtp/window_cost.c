/* window_cost.c: the parts of a speculative round on the default model, 100
 * times each, interleaved: a plain decode pass (1 row with logits), a verify
 * pass (4 rows, logits of each), the same 4 rows without logits (a replay's
 * cost per row), a checkpoint save without K/V rows, and one MTP draft pass
 * on a draft vocabulary of 16384 ids; then the two rollbacks: the verify
 * pass keeping each row's state, a rewind to row 2, and a checkpoint load
 * with a replay of 2 rows. A measurement script of this record,
 * not part of q36. Build: see window-cost.txt. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "include/q36.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  q36_model*m;q36_engine*e;q36_err err={0};
  if(q36_model_open(argv[1],&m,&err))return 1;
  q36_engine_opts o=q36_engine_opts_default();o.mtp=1;o.n_keep=4;
  if(q36_engine_new(m,4096,&o,&e,&err)){puts(err.msg);return 1;}
  q36_mtp_draft_vocab(e,16384,&err);
  int V=q36_engine_n_vocab(e),D=q36_engine_n_embd(e);
  float*lg=malloc((size_t)4*V*4),*h=calloc(4*D,4);
  q36_ckpt*c;q36_ckpt_new(e,0,&c,&err);
  int32_t ids[4]={474,2643,198,474},sl[4]={0},pos[4],out[4]={0,1,2,3};
  double t[8]={0};int N=100;
  for(int it=0;it<N;it++){
    for(int mode=0;mode<8;mode++){
      q36_slot_reset(e,0);
      int n=mode==0?1:4;
      for(int i=0;i<4;i++)pos[i]=i;
      q36_batch b={n,ids,sl,pos,mode==2?0:(mode==0?1:4),out};
      double t0=now();
      if(mode<3) q36_engine_eval(e,&b,mode==2?NULL:lg,mode==1?h:NULL,&err);
      else if(mode==3) q36_slot_save(e,0,c,&err);
      else if(mode==4) { q36_batch mb={1,ids,sl,pos,1,out}; q36_mtp_eval(e,&mb,h,Q36_MTP_H_TRUNK,lg,h,&err);}
      else { q36_batch vb={4,ids,sl,pos,4,out};
             if(mode==5){ q36_engine_keep_states(e,0,&err); t0=now(); q36_engine_eval(e,&vb,lg,h,&err); }
             else if(mode==6){ q36_engine_keep_states(e,0,&err); q36_engine_eval(e,&vb,lg,h,&err); t0=now(); q36_slot_rewind(e,0,2,&err); }
             else { q36_slot_save(e,0,c,&err); q36_engine_eval(e,&vb,lg,h,&err); t0=now(); q36_slot_load(e,0,c,&err);
                    q36_batch rb={2,ids,sl,pos,0,out}; q36_engine_eval(e,&rb,NULL,NULL,&err); } }
      t[mode]+=now()-t0;
    }
  }
  const char*nm[]={"1 row + logits","4 rows + 4 logits rows","4 rows, no logits","checkpoint save","MTP pass 1 row, draft vocab 16384",
    "4 rows + 4 logits rows, states kept","rewind to row 2","checkpoint load + replay of 2 rows"};
  for(int i=0;i<8;i++)printf("%-36s %.3f ms\n",nm[i],1e3*t[i]/N);
  return 0;}
