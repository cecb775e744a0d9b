/* synth_mix.c: the tensor types of a Q4_K_M file, as llama-quantize picks
 * them for these architectures (llama.cpp src/llama-quant.cpp, the build
 * the oracle pins), so that `q36 synth --type q4_K_M` writes the mix of
 * types people download instead of one type throughout:
 *  - the output head, or token_embd where it is tied, is Q6_K;
 *  - attn_v-like tensors (attn_v, and the DeltaNet's fused attn_qkv, which
 *    llama-quantize files with them) are Q6_K where use_more_bits(i, n)
 *    holds for the i-th of the n such tensors in file order;
 *  - ffn_down tensors (dense, experts and shared expert) are Q6_K in the
 *    blocks where use_more_bits(block, blocks) holds;
 *  - attn_output is Q5_K in a model of exactly 8 experts;
 *  - everything else is Q4_K (1-D tensors stay F32, as synth writes them).
 * use_more_bits(i, n): i < n/8, or i >= 7n/8, or (i - n/8) % 3 == 2. */
#include "synth.h"

#include <stdio.h>
#include <string.h>

#include "../src/quant/types.h"

bool synth_mix_parse(const char *name, synth_mix *m)
{
    if (strcmp(name, "q4_K_M") && strcmp(name, "Q4_K_M"))
        return false;
    memset(m, 0, sizeof *m);
    m->base = QT_Q4_K;
    return true;
}

static bool attn_v_like(const char *t)
{
    return strstr(t, "attn_v.weight") || strstr(t, "attn_qkv.weight") || strstr(t, "attn_kv_b.weight");
}

static bool use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

void synth_mix_count(synth_mix *m, const char *tensor)
{
    if (attn_v_like(tensor))
        m->n_wv++;
}

uint32_t synth_mix_type(synth_mix *m, const char *tensor)
{
    if (!strcmp(tensor, "output.weight") || (m->tied && !strcmp(tensor, "token_embd.weight")))
        return QT_Q6_K;
    if (attn_v_like(tensor))
        return use_more_bits(m->i_wv++, m->n_wv) ? QT_Q6_K : m->base;
    int blk;
    if (strstr(tensor, "ffn_down") && sscanf(tensor, "blk.%d.", &blk) == 1)
        return use_more_bits(blk, (int)m->n_layer) ? QT_Q6_K : m->base;
    if (m->n_expert == 8 && strstr(tensor, "attn_output.weight"))
        return QT_Q5_K;
    return m->base;
}
