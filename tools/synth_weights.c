/* synth_weights.c: random tensor values for `q36 synth` and their encoding
 * into F32, F16, BF16, Q8_0, Q4_K and Q6_K, streamed to the GGUF writer.
 *
 * Float types and Q8_0 encode drawn values (Q8_0 quantized by amax/127 with
 * rounding). Q4_K and Q6_K blocks are random valid blocks: random quants and
 * sub-block scales, with fp16 super-block scales chosen so that the decoded
 * values have about the standard deviation asked for. Every scale is finite. */
#include "synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* IEEE binary16 from float, round to nearest even (finite inputs). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax >= 0x7f800000)
        return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0));
    if (ax >= 0x477ff000)          /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000) {         /* subnormal or zero in f16 */
        float a;
        memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f)); /* units of 2^-24 */
    }
    uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

bool synth_type_supported(uint32_t type)
{
    switch (type) {
    case QT_F32: case QT_F16: case QT_BF16: case QT_Q8_0: case QT_Q4_K: case QT_Q6_K:
        return true;
    default:
        return false;
    }
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
            put16(out + 2 * i, f32_to_f16(draw(r, dist, scale)));
        break;
    case QT_BF16:
        for (uint64_t i = 0; i < n; i++)
            put16(out + 2 * i, f32_to_bf16(draw(r, dist, scale)));
        break;
    case QT_Q8_0:
        for (uint64_t b = 0; b < n / 32; b++, out += 34) {
            float v[32], amax = 0;
            for (int i = 0; i < 32; i++) {
                v[i] = draw(r, dist, scale);
                amax = fmaxf(amax, fabsf(v[i]));
            }
            float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0;
            put16(out, f32_to_f16(d));
            for (int i = 0; i < 32; i++)
                out[2 + i] = (uint8_t)(int8_t)lrintf(v[i] * id);
        }
        break;
    case QT_Q4_K:
        /* x = d*sc*q - dmin*m, q in 0..15, sc and m 6-bit. With sc ~ U(32,63)
         * and q uniform, the spread is about d*48*4.6; the mins centre it. */
        for (uint64_t b = 0; b < n / 256; b++, out += 144) {
            float d = scale / 220.0f;
            put16(out, f32_to_f16(d));
            put16(out + 2, f32_to_f16(d * 7.5f * 48.0f / 40.0f));
            uint8_t sc[8], m[8];
            for (int j = 0; j < 8; j++) {
                sc[j] = (uint8_t)(32 + synth_rng_next(r) % 32);
                m[j] = (uint8_t)(24 + synth_rng_next(r) % 32);
            }
            uint8_t *s = out + 4;   /* 12 bytes of packed 6-bit scales/mins */
            for (int j = 0; j < 4; j++) {
                s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
                s[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
                s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
            }
            for (int i = 0; i < 128; i += 8) {
                uint64_t q = synth_rng_next(r);
                memcpy(out + 16 + i, &q, 8);
            }
        }
        break;
    case QT_Q6_K:
        /* x = d*sc*(q-32), q 6-bit, sc int8 ~ U(16,127) signed at random. */
        for (uint64_t b = 0; b < n / 256; b++, out += 210) {
            for (int i = 0; i < 192; i += 8) {          /* ql[128] then qh[64] */
                uint64_t q = synth_rng_next(r);
                memcpy(out + i, &q, 8);
            }
            for (int j = 0; j < 16; j++) {
                int v = 16 + (int)(synth_rng_next(r) % 112);
                out[192 + j] = (uint8_t)(int8_t)((synth_rng_next(r) & 1) ? v : -v);
            }
            put16(out + 208, f32_to_f16(scale / 1300.0f));
        }
        break;
    }
}

int synth_write_tensor(gguf_writer *w, uint32_t type, uint64_t ne0, uint64_t nrows,
                       enum synth_dist dist, float scale, uint64_t seed,
                       const char *name, q36_err *err)
{
    uint64_t row_bytes = quant_row_bytes(type, ne0);
    if (!synth_type_supported(type) || row_bytes == 0)
        return q36_err_set(err, Q36_E_ARG, "synth: cannot encode tensor '%s' (%llu per row) as %s",
                           name, (unsigned long long)ne0, quant_type_name(type));
    /* Rows per chunk: about 4 MiB, at least one row. */
    uint64_t rows = (4u << 20) / row_bytes;
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
        rc = gguf_w_data(w, buf, k * row_bytes, err);
    }
    free(buf);
    return rc;
}
