/* cpu_attn_pvr.h: probabilities times V straight from the cache rows (the
 * pv_rows and out kernels of cpu_attn_kernels), one body for both vector
 * widths. Included once by cpu_attn_avx2.c (8 lanes) and once by
 * cpu_attn_avx512.c (16 lanes), each defining first:
 *   PVR_L          lanes (positions per lane cycle, columns per vector)
 *   PVR_NC         column vectors per register tile (at most 4)
 *   PVR_T          the target attribute of the width
 *   PVR_V          the vector type
 *   PVR_ROW(F16, src, ld, k, i)  columns i .. i+L-1 of cache row k as a vector
 *   PVR_SET1(x), PVR_FMA(a, b, c), PVR_LOAD(p), PVR_STORE(p, v), PVR_ADD(a, b)
 *   PVR_PV_ROWS, PVR_OUT  the names of the two kernels it defines
 *
 * The reference's lane accumulator (query i, lane l = position mod L,
 * column d) is acc[(i * L + l) * hd + d]; a vector holds L columns of one
 * lane, and a register tile of NQ queries x NC column vectors of one lane
 * takes positions l, l+L, l+2L, ... in order: one V chunk (widened from
 * f16) per column vector and position serves NQ fused multiply-adds with
 * the queries' broadcast probabilities, each lane's chain in position
 * order as the reference's, so the bits are the reference's. Positions at
 * or past a query's nv[i] are skipped (a fused multiply-add with a zero
 * probability is not a no-op: it can turn -0 into +0). The first pass
 * over a row (PF) asks for the rest of it. F16 and PF are constants in
 * each instantiation, so the inner loops test nothing at run time. */

#define PVR_INL static inline __attribute__((always_inline))

/* Columns d0 .. d0+L*NC-1 of cache row pp as NC vectors. */
PVR_T PVR_INL void pvr_row(const int NC, const int F16, const int PF, const void *src, int64_t ld,
                           int64_t hd, int64_t pp, int64_t d0, PVR_V *v)
{
    const int64_t es = F16 ? 2 : 4;
    if (PF)
        for (int64_t b = 64; b < hd * es; b += 64)
            _mm_prefetch((const char *)src + pp * ld * es + b, _MM_HINT_T0);
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++)
        v[c] = PVR_ROW(F16, src, ld, pp, d0 + PVR_L * c);
}

/* Row pp into the register tile a: each query's probability times the
 * row's NC column vectors; CHECK: skip the queries that do not see pp. */
PVR_T PVR_INL void pvr_step(const int NQ, const int NC, const int F16, const int PF,
                            const int CHECK, const float *p, int64_t pld, const int64_t *nv,
                            const void *src, int64_t ld, int64_t hd, int64_t pp, int64_t d0,
                            PVR_V a[4][4])
{
    PVR_V v[4];
    pvr_row(NC, F16, PF, src, ld, hd, pp, d0, v);
#pragma GCC unroll 4
    for (int qi = 0; qi < NQ; qi++) {
        if (CHECK && pp >= nv[qi])
            continue;
        const PVR_V b = PVR_SET1(p[qi * pld + pp]);
#pragma GCC unroll 4
        for (int c = 0; c < NC; c++)
            a[qi][c] = PVR_FMA(v[c], b, a[qi][c]);
    }
}

PVR_T PVR_INL void pvr_tile(const int NQ, const int NC, const int F16, const int PF,
                            const float *p, int64_t pld, const int64_t *nv, const void *src,
                            int64_t ld, int64_t hd, int64_t d0, float *acc)
{
    int64_t nmax = 0, nmin = CPU_ATTN_KB;
    for (int qi = 0; qi < NQ; qi++) {
        nmax = nv[qi] > nmax ? nv[qi] : nmax;
        nmin = nv[qi] < nmin ? nv[qi] : nmin;
    }
    for (int64_t l = 0; l < PVR_L && l < nmax; l++) {
        float *al = acc + l * hd + d0;
        PVR_V a[4][4];
#pragma GCC unroll 4
        for (int qi = 0; qi < NQ; qi++)
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                a[qi][c] = PVR_LOAD(al + qi * PVR_L * hd + PVR_L * c);
        int64_t pp = l;
        /* positions every query sees, then those only some see */
        for (; pp < nmin; pp += PVR_L)
            pvr_step(NQ, NC, F16, PF, 0, p, pld, nv, src, ld, hd, pp, d0, a);
        for (; pp < nmax; pp += PVR_L)
            pvr_step(NQ, NC, F16, PF, 1, p, pld, nv, src, ld, hd, pp, d0, a);
#pragma GCC unroll 4
        for (int qi = 0; qi < NQ; qi++)
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                PVR_STORE(al + qi * PVR_L * hd + PVR_L * c, a[qi][c]);
    }
}

/* Queries 0 .. NQ-1 over every column: PVR_NC column vectors at a time,
 * then the last ones, then columns past the last vector one by one. */
PVR_T PVR_INL void pvr_queries(const int NQ, const int F16, const float *p, int64_t pld,
                               const int64_t *nv, const void *src, int64_t ld, int64_t hd,
                               float *acc, int first)
{
    const int64_t W = PVR_L * PVR_NC, hdl = hd - hd % PVR_L;
    int64_t d0 = 0;
    if (first && d0 + W <= hdl) {
        pvr_tile(NQ, PVR_NC, F16, 1, p, pld, nv, src, ld, hd, d0, acc);
        d0 += W;
    }
    for (; d0 + W <= hdl; d0 += W)
        pvr_tile(NQ, PVR_NC, F16, 0, p, pld, nv, src, ld, hd, d0, acc);
    const int pf = first && d0 == 0;
    switch ((hdl - d0) / PVR_L) {
    case 3: pvr_tile(NQ, 3, F16, pf, p, pld, nv, src, ld, hd, d0, acc); break;
    case 2: pvr_tile(NQ, 2, F16, pf, p, pld, nv, src, ld, hd, d0, acc); break;
    case 1: pvr_tile(NQ, 1, F16, pf, p, pld, nv, src, ld, hd, d0, acc); break;
    default: break;
    }
    for (int64_t d = hdl; d < hd; d++)
        for (int qi = 0; qi < NQ; qi++)
            for (int64_t pp = 0; pp < nv[qi]; pp++) {
                const float x = F16 ? quant_f16_to_f32(((const uint16_t *)src)[pp * ld + d])
                                    : ((const float *)src)[pp * ld + d];
                float *a = acc + (qi * PVR_L + pp % PVR_L) * hd + d;
                *a = __builtin_fmaf(x, p[qi * pld + pp], *a);
            }
}

PVR_T PVR_INL void pvr_f(const int F16, int64_t nq, int64_t hd, const float *p, int64_t pld,
                         const int64_t *nv, const void *src, int64_t ld, float *acc)
{
    int64_t i = 0;
    for (; i + 4 <= nq; i += 4)
        pvr_queries(4, F16, p + i * pld, pld, nv + i, src, ld, hd, acc + i * PVR_L * hd, i == 0);
    if (nq - i == 3)
        pvr_queries(3, F16, p + i * pld, pld, nv + i, src, ld, hd, acc + i * PVR_L * hd, i == 0);
    else if (nq - i == 2)
        pvr_queries(2, F16, p + i * pld, pld, nv + i, src, ld, hd, acc + i * PVR_L * hd, i == 0);
    else if (nq - i == 1)
        pvr_queries(1, F16, p + i * pld, pld, nv + i, src, ld, hd, acc + i * PVR_L * hd, i == 0);
}

PVR_T void PVR_PV_ROWS(int64_t nq, int64_t hd, const float *p, int64_t pld, const int64_t *nv,
                       const void *src, int64_t ld, int f16, float *acc)
{
    if (f16)
        pvr_f(1, nq, hd, p, pld, nv, src, ld, acc);
    else
        pvr_f(0, nq, hd, p, pld, nv, src, ld, acc);
}

/* o[d] = cpu_lane_sum's halving tree of acc[lane * hd + d] over the L
 * lanes (i and i+L/2, ..., then 0 and 1), L columns a vector. */
PVR_T void PVR_OUT(int64_t hd, const float *acc, int64_t ald, float *o)
{
    (void)ald;
    const int64_t hdl = hd - hd % PVR_L;
    for (int64_t d0 = 0; d0 < hdl; d0 += PVR_L) {
        PVR_V v[PVR_L];
#pragma GCC unroll 16
        for (int l = 0; l < PVR_L; l++)
            v[l] = PVR_LOAD(acc + l * hd + d0);
#pragma GCC unroll 4
        for (int h = PVR_L / 2; h >= 1; h /= 2)
#pragma GCC unroll 8
            for (int l = 0; l < h; l++)
                v[l] = PVR_ADD(v[l], v[l + h]);
        PVR_STORE(o + d0, v[0]);
    }
    for (int64_t d = hdl; d < hd; d++) {
        float l[16];
        for (int k = 0; k < PVR_L; k++)
            l[k] = acc[k * hd + d];
        o[d] = cpu_lane_sum(l, PVR_L);
    }
}
