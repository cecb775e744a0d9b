/* types.h: the table of ggml tensor types: ids as GGUF stores them, names,
 * elements per block and bytes per block. It owns nothing else: layouts,
 * dequantizers and dot products live beside it, one file per family.
 */
#ifndef Q36_QUANT_TYPES_H
#define Q36_QUANT_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Ids are ggml's `enum ggml_type` values (the GGUF tensor type field). */
enum quant_type {
    QT_F32 = 0, QT_F16 = 1, QT_Q4_0 = 2, QT_Q4_1 = 3,
    QT_Q5_0 = 6, QT_Q5_1 = 7, QT_Q8_0 = 8, QT_Q8_1 = 9,
    QT_Q2_K = 10, QT_Q3_K = 11, QT_Q4_K = 12, QT_Q5_K = 13, QT_Q6_K = 14,
    QT_Q8_K = 15, QT_IQ2_XXS = 16, QT_IQ2_XS = 17, QT_IQ3_XXS = 18,
    QT_IQ1_S = 19, QT_IQ4_NL = 20, QT_IQ3_S = 21, QT_IQ2_S = 22,
    QT_IQ4_XS = 23, QT_I8 = 24, QT_I16 = 25, QT_I32 = 26, QT_I64 = 27,
    QT_F64 = 28, QT_IQ1_M = 29, QT_BF16 = 30, QT_TQ1_0 = 34, QT_TQ2_0 = 35,
    QT_MXFP4 = 39, QT_NVFP4 = 40, QT_Q1_0 = 41, QT_Q2_0 = 42,
    QT_COUNT = 43
};

typedef struct quant_type_info {
    const char *name;     /* lower-case ggml name, e.g. "q4_K"; NULL = retired id */
    uint32_t    blck;     /* elements per block */
    uint32_t    size;     /* bytes per block */
} quant_type_info;

/* Info for a type id, or NULL for ids that are out of range or retired. */
const quant_type_info *quant_type_get(uint32_t type);

/* Name of a type id ("q4_K"), or "?" for an unknown id. Never NULL. */
const char *quant_type_name(uint32_t type);

/* Parses a type name case-insensitively ("Q4_K", "q8_0", "bf16").
 * Returns the id, or -1 when the name is unknown. */
int quant_type_parse(const char *name);

/* Bytes of a row of n elements of `type`. Returns 0 when the type is unknown
 * or n is not a multiple of its block size. */
uint64_t quant_row_bytes(uint32_t type, uint64_t n);

#endif
