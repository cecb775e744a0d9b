/* test_ggml_quant_grids.c: where the IQ lattice grids of q36 come from, and
 * the test that they still match the pinned libggml.
 *
 * The grids (iq2xxs/iq2xs/iq2s/iq3xxs/iq3s/iq1s) and the IQ4_NL levels are
 * lists of chosen values with no formula. q36 does not copy them from
 * ggml's source: it reads them out of the library through its public API.
 * For every grid index we build a block of that type whose scale fields
 * make the group multiplier an exact power of two and whose sign fields are
 * all "+", put the index in one group, call ggml_get_type_traits(type)->
 * to_float, and divide the 8 (or 4) outputs by the multiplier:
 *   iq2_xxs  d = 1, scale nibble 0, sign index 0  -> multiplier 1/8
 *   iq2_xs   d = 1, scales 0, sign index 0        -> 1/8
 *   iq2_s    d = 1, scales 0, sign bytes 0        -> 1/8
 *   iq3_xxs  d = 1, scale nibble 0, sign index 0  -> 1/4
 *   iq3_s    d = 1, scales 0, sign bytes 0        -> 1
 *   iq1_s    d = 1, scale 0, delta bit 0          -> value = grid + 1/8
 *   iq4_nl   d = 1, code j in element j           -> value = level j
 * Each output must come back as an exact integer in range, or the case
 * fails. Every byte of every entry is thereby observed, nothing assumed.
 *
 * Usage: test_ggml_quant_grids          compare src/quant/iq_grids.c
 *        test_ggml_quant_grids --emit   print a fresh src/quant/iq_grids.c
 */
#include <math.h>
#include <stdlib.h>

#include "ggml.h"
#include "quant/iq_tables.h"
#include "test.h"

static uint64_t g2xxs[256], g2xs[512], g2s[1024], g1s[2048];
static uint32_t g3xxs[256], g3s[512];
static int8_t kv4[16];
static char why[256];

/* Dequantizes one block with ggml and checks each output v gives an
 * integer (v - off) * mul in [lo, hi]. */
static int read_block(enum ggml_type t, const uint8_t *blk, float mul, float off, int lo, int hi,
                      int out[256])
{
    float y[256];
    ggml_get_type_traits(t)->to_float(blk, y, ggml_blck_size(t));
    for (int j = 0; j < ggml_blck_size(t); j++) {
        float v = (y[j] - off) * mul;
        if (v != floorf(v) || v < lo || v > hi) {
            snprintf(why, sizeof why, "%s element %d gave %.9g, not an integer in [%d,%d]",
                     ggml_type_name(t), j, (double)v, lo, hi);
            return -1;
        }
        out[j] = (int)v;
    }
    return 0;
}

static uint64_t pack8(const int *v, int n)
{
    uint64_t e = 0;
    for (int j = 0; j < n; j++)
        e |= (uint64_t)(uint8_t)v[j] << 8 * j;
    return e;
}

static int derive(void)
{
    uint8_t b[256];
    int v[256];
    /* iq2_xxs: 32 indices per block at bytes 2+8ib+l, a1 word 0 */
    for (int base = 0; base < 256; base += 32) {
        memset(b, 0, sizeof b);
        b[1] = 0x3C;
        for (int k = 0; k < 32; k++)
            b[2 + 8 * (k / 4) + k % 4] = (uint8_t)(base + k);
        if (read_block(GGML_TYPE_IQ2_XXS, b, 8, 0, 0, 255, v))
            return -1;
        for (int k = 0; k < 32; k++)
            g2xxs[base + k] = pack8(v + 8 * k, 8);
    }
    /* iq2_xs: u16 qs[32] = 9-bit index, sign index 0 */
    for (int base = 0; base < 512; base += 32) {
        memset(b, 0, sizeof b);
        b[1] = 0x3C;
        for (int k = 0; k < 32; k++) {
            b[2 + 2 * k] = (uint8_t)(base + k);
            b[3 + 2 * k] = (uint8_t)((base + k) >> 8);
        }
        if (read_block(GGML_TYPE_IQ2_XS, b, 8, 0, 0, 255, v))
            return -1;
        for (int k = 0; k < 32; k++)
            g2xs[base + k] = pack8(v + 8 * k, 8);
    }
    /* iq2_s: low byte in qs[4ib+l], high 2 bits at qh[ib] bits 2l..2l+1 */
    for (int base = 0; base < 1024; base += 32) {
        memset(b, 0, sizeof b);
        b[1] = 0x3C;
        for (int k = 0; k < 32; k++) {
            int gi = base + k, ib = k / 4, l = k % 4;
            b[2 + k] = (uint8_t)gi;
            b[66 + ib] |= (uint8_t)((gi >> 8) << (2 * l));
        }
        if (read_block(GGML_TYPE_IQ2_S, b, 8, 0, 0, 255, v))
            return -1;
        for (int k = 0; k < 32; k++)
            g2s[base + k] = pack8(v + 8 * k, 8);
    }
    /* iq3_xxs: 64 index bytes, each one 4-element half group */
    for (int base = 0; base < 256; base += 64) {
        memset(b, 0, sizeof b);
        b[1] = 0x3C;
        for (int k = 0; k < 64; k++)
            b[2 + k] = (uint8_t)(base + k);
        if (read_block(GGML_TYPE_IQ3_XXS, b, 4, 0, 0, 255, v))
            return -1;
        for (int k = 0; k < 64; k++)
            g3xxs[base + k] = (uint32_t)pack8(v + 4 * k, 4);
    }
    /* iq3_s: 9-bit index, low byte in qs, bit 8 at qh[ib] bit (k % 8) */
    for (int base = 0; base < 512; base += 64) {
        memset(b, 0, sizeof b);
        b[1] = 0x3C;
        for (int k = 0; k < 64; k++) {
            int gi = base + k;
            b[2 + k] = (uint8_t)gi;
            b[66 + k / 8] |= (uint8_t)((gi >> 8) << (k % 8));
        }
        if (read_block(GGML_TYPE_IQ3_S, b, 1, 0, 0, 255, v))
            return -1;
        for (int k = 0; k < 64; k++)
            g3s[base + k] = (uint32_t)pack8(v + 4 * k, 4);
    }
    /* iq1_s: 11-bit index, low byte in qs[4ib+l], high 3 bits in qh[ib]
     * bits 3l..3l+2; scale 0 and delta bit 0 give value = grid + 1/8 */
    for (int base = 0; base < 2048; base += 32) {
        memset(b, 0, sizeof b);
        b[1] = 0x3C;
        uint16_t qh[8] = { 0 };
        for (int k = 0; k < 32; k++) {
            int gi = base + k;
            b[2 + k] = (uint8_t)gi;
            qh[k / 4] |= (uint16_t)((gi >> 8) << (3 * (k % 4)));
        }
        memcpy(b + 34, qh, sizeof qh);
        if (read_block(GGML_TYPE_IQ1_S, b, 1, 0.125f, -1, 1, v))
            return -1;
        for (int k = 0; k < 32; k++)
            g1s[base + k] = pack8(v + 8 * k, 8);
    }
    /* iq4_nl: d = 1, element j (j < 16) holds code j */
    memset(b, 0, sizeof b);
    b[1] = 0x3C;
    for (int j = 0; j < 16; j++)
        b[2 + j] = (uint8_t)j;
    if (read_block(GGML_TYPE_IQ4_NL, b, 1, 0, -128, 127, v))
        return -1;
    for (int j = 0; j < 16; j++)
        kv4[j] = (int8_t)v[j];
    return 0;
}

static void emit64(const char *name, const uint64_t *g, int n)
{
    printf("const uint64_t %s[%d] = {\n", name, n);
    for (int i = 0; i < n; i++)
        printf("%s0x%016llx,%s", i % 4 ? " " : "    ", (unsigned long long)g[i],
               i % 4 == 3 ? "\n" : "");
    printf("};\n\n");
}

static void emit32(const char *name, const uint32_t *g, int n)
{
    printf("const uint32_t %s[%d] = {\n", name, n);
    for (int i = 0; i < n; i++)
        printf("%s0x%08x,%s", i % 8 ? " " : "    ", g[i], i % 8 == 7 ? "\n" : "");
    printf("};\n\n");
}

static void emit(void)
{
    printf("/* iq_grids.c: GENERATED by `build/tests/test_ggml_quant_grids --emit`; do\n"
           " * not edit. The IQ lattice grids and the IQ4_NL levels, read out of the\n"
           " * pinned libggml (%s) by dequantizing crafted blocks\n"
           " * with ggml_get_type_traits(type)->to_float; tests/test_ggml_quant_grids.c\n"
           " * says how, and re-derives and compares every entry. */\n"
           "#include \"iq_tables.h\"\n\n", "node-llama-cpp 3.22.1, llama.cpp v0.5.0");
    emit64("quant_iq2xxs_grid", g2xxs, 256);
    emit64("quant_iq2xs_grid", g2xs, 512);
    emit64("quant_iq2s_grid", g2s, 1024);
    emit32("quant_iq3xxs_grid", g3xxs, 256);
    emit32("quant_iq3s_grid", g3s, 512);
    emit64("quant_iq1s_grid", g1s, 2048);
    printf("const int8_t quant_kvalues_iq4nl[16] = {\n   ");
    for (int j = 0; j < 16; j++)
        printf(" %d,", kv4[j]);
    printf("\n};\n");
}

static void cmp64(const char *name, const uint64_t *ours, const uint64_t *lib, int n)
{
    for (int i = 0; i < n; i++)
        if (ours[i] != lib[i]) {
            t_fail(name, "entry %d is %016llx, libggml gives %016llx", i,
                   (unsigned long long)ours[i], (unsigned long long)lib[i]);
            return;
        }
    t_ok(name);
}

static void cmp32(const char *name, const uint32_t *ours, const uint32_t *lib, int n)
{
    for (int i = 0; i < n; i++)
        if (ours[i] != lib[i]) {
            t_fail(name, "entry %d is %08x, libggml gives %08x", i, ours[i], lib[i]);
            return;
        }
    t_ok(name);
}

int main(int argc, char **argv)
{
    if (derive()) {
        if (argc > 1)
            fprintf(stderr, "%s\n", why);
        t_fail("grids_derive", "%s", why);
        return t_exit();
    }
    if (argc > 1 && strcmp(argv[1], "--emit") == 0) {
        emit();
        return 0;
    }
    t_ok("grids_derive");
    cmp64("grid_iq2xxs", quant_iq2xxs_grid, g2xxs, 256);
    cmp64("grid_iq2xs", quant_iq2xs_grid, g2xs, 512);
    cmp64("grid_iq2s", quant_iq2s_grid, g2s, 1024);
    cmp32("grid_iq3xxs", quant_iq3xxs_grid, g3xxs, 256);
    cmp32("grid_iq3s", quant_iq3s_grid, g3s, 512);
    cmp64("grid_iq1s", quant_iq1s_grid, g1s, 2048);
    int bad = -1;
    for (int j = 0; j < 16; j++)
        if (quant_kvalues_iq4nl[j] != kv4[j])
            bad = j;
    t_check("kvalues_iq4nl", bad < 0, "level %d differs", bad);
    /* the constructed tables: ksigns by its parity rule, read back through
     * iq2_xxs: grid entry 0 with sign index i flips exactly the elements
     * whose bit is set in ksigns[i] */
    int kbad = -1;
    for (int i = 0; i < 128 && kbad < 0; i++) {
        uint8_t b[66] = { 0 };
        float y[256];
        b[1] = 0x3C;
        uint32_t a1 = (uint32_t)i;
        memcpy(b + 6, &a1, 4);
        ggml_get_type_traits(GGML_TYPE_IQ2_XXS)->to_float(b, y, 256);
        for (int j = 0; j < 8; j++)
            if ((y[j] < 0) != ((quant_ksigns_iq2xs[i] >> j) & 1))
                kbad = i;
    }
    t_check("ksigns_iq2xs", kbad < 0, "sign pattern %d differs from libggml", kbad);
    return t_exit();
}
