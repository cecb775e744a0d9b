/* early-study.c: how many 16-row groups (and, for 4 consecutive positions, how many
 * for any of them) a nibble level would still need after its first k of 8 blocks,
 * the rest bounded by Cauchy-Schwarz (a bound over the rest, or one a block);
 * thresholds: the true best (a right draft's) or the level's own (LEVELTH=1) */
#include "rows.h"

int main(int argc, char **argv)
{
    const char *mp = argv[1], *idp = argv[2];
    int stride = atoi(argv[3]);
    head_rows hr;
    if (head_rows_load(mp, idp, 8192, &hr))
        return 1;
    const int n = hr.n, D = hr.D, V = hr.V, nbk = D / 32;
    const uint8_t *W = hr.W;
    const size_t rb = (size_t)nbk * 34;
    /* per row, per block: ||w_b||^2 */
    double *wb2 = malloc(sizeof(double) * (size_t)V * nbk);
    for (int v = 0; v < V; v++)
        for (int b = 0; b < nbk; b++) {
            uint16_t s16; memcpy(&s16, W + (size_t)v * rb + b * 34, 2);
            const double dw = quant_f16_to_f32(s16);
            const int8_t *c = (const int8_t *)(W + (size_t)v * rb + b * 34 + 2);
            double s = 0;
            for (int i = 0; i < 32; i++) s += (double)c[i] * c[i];
            wb2[(size_t)v * nbk + b] = dw * dw * s;
        }
    static unsigned char cont[8192][9480 / 1 + 16][8];
    int npos = 0;
    double *L = malloc(sizeof(double) * V), *Ap = malloc(sizeof(double) * V * nbk), *Ep = malloc(sizeof(double) * V * nbk);
    const int NG = (V + 15) / 16;
    double keep_glob[16] = { 0 }, keep_blk[16] = { 0 }, keep_full = 0, rows = 0;
    for (int t = 0; t < n; t += (npos % 4 == 3 ? stride : 1), rows++, npos++) {
        float dx[128];
        int8_t xq[4096];
        double xb2[128];
        for (int b = 0; b < nbk; b++) {
            const uint8_t *blk = hr.act + (size_t)t * rb + (size_t)b * 34;
            dx[b] = quant_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
            double s = 0;
            for (int i = 0; i < 32; i++) {
                xq[b * 32 + i] = (int8_t)blk[2 + i];
                s += (double)xq[b * 32 + i] * xq[b * 32 + i];
            }
            xb2[b] = (double)dx[b] * dx[b] * s;
        }
        double best = -1e30;
        for (int v = 0; v < V; v++) {
            const uint8_t *row = W + (size_t)v * rb;
            double l = 0, a = 0, eb = 0;
            for (int b = 0; b < nbk; b++) {
                uint16_t s16; memcpy(&s16, row + b * 34, 2);
                const float dw = quant_f16_to_f32(s16);
                const int8_t *c = (const int8_t *)(row + b * 34 + 2);
                const int8_t *q = xq + b * 32;
                int s8 = 0, sx = 0, sa = 0, sh = 0;
                for (int i = 0; i < 32; i++) {
                    s8 += c[i] * q[i]; sx += q[i]; sa += abs(q[i]);
                    sh += (c[i] >> 4) * q[i];
                }
                const double s = (double)dw * dx[b];
                l += s * s8;
                a += s * (16.0 * sh + 8 * (double)sx - 0.5 * sx);
                eb += fabs(s) * 7.5 * sa;
                Ap[(size_t)v * nbk + b] = a;
                Ep[(size_t)v * nbk + b] = eb;
            }
            L[v] = l;
            if (l > best) best = l;
        }
        const int last = (npos % 4) == 3;
        if (getenv("LEVELTH") || last) { best = -1e30; for (int v = 0; v < V; v++) best = fmax(best, Ap[(size_t)v*nbk+nbk-1] - Ep[(size_t)v*nbk+nbk-1]); }
        /* threshold: the true max (a right draft's exact logit) */
        for (int gi = 0; gi < NG; gi++) {
            int full = 0;
            int gk[16] = { 0 }, bk[16] = { 0 };
            for (int v = gi * 16; v < V && v < gi * 16 + 16; v++) {
                if (Ap[(size_t)v * nbk + nbk - 1] + Ep[(size_t)v * nbk + nbk - 1] >= best) full = 1;
                for (int sp = 0; sp < nbk; sp++) {
                    double wr = 0, xr = 0, cb = 0;
                    for (int b = sp; b < nbk; b++) { wr += wb2[(size_t)v * nbk + b]; xr += xb2[b]; cb += sqrt(wb2[(size_t)v*nbk+b] * xb2[b]); }
                    const double base = sp ? Ap[(size_t)v * nbk + sp - 1] + Ep[(size_t)v * nbk + sp - 1] : 0;
                    if (base + sqrt(wr * xr) >= best) gk[sp] = 1;
                    if (base + cb >= best) bk[sp] = 1;
                }
            }
            for (int sp = 0; sp < nbk; sp++) cont[npos][gi][sp] = gk[sp]; cont[npos][gi][nbk] = full;
            keep_full += full;
            for (int sp = 0; sp < nbk; sp++) { keep_glob[sp] += gk[sp]; keep_blk[sp] += bk[sp]; }
        }
    }
    /* union over each 4 consecutive positions */
    double u[9] = { 0 }; int nq = 0;
    for (int p = 0; p + 3 < npos; p += 4, nq++)
        for (int gi = 0; gi < NG; gi++)
            for (int sp = 0; sp < nbk; sp++) {
                int any = 0;
                for (int k = 0; k < 4; k++) any |= cont[p + k][gi][sp];
                u[sp] += any;
            }
    for (int sp = 0; sp < nbk; sp++) printf("verify of 4: after %d blocks, groups going on for any token %.2f%%\n", sp, 100 * u[sp] / nq / NG);
    printf("groups %d, positions %.0f; kept after all blocks %.2f%%\n", NG, rows, 100 * keep_full / rows / NG);
    for (int sp = 0; sp < nbk; sp++)
        printf("split after %d blocks: groups going on (global CS) %.2f%%, (per-block CS) %.2f%%\n", sp,
               100 * keep_glob[sp] / rows / NG, 100 * keep_blk[sp] / rows / NG);
    return 0;
}
