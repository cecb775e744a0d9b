/* types.c: the ggml type table (see types.h). Values follow ggml's
 * type traits; tests check every entry against libggml's ggml_type_size and
 * ggml_blck_size. */
#include "types.h"

#include <strings.h>

#define QK_K 256

static const quant_type_info table[QT_COUNT] = {
    [QT_F32]     = { "f32",     1,    4 },
    [QT_F16]     = { "f16",     1,    2 },
    [QT_Q4_0]    = { "q4_0",    32,   18 },
    [QT_Q4_1]    = { "q4_1",    32,   20 },
    [QT_Q5_0]    = { "q5_0",    32,   22 },
    [QT_Q5_1]    = { "q5_1",    32,   24 },
    [QT_Q8_0]    = { "q8_0",    32,   34 },
    [QT_Q8_1]    = { "q8_1",    32,   36 },
    [QT_Q2_K]    = { "q2_K",    QK_K, 84 },
    [QT_Q3_K]    = { "q3_K",    QK_K, 110 },
    [QT_Q4_K]    = { "q4_K",    QK_K, 144 },
    [QT_Q5_K]    = { "q5_K",    QK_K, 176 },
    [QT_Q6_K]    = { "q6_K",    QK_K, 210 },
    [QT_Q8_K]    = { "q8_K",    QK_K, 292 },
    [QT_IQ2_XXS] = { "iq2_xxs", QK_K, 66 },
    [QT_IQ2_XS]  = { "iq2_xs",  QK_K, 74 },
    [QT_IQ3_XXS] = { "iq3_xxs", QK_K, 98 },
    [QT_IQ1_S]   = { "iq1_s",   QK_K, 50 },
    [QT_IQ4_NL]  = { "iq4_nl",  32,   18 },
    [QT_IQ3_S]   = { "iq3_s",   QK_K, 110 },
    [QT_IQ2_S]   = { "iq2_s",   QK_K, 82 },
    [QT_IQ4_XS]  = { "iq4_xs",  QK_K, 136 },
    [QT_I8]      = { "i8",      1,    1 },
    [QT_I16]     = { "i16",     1,    2 },
    [QT_I32]     = { "i32",     1,    4 },
    [QT_I64]     = { "i64",     1,    8 },
    [QT_F64]     = { "f64",     1,    8 },
    [QT_IQ1_M]   = { "iq1_m",   QK_K, 56 },
    [QT_BF16]    = { "bf16",    1,    2 },
    [QT_TQ1_0]   = { "tq1_0",   QK_K, 54 },
    [QT_TQ2_0]   = { "tq2_0",   QK_K, 66 },
    [QT_MXFP4]   = { "mxfp4",   32,   17 },
    [QT_NVFP4]   = { "nvfp4",   64,   36 },
    [QT_Q1_0]    = { "q1_0",    128,  18 },
    [QT_Q2_0]    = { "q2_0",    64,   18 },
};

const quant_type_info *quant_type_get(uint32_t type)
{
    if (type >= QT_COUNT || !table[type].name)
        return NULL;
    return &table[type];
}

const char *quant_type_name(uint32_t type)
{
    const quant_type_info *t = quant_type_get(type);
    return t ? t->name : "?";
}

int quant_type_parse(const char *name)
{
    for (int i = 0; i < QT_COUNT; i++)
        if (table[i].name && strcasecmp(table[i].name, name) == 0)
            return i;
    return -1;
}

uint64_t quant_row_bytes(uint32_t type, uint64_t n)
{
    const quant_type_info *t = quant_type_get(type);
    if (!t || n % t->blck)
        return 0;
    return n / t->blck * t->size;
}
