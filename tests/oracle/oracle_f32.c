/* oracle_f32.c: float32 answers that need no forward pass: `dequant` (one
 * GGUF tensor through ggml's own to_float) and the model-free helpers
 * `compare` and `argmax` over raw float32 files, so test scripts need no
 * Python.
 */
#include "oracle.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

/* Reads the tensor's bytes straight from the file (data section offset +
 * tensor offset, as the GGUF directory says) and converts row by row with
 * ggml_get_type_traits(type)->to_float; F32 rows are copied as they are.
 * --ggml-load takes the bytes from ggml's own loader instead
 * (gguf_init_from_file with no_alloc = false reads the whole data section
 * into a ggml context): a second path for the same bytes, so the self-test
 * can check the offset arithmetic above. */
int orc_cmd_dequant(const orc_opts *o)
{
    if (!o->tensor || !o->out) return orc_usage(o->cmd, "--tensor NAME and -o OUT.f32 are required");
    struct ggml_context *gctx = NULL;
    struct gguf_init_params gp = { .no_alloc = !o->ggml_load, .ctx = o->ggml_load ? &gctx : NULL };
    struct gguf_context *g = gguf_init_from_file(o->model, gp);
    if (!g) return orc_fail("%s: ggml's gguf reader refuses it: %s", o->model, orc_last_log());
    int rc = ORC_ERROR;
    FILE *f = NULL, *out = NULL;
    void *raw = NULL;
    float *row = NULL;
    const char *mem = NULL;
    int64_t id = gguf_find_tensor(g, o->tensor);
    if (id < 0) { orc_fail("%s: no tensor '%s'", o->model, o->tensor); goto done; }
    enum ggml_type type = gguf_get_tensor_type(g, id);
    const int64_t *ne = gguf_get_tensor_ne(g, id);
    const struct ggml_type_traits *tr = ggml_get_type_traits(type);
    if (type != GGML_TYPE_F32 && !tr->to_float) {
        orc_fail("%s: '%s' has type %s, which ggml cannot convert to float", o->model, o->tensor,
                 ggml_type_name(type));
        goto done;
    }
    size_t row_bytes = ggml_row_size(type, ne[0]);
    int64_t nrows = ne[1] * ne[2] * ne[3];
    size_t size = gguf_get_tensor_size(g, id);
    if (row_bytes * (size_t)nrows != size) {
        orc_fail("%s: '%s' is %zu bytes; %" PRId64 " rows of %zu expected", o->model, o->tensor, size,
                 nrows, row_bytes);
        goto done;
    }
    long long at = (long long)(gguf_get_data_offset(g) + gguf_get_tensor_offset(g, id));
    if (o->ggml_load) {
        struct ggml_tensor *t = ggml_get_tensor(gctx, o->tensor);
        if (!t || !t->data) { orc_fail("%s: ggml's loader has no data for '%s'", o->model, o->tensor); goto done; }
        mem = t->data;
    } else if (!(f = fopen(o->model, "rb"))) {
        orc_fail("%s: cannot open: %s", o->model, strerror(errno));
        goto done;
    }
    out = fopen(o->out, "wb");
    raw = malloc(row_bytes);
    row = malloc((size_t)ne[0] * sizeof *row);
    if (!out) { orc_fail("%s: cannot create: %s", o->out, strerror(errno)); goto done; }
    if (!raw || !row) { orc_fail("out of memory for a row of %" PRId64, ne[0]); goto done; }
    if (f && fseeko(f, (off_t)at, SEEK_SET)) { orc_fail("%s: cannot seek to byte %lld", o->model, at); goto done; }
    for (int64_t r = 0; r < nrows; r++) {
        if (mem)
            memcpy(raw, mem + (size_t)r * row_bytes, row_bytes);
        else if (fread(raw, 1, row_bytes, f) != row_bytes) {
            orc_fail("%s: '%s' truncated: row %" PRId64 " at byte %lld", o->model, o->tensor, r,
                     at + (long long)(row_bytes * (size_t)r));
            goto done;
        }
        if (type == GGML_TYPE_F32) memcpy(row, raw, row_bytes);
        else tr->to_float(raw, row, ne[0]);
        if (fwrite(row, sizeof *row, (size_t)ne[0], out) != (size_t)ne[0]) {
            orc_fail("%s: write error", o->out);
            goto done;
        }
    }
    if (fclose(out)) { out = NULL; orc_fail("%s: write error", o->out); goto done; }
    out = NULL;
    printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %s\n", ne[0], ne[1], ne[2], ne[3],
           ggml_type_name(type));
    rc = ORC_OK;
done:
    if (f) fclose(f);
    if (out) fclose(out);
    free(raw);
    free(row);
    gguf_free(g);
    if (gctx) ggml_free(gctx);
    return rc;
}

/* Loads a float32 file as rows of n; returns the row count or -1. */
static long load_rows(const char *path, int n, float **out)
{
    size_t len;
    char *buf = orc_read_file(path, &len);
    if (!buf) return -1;
    size_t row = (size_t)n * sizeof(float);
    if (len == 0 || len % row) {
        free(buf);
        orc_fail("%s: %zu bytes is not a whole number of rows of %d floats", path, len, n);
        return -1;
    }
    *out = (float *)(void *)buf;
    return (long)(len / row);
}

/* Prints: rows R max_abs X worst_rel_l2 Y worst_row W argmax_mismatch K
 * (relative L2 of a row = |a-b| / |b|, B being the reference). Non-finite
 * values count as an infinite difference. */
int orc_cmd_compare(const orc_opts *o)
{
    if (!o->a_file || !o->b_file || !o->n_set || o->n < 1)
        return orc_usage(o->cmd, "wants A.f32 B.f32 -n ROWLEN");
    float *a = NULL, *b = NULL;
    long ra = load_rows(o->a_file, o->n, &a);
    long rb = ra < 0 ? -1 : load_rows(o->b_file, o->n, &b);
    int rc = ORC_ERROR;
    if (ra < 0 || rb < 0) goto done;
    if (ra != rb) { orc_fail("%s has %ld rows, %s has %ld", o->a_file, ra, o->b_file, rb); goto done; }
    double max_abs = 0, worst = 0;
    long worst_row = 0, mism = 0;
    for (long r = 0; r < ra; r++) {
        const float *x = a + (size_t)r * (size_t)o->n, *y = b + (size_t)r * (size_t)o->n;
        double d2 = 0, y2 = 0;
        for (int i = 0; i < o->n; i++) {
            double d = fabs((double)x[i] - (double)y[i]);
            if (!isfinite(x[i]) || !isfinite(y[i])) d = INFINITY;
            if (d > max_abs) max_abs = d;
            d2 += d * d;
            y2 += (double)y[i] * (double)y[i];
        }
        double rel = y2 > 0 ? sqrt(d2 / y2) : sqrt(d2);
        if (rel > worst || r == 0) { worst = rel; worst_row = r; }
        if (orc_argmax(x, o->n) != orc_argmax(y, o->n)) mism++;
    }
    printf("rows %ld max_abs %.9g worst_rel_l2 %.9g worst_row %ld argmax_mismatch %ld\n", ra, max_abs,
           worst, worst_row, mism);
    rc = ORC_OK;
done:
    free(a);
    free(b);
    return rc;
}

/* One line of per-row argmax ids; with --margins a second line with each
 * row's top-1 minus top-2 value, so a test can tell a near-tie (where two
 * engines may rightly pick different ids) from a real mismatch. */
int orc_cmd_argmax(const orc_opts *o)
{
    if (!o->a_file || o->b_file || !o->n_set || o->n < 1)
        return orc_usage(o->cmd, "wants A.f32 -n ROWLEN");
    float *a = NULL;
    long r = load_rows(o->a_file, o->n, &a);
    if (r < 0) return ORC_ERROR;
    for (long i = 0; i < r; i++)
        printf(i ? " %d" : "%d", orc_argmax(a + (size_t)i * (size_t)o->n, o->n));
    printf("\n");
    if (o->margins) {
        for (long i = 0; i < r; i++) {
            const float *x = a + (size_t)i * (size_t)o->n;
            int b = orc_argmax(x, o->n);
            double second = -INFINITY;
            for (int k = 0; k < o->n; k++)
                if (k != b && x[k] > second) second = x[k];
            printf(i ? " %.9g" : "%.9g", o->n > 1 ? (double)x[b] - second : INFINITY);
        }
        printf("\n");
    }
    free(a);
    return ORC_OK;
}
