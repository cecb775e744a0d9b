/* test_ggml_quant_iqmade.c: the dequant_ggml_* cases of IQ1_S, IQ1_M and
 * IQ2_S (blocks made by ggml_quantize_chunk), split from test_ggml_quant.c
 * only because ggml's set-up for those quantizers takes ~20 s of CPU. */
#define QUANT_TEST_IQMADE 1
/* the other cases of the included file are compiled but not run here */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "test_ggml_quant.c"
