/* smp_penalty.c: the penalty window (the last penalty_last_n accepted ids
 * with a count per id) and the effective logits it implies, served block by
 * block so that the selection passes read unpenalized blocks in place.
 */
#include "smp_internal.h"

#include <string.h>

void smp_window_clear(smp *s)
{
    if (!s->penalize)
        return;
    /* Only ids in the ring can have a count: clear those, not the vocabulary. */
    for (int32_t i = 0; i < s->ring_len; i++) {
        int32_t id = s->ring[(s->ring_head + i) % s->par.penalty_last_n];
        s->count[id] = 0;
        s->mask[id >> 6] &= ~(1ull << (id & 63));
    }
    s->ring_len = 0;
    s->ring_head = 0;
}

void smp_window_push(smp *s, int32_t token)
{
    if (!s->penalize)
        return;
    const int32_t cap = s->par.penalty_last_n;
    if (s->ring_len == cap) {
        int32_t old = s->ring[s->ring_head];
        if (--s->count[old] == 0)
            s->mask[old >> 6] &= ~(1ull << (old & 63));
        s->ring[s->ring_head] = token;
        s->ring_head = (s->ring_head + 1) % cap;
    } else {
        s->ring[(s->ring_head + s->ring_len) % cap] = token;
        s->ring_len++;
    }
    if (s->count[token]++ == 0)
        s->mask[token >> 6] |= 1ull << (token & 63);
}

const float *smp_block(const smp *s, const float *logits, int32_t b0, int32_t len, float *tmp)
{
    if (!s->penalize)
        return logits + b0;
    uint64_t bits = s->mask[b0 >> 6];   /* b0 is a multiple of 64 */
    if (!bits)
        return logits + b0;
    memcpy(tmp, logits + b0, (size_t)len * sizeof *tmp);
    const float rep = s->par.repeat_penalty;
    const float freq = s->par.frequency_penalty;
    const float pres = s->par.presence_penalty;
    while (bits) {
        int j = __builtin_ctzll(bits);
        bits &= bits - 1;
        if (j >= len)
            break;
        /* Multiplying a non-positive logit (rather than dividing) keeps a
         * repeat penalty > 1 making the token less likely; the float steps
         * are those of the definition so the values agree with llama.cpp's. */
        float v = tmp[j];
        v = v <= 0.0f ? v * rep : v / rep;
        v -= (float)s->count[b0 + j] * freq + pres;
        tmp[j] = v;
    }
    return tmp;
}

float smp_logit(const smp *s, const float *logits, int32_t id)
{
    float tmp[SMP_BLOCK];
    int32_t b0 = id & ~(SMP_BLOCK - 1);
    return smp_block(s, logits, b0, id - b0 + 1, tmp)[id - b0];
}
