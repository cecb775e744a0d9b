/* iq_tables.c: the IQ/FP4 tables that follow from a construction (see
 * iq_tables.h); the chosen lattice grids are in the generated iq_grids.c. */
#include "iq_tables.h"

#define PAR7(i) (((i) ^ (i) >> 1 ^ (i) >> 2 ^ (i) >> 3 ^ (i) >> 4 ^ (i) >> 5 ^ (i) >> 6) & 1)
#define KS(i)   (uint8_t)((i) | PAR7(i) << 7)
#define KS4(i)  KS(i), KS((i) + 1), KS((i) + 2), KS((i) + 3)
#define KS16(i) KS4(i), KS4((i) + 4), KS4((i) + 8), KS4((i) + 12)

const uint8_t quant_ksigns_iq2xs[128] = {
    KS16(0), KS16(16), KS16(32), KS16(48), KS16(64), KS16(80), KS16(96), KS16(112),
};

const int8_t quant_kvalues_fp4[16] = {
    0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
};
