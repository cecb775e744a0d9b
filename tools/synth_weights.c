/* synth_weights.c: random tensor values for `q36 synth` and their encoding
 * into every weight type ggml defines for these files, streamed to the GGUF
 * writer.
 *
 * Float types and Q8_0 encode drawn values (Q8_0 quantized by amax/127 with
 * rounding). Every other type gets random valid blocks: random bytes for the
 * quants, grid indices, signs and sub-block scales, then the block's main
 * scale (and min, where the type has one) set so that the decoded block has
 * the RMS asked for: the block is decoded once with scale 1, and the scale
 * becomes target/RMS. Every scale is finite. */
#include "synth.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/quant/fp16.h"
#include "../src/quant/quant.h"
#include "../src/quant/types.h"

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void synth_rng_seed(synth_rng *r, uint64_t seed, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&h);
}

uint64_t synth_rng_next(synth_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return out;
}

float synth_rng_uniform(synth_rng *r)
{
    return (float)(synth_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

/* Irwin-Hall with 4 uniforms from one 64-bit draw: cheap and close enough to
 * a normal for random weights (bounded at +-3.46 sigma). */
float synth_rng_normal(synth_rng *r)
{
    uint64_t x = synth_rng_next(r);
    float s = (float)(x & 0xffff) + (float)((x >> 16) & 0xffff) +
              (float)((x >> 32) & 0xffff) + (float)(x >> 48);
    return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

static float draw(synth_rng *r, enum synth_dist dist, float scale)
{
    switch (dist) {
    case SYN_NORMAL:  return scale * synth_rng_normal(r);
    case SYN_NORM_W:  return 1.0f + scale * synth_rng_normal(r);
    case SYN_SSM_A:   return -expf(logf(1.0f + 15.0f * synth_rng_uniform(r)));
    case SYN_UNIFORM: return scale * (2.0f * synth_rng_uniform(r) - 1.0f);
    }
    return 0;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* Where a type keeps the f16 scales that multiply every decoded value of a
 * block (its d, and its min where it has one). IQ1_M and MXFP4 are special:
 * IQ1_M spreads its f16 d over the top nibbles of four u16 words, MXFP4 has
 * one E8M0 exponent byte. */
static const struct { uint32_t type; uint8_t n, off[2]; } scale_fields[] = {
    { QT_Q4_0, 1, { 0 } },   { QT_Q4_1, 2, { 0, 2 } },  { QT_Q5_0, 1, { 0 } },
    { QT_Q5_1, 2, { 0, 2 } }, { QT_Q2_K, 2, { 80, 82 } }, { QT_Q3_K, 1, { 108 } },
    { QT_Q4_K, 2, { 0, 2 } }, { QT_Q5_K, 2, { 0, 2 } },  { QT_Q6_K, 1, { 208 } },
    { QT_IQ2_XXS, 1, { 0 } }, { QT_IQ2_XS, 1, { 0 } },   { QT_IQ2_S, 1, { 0 } },
    { QT_IQ3_XXS, 1, { 0 } }, { QT_IQ3_S, 1, { 0 } },    { QT_IQ1_S, 1, { 0 } },
    { QT_IQ4_NL, 1, { 0 } },  { QT_IQ4_XS, 1, { 0 } },   { QT_Q1_0, 1, { 0 } },
    { QT_Q2_0, 1, { 0 } },    { QT_IQ1_M, 0, { 0 } },    { QT_MXFP4, 0, { 0 } },
};

static int scale_slot(uint32_t type)
{
    for (size_t i = 0; i < sizeof scale_fields / sizeof scale_fields[0]; i++)
        if (scale_fields[i].type == type)
            return (int)i;
    return -1;
}

bool synth_type_supported(uint32_t type)
{
    return type == QT_F32 || type == QT_F16 || type == QT_BF16 || type == QT_Q8_0 ||
           scale_slot(type) >= 0;
}

/* Sets every scale field of one block to (about) `v`. */
static void set_scale(uint32_t type, int slot, uint8_t *blk, float v)
{
    if (type == QT_MXFP4) {           /* scale 2^(e-128) */
        long e = 128 + lrintf(log2f(v));
        blk[0] = (uint8_t)(e < 1 ? 1 : e > 254 ? 254 : e);
    } else if (type == QT_IQ1_M) {    /* f16 bits in the top nibble of 4 u16 words */
        uint16_t h = quant_f32_to_f16(v);
        for (int k = 0; k < 4; k++) {
            uint8_t *w = blk + 48 + 2 * k;
            w[1] = (uint8_t)((w[1] & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
        }
    } else {
        for (int k = 0; k < scale_fields[slot].n; k++)
            put16(blk + scale_fields[slot].off[k], quant_f32_to_f16(v));
    }
}

/* A block's random bytes: ceil(size / 8) draws, whatever the type. */
static void random_bytes(const quant_type_info *ti, synth_rng *r, uint8_t *blk)
{
    for (uint32_t i = 0; i < ti->size; i += 8) {
        uint64_t q = synth_rng_next(r);
        memcpy(blk + i, &q, ti->size - i < 8 ? ti->size - i : 8);
    }
}

/* Makes a block of random bytes valid: its scale set so that the decoded
 * values have RMS `rms`. Reads no random numbers, so blocks can be fixed
 * in any order (and on any thread) once their bytes are drawn. */
static void fix_block(uint32_t type, int slot, const quant_type_info *ti, float rms,
                      uint8_t *blk, float *tmp)
{
    set_scale(type, slot, blk, 1.0f);
    quant_dequant_row(type, blk, tmp, ti->blck);
    double ss = 0;
    for (uint32_t i = 0; i < ti->blck; i++)
        ss += (double)tmp[i] * tmp[i];
    double got = sqrt(ss / ti->blck);
    set_scale(type, slot, blk, got > 0 && isfinite(got) ? (float)(rms / got) : rms);
}

/* Encodes n values (n a multiple of the block) drawn from r into out. */
static void encode(uint32_t type, synth_rng *r, enum synth_dist dist, float scale,
                   uint64_t n, uint8_t *out)
{
    switch (type) {
    case QT_F32:
        for (uint64_t i = 0; i < n; i++) {
            float v = draw(r, dist, scale);
            memcpy(out + 4 * i, &v, 4);
        }
        break;
    case QT_F16:
        for (uint64_t i = 0; i < n; i++)
            put16(out + 2 * i, quant_f32_to_f16(draw(r, dist, scale)));
        break;
    case QT_BF16:
        for (uint64_t i = 0; i < n; i++)
            put16(out + 2 * i, quant_f32_to_bf16(draw(r, dist, scale)));
        break;
    case QT_Q8_0:
        for (uint64_t b = 0; b < n / 32; b++, out += 34) {
            float v[32], amax = 0;
            for (int i = 0; i < 32; i++) {
                v[i] = draw(r, dist, scale);
                amax = fmaxf(amax, fabsf(v[i]));
            }
            float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0;
            put16(out, quant_f32_to_f16(d));
            for (int i = 0; i < 32; i++)
                out[2 + i] = (uint8_t)(int8_t)lrintf(v[i] * id);
        }
        break;
    default: {
        /* Random valid blocks: the bytes here, in block order; their scales
         * by fix_blocks. */
        const quant_type_info *ti = quant_type_get(type);
        for (uint64_t b = 0; b < n / ti->blck; b++, out += ti->size)
            random_bytes(ti, r, out);
        break;
    }
    }
}

static int blocks_type(uint32_t type)
{
    return type != QT_F32 && type != QT_F16 && type != QT_BF16 && type != QT_Q8_0;
}

typedef struct fix_job {
    uint32_t type;
    float rms;
    uint8_t *buf;
    uint64_t nblk, next;   /* next: the first block no thread has taken */
    pthread_mutex_t mu;
} fix_job;

/* Fixes the job's blocks, a run of them at a time, until none are left. */
static void *fix_blocks(void *arg)
{
    fix_job *j = arg;
    const quant_type_info *ti = quant_type_get(j->type);
    int slot = scale_slot(j->type);
    float tmp[256];
    for (;;) {
        pthread_mutex_lock(&j->mu);
        uint64_t b0 = j->next, b1 = b0 + 4096 < j->nblk ? b0 + 4096 : j->nblk;
        j->next = b1;
        pthread_mutex_unlock(&j->mu);
        if (b0 >= b1)
            return NULL;
        for (uint64_t b = b0; b < b1; b++)
            fix_block(j->type, slot, ti, j->rms, j->buf + b * ti->size, tmp);
    }
}

/* The scales of nblk blocks of random bytes at buf, at the RMS of the
 * distribution asked for, on up to 32 threads (the machine's cores). The
 * bytes do not depend on the thread count: each block's scale depends on
 * that block alone. */
static void fix_all(uint32_t type, enum synth_dist dist, float scale, uint8_t *buf, uint64_t nblk)
{
    fix_job j = { .type = type, .rms = dist == SYN_UNIFORM ? scale / sqrtf(3.0f) : scale,
                  .buf = buf, .nblk = nblk };
    pthread_mutex_init(&j.mu, NULL);
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    nt = nt < 1 ? 1 : nt > 32 ? 32 : nt;
    if ((uint64_t)nt > nblk / 4096 + 1)
        nt = (long)(nblk / 4096 + 1);
    pthread_t th[32];
    long started = 0;
    for (long i = 1; i < nt; i++, started++)
        if (pthread_create(&th[i - 1], NULL, fix_blocks, &j) != 0)
            break;      /* fewer helpers: the calling thread does the rest */
    fix_blocks(&j);
    for (long i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.mu);
}

int synth_write_tensor(gguf_writer *w, uint32_t type, uint64_t ne0, uint64_t nrows,
                       enum synth_dist dist, float scale, uint64_t seed,
                       const char *name, q36_err *err)
{
    uint64_t row_bytes = quant_row_bytes(type, ne0);
    if (!synth_type_supported(type) || row_bytes == 0)
        return q36_err_set(err, Q36_E_ARG, "synth: cannot encode tensor '%s' (%llu per row) as %s",
                           name, (unsigned long long)ne0, quant_type_name(type));
    /* Rows per chunk: about 4 MiB (64 MiB where the blocks' scales are
     * fixed on several threads), at least one row. */
    uint64_t rows = ((blocks_type(type) ? 64ull : 4ull) << 20) / row_bytes;
    if (rows == 0)
        rows = 1;
    uint8_t *buf = malloc(rows * row_bytes);
    if (!buf)
        return q36_err_set(err, Q36_E_NOMEM, "synth: out of memory for tensor '%s'", name);
    synth_rng r;
    synth_rng_seed(&r, seed, name);
    int rc = 0;
    for (uint64_t done = 0; done < nrows && rc == 0; done += rows) {
        uint64_t k = nrows - done < rows ? nrows - done : rows;
        for (uint64_t j = 0; j < k; j++)
            encode(type, &r, dist, scale, ne0, buf + j * row_bytes);
        if (blocks_type(type))
            fix_all(type, dist, scale, buf, k * row_bytes / quant_type_get(type)->size);
        rc = gguf_w_data(w, buf, k * row_bytes, err);
    }
    free(buf);
    return rc;
}
