/* deltanet_ref.h: cases of the gated delta rule for the tests of its
 * chunked forms (tests/test_deltanet_chunk.c on the CPU, and
 * tests/gpu/test_backend_cuda.c on a GPU): inputs drawn from a case name,
 * the true result (the token-by-token recurrence of MODEL.md §2.5 in
 * double precision), and the bound an f32 chunked form must meet.
 *
 * Bound. Against the true result, an f32 chunked form's error in a state
 * element or an output is taken to be at most
 *     B = 4 (dk + C) u (n_c + 1) M,   u = 2^-24, C = 64,
 * with M the largest |S| element the true recurrence passes through (the
 * initial state included) and n_c the chunks of the longest run. Why:
 * within a chunk every quantity is a sum of at most dk + C rounded
 * products of unit keys and queries, beta, decays <= 1, entries of
 * (I + A)^-1 (O(1) for these draws) and state entries, so each of the four
 * stages that touch the state (V' = U - W S, the outputs, the decayed
 * state, the k v'^T sum) adds at most about (dk + C) u M; an output
 * (S^T q / sqrt(dk), q a unit vector) carries no more than one state
 * column's error. A chunk's error reaches later chunks through the state,
 * and the delta rule's step S <- e^g (I - beta k k^T) S + ... does not
 * amplify it (unit k, 0 <= beta <= 1, g <= 0), so errors add over the
 * chunks: the factor n_c + 1. This is a first-order worst-case estimate,
 * not a proof; measured (tests/test_deltanet_chunk.c), the worst case is
 * about 1.5% of B. A wrong index, decay or mask gives errors of order M,
 * hundreds to thousands of times B at the shapes tested (seen by breaking
 * the emulated kernels on purpose). Each case prints its worst error / B. */
#ifndef Q36_DELTANET_REF_H
#define Q36_DELTANET_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define DN_MAX_SEQ 8
#define DN_CHUNK   64

enum dn_gates {
    DN_GATES_MIXED,       /* g in (-1, -0.05]: the decays of a trained model */
    DN_GATES_STRONG,      /* g in (-20, -2]: the state nearly forgotten each token */
    DN_GATES_WEAK,        /* g in (-0.02, 0]: nearly no decay */
};

typedef struct dn_case {
    int64_t Hk, Hv, dk, W, T, n_slots;
    int n_seq;
    int32_t runs[4 * DN_MAX_SEQ];   /* (slot, first row, rows, first position) */
    float *qkv, *g, *beta, *S0;     /* T x W, T x Hv, T x Hv, n_slots*Hv x dk*dk */
} dn_case;

/* Draws a case: n_seq runs of len[i] rows on distinct slots, q and k unit
 * vectors per key head (as after the L2 norm), v normal, beta in
 * (0.05, 1), g by `gates`, initial states normal times s0. */
static inline void dn_case_make(dn_case *c, const char *name, int64_t Hk, int64_t Hv, int64_t dk,
                                int n_seq, const int *len, int gates, float s0)
{
    t_rng r = t_rng_named(name);
    memset(c, 0, sizeof *c);
    c->Hk = Hk;
    c->Hv = Hv;
    c->dk = dk;
    c->W = (2 * Hk + Hv) * dk;
    c->n_seq = n_seq;
    /* slots i*3+1 mod n_slots: distinct when n_slots is not a multiple of 3
     * (a pass never holds two runs of one slot) */
    c->n_slots = n_seq + 2 + ((n_seq + 2) % 3 == 0);
    for (int i = 0; i < n_seq; i++) {
        c->runs[4 * i] = (int32_t)((i * 3 + 1) % c->n_slots);
        c->runs[4 * i + 1] = (int32_t)c->T;
        c->runs[4 * i + 2] = len[i];
        c->runs[4 * i + 3] = 7;
        c->T += len[i];
    }
    const int64_t T = c->T;
    c->qkv = t_randv(&r, T * c->W, 1);
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < 2 * Hk; h++) {
            float *p = c->qkv + t * c->W + h * dk;
            double s = 0;
            for (int64_t i = 0; i < dk; i++)
                s += (double)p[i] * p[i];
            for (int64_t i = 0; i < dk; i++)
                p[i] = (float)(p[i] / sqrt(s));
        }
    c->g = malloc(sizeof(float) * (size_t)(T * Hv + 1));
    c->beta = malloc(sizeof(float) * (size_t)(T * Hv + 1));
    for (int64_t i = 0; i < T * Hv; i++) {
        const float x = t_uniform(&r);
        c->g[i] = gates == DN_GATES_STRONG ? -2.0f - 18.0f * x
                : gates == DN_GATES_WEAK   ? -0.02f * x
                                           : -0.05f - 0.95f * x;
        c->beta[i] = 0.05f + 0.95f * t_uniform(&r);
    }
    c->S0 = t_randv(&r, c->n_slots * Hv * dk * dk, s0);
}

static inline void dn_case_free(dn_case *c)
{
    free(c->qkv);
    free(c->g);
    free(c->beta);
    free(c->S0);
}

/* The truth for the given runs (any rows of the case's arrays): out
 * (T x Hv*dk) for the runs' rows, S (n_slots*Hv x dk*dk) starting from S
 * as given (layout of backend.h: [j*dk + i] = S[i][j]); returns the
 * largest |S| element met, S's given values included. */
static inline double dn_truth(const dn_case *c, const int32_t *runs, int n_seq, double *out,
                              double *S)
{
    const int64_t dk = c->dk, W = c->W, Hv = c->Hv;
    double M = 0, *e = malloc(sizeof(double) * (size_t)dk);
    for (int s = 0; s < n_seq; s++)
        for (int64_t h = 0; h < Hv; h++) {
            double *St = S + ((int64_t)runs[4 * s] * Hv + h) * dk * dk;
            const int64_t kh = h % c->Hk;
            for (int64_t i = 0; i < dk * dk; i++)
                M = fmax(M, fabs(St[i]));
            for (int64_t t = runs[4 * s + 1]; t < runs[4 * s + 1] + runs[4 * s + 2]; t++) {
                const float *q = c->qkv + t * W + kh * dk, *k = c->qkv + t * W + (c->Hk + kh) * dk;
                const float *v = c->qkv + t * W + (2 * c->Hk + h) * dk;
                const double dec = exp((double)c->g[t * Hv + h]), bt = c->beta[t * Hv + h];
                for (int64_t i = 0; i < dk * dk; i++)
                    St[i] *= dec;
                for (int64_t j = 0; j < dk; j++) {
                    double p = 0;
                    for (int64_t i = 0; i < dk; i++)
                        p += St[j * dk + i] * k[i];
                    e[j] = bt * (v[j] - p);
                }
                for (int64_t j = 0; j < dk; j++)
                    for (int64_t i = 0; i < dk; i++) {
                        St[j * dk + i] += k[i] * e[j];
                        M = fmax(M, fabs(St[j * dk + i]));
                    }
                for (int64_t j = 0; j < dk; j++) {
                    double o = 0;
                    for (int64_t i = 0; i < dk; i++)
                        o += St[j * dk + i] * q[i];
                    out[t * Hv * dk + h * dk + j] = o / sqrt((double)dk);
                }
            }
        }
    free(e);
    return M;
}

/* B of the file's comment for runs whose longest has max_len rows. */
static inline double dn_bound(int64_t dk, int64_t max_len, double M)
{
    const int64_t n_c = (max_len + DN_CHUNK - 1) / DN_CHUNK;
    return 4.0 * (double)(dk + DN_CHUNK) * 0x1p-24 * (double)(n_c + 1) * M;
}

static inline int64_t dn_max_len(const int32_t *runs, int n_seq)
{
    int64_t m = 0;
    for (int s = 0; s < n_seq; s++)
        m = runs[4 * s + 2] > m ? runs[4 * s + 2] : m;
    return m;
}

/* The worst |got - truth| over n values, as a ratio to bound; NaN in got
 * counts as infinitely wrong. *at receives its index. */
static inline double dn_worst(const float *got, const double *truth, int64_t n, double bound,
                              int64_t *at)
{
    double w = 0;
    *at = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = isnan(got[i]) ? INFINITY : fabs((double)got[i] - truth[i]) / bound;
        if (d > w) {
            w = d;
            *at = i;
        }
    }
    return w;
}

#endif
