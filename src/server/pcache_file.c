/* pcache_file.c: the prefix cache to and from a file (`--cache-dir`), so
 * that a restarted server reuses what it had evaluated (pcache.h).
 *
 * The file, in the host's byte order:
 *   header   "Q36PCv1\n", u64 fingerprint, u64 state bytes, u64 K/V bytes
 *            per token, u32 vocabulary size, u32 records
 *   record   u32 position, u32 kv (0 or 1), i32 tokens[position],
 *            checkpoint bytes (q36_ckpt_bytes(position if kv, else 0)),
 *            u64 FNV-1a hash of the record's bytes before it
 * Full checkpoints come first, so that a smaller budget at reading keeps
 * what the state ones need. The fingerprint covers the model file (its size
 * and 64 samples of 4 KiB spread over it), the K/V types, the exact or fast
 * mode and the backend: a checkpoint restores only on the engine that made
 * such bits. Records are bounded by the header's sizes, the engine's
 * context and vocabulary; each is read and hashed whole before it is used.
 */
#include "pcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = { 'Q', '3', '6', 'P', 'C', 'v', '1', '\n' };

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

uint64_t pcache_fingerprint(const char *model_path, const q36_engine_opts *o, q36_err *err)
{
    FILE *f = fopen(model_path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st)) {
        if (f)
            fclose(f);
        q36_err_set(err, Q36_E_IO, "%s: cannot read the model for the cache's fingerprint: %s", model_path,
                    strerror(errno));
        return 0;
    }
    uint64_t h = fnv(FNV0, &st.st_size, sizeof st.st_size);
    unsigned char buf[4096];
    for (int i = 0; i < 64; i++) {
        off_t at = (st.st_size / 64) * i;
        size_t n = 0;
        if (!fseeko(f, at, SEEK_SET))
            n = fread(buf, 1, sizeof buf, f);
        h = fnv(h, buf, n);
    }
    fclose(f);
    int v[4] = { o->type_k, o->type_v, q36_opts_fast(o), 0 };
    h = fnv(h, v, sizeof v);
    const char *be = o->backend && o->backend[0] ? o->backend : "cpu";
    return fnv(h, be, strlen(be));
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct wr {
    q36_engine *e;
    FILE       *f;
    void       *buf;
    uint64_t    cap;
    uint32_t    n;
    q36_err    *err;
    const char *path;
} wr;

static int put(wr *w, const void *p, size_t n, uint64_t *h)
{
    *h = fnv(*h, p, n);
    if (fwrite(p, 1, n, w->f) != n)
        return q36_err_set(w->err, Q36_E_IO, "%s: write failed: %s", w->path, strerror(errno));
    return 0;
}

static int write_one(void *ctx, const int32_t *ids, int pos, bool kv, const q36_ckpt *ck)
{
    wr *w = ctx;
    const uint64_t nb = q36_ckpt_bytes(w->e, kv ? pos : 0);
    if (nb > w->cap) {
        void *p = realloc(w->buf, nb);
        if (!p)
            return q36_err_set(w->err, Q36_E_NOMEM, "%s: out of memory for a checkpoint of %llu bytes", w->path,
                               (unsigned long long)nb);
        w->buf = p;
        w->cap = nb;
    }
    int rc = q36_ckpt_get(w->e, ck, w->buf, w->err);
    if (rc)
        return rc;
    uint32_t hd[2] = { (uint32_t)pos, kv };
    uint64_t h = FNV0;
    if ((rc = put(w, hd, sizeof hd, &h)) || (rc = put(w, ids, (size_t)pos * sizeof *ids, &h)) ||
        (rc = put(w, w->buf, nb, &h)))
        return rc;
    if (fwrite(&h, sizeof h, 1, w->f) != 1)
        return q36_err_set(w->err, Q36_E_IO, "%s: write failed: %s", w->path, strerror(errno));
    w->n++;
    return 0;
}

static int count_one(void *ctx, const int32_t *ids, int pos, bool kv, const q36_ckpt *ck)
{
    (void)ids, (void)pos, (void)kv, (void)ck;
    (*(uint32_t *)ctx)++;
    return 0;
}

int pcache_write(const pcache *c, const char *path, uint64_t fingerprint, q36_err *err)
{
    q36_engine *e = pcache_engine(c);
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return q36_err_set(err, Q36_E_ARG, "cache file path too long: %s", path);
    uint32_t n = 0;
    int rc = pcache_each(c, count_one, &n, err);
    if (rc)
        return rc;
    wr w = { .e = e, .f = fopen(tmp, "wb"), .err = err, .path = tmp };
    if (!w.f)
        return q36_err_set(err, Q36_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
    const uint64_t state = q36_ckpt_bytes(e, 0), row = q36_ckpt_bytes(e, 1) - state;
    const uint32_t nv = (uint32_t)q36_engine_n_vocab(e);
    uint64_t h = 0;
    if (!(rc = put(&w, MAGIC, sizeof MAGIC, &h)) && !(rc = put(&w, &fingerprint, 8, &h)) &&
        !(rc = put(&w, &state, 8, &h)) && !(rc = put(&w, &row, 8, &h)) && !(rc = put(&w, &nv, 4, &h)) &&
        !(rc = put(&w, &n, 4, &h)))
        rc = pcache_each(c, write_one, &w, err);
    free(w.buf);
    if (fclose(w.f) && !rc)
        rc = q36_err_set(err, Q36_E_IO, "%s: write failed: %s", tmp, strerror(errno));
    if (!rc && w.n != n)
        rc = q36_err_set(err, Q36_E_IO, "%s: wrote %u of %u checkpoints", tmp, w.n, n);
    if (!rc && rename(tmp, path))
        rc = q36_err_set(err, Q36_E_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (rc)
        remove(tmp);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

static int get(FILE *f, void *p, size_t n, uint64_t *h)
{
    if (fread(p, 1, n, f) != n)
        return -1;
    *h = fnv(*h, p, n);
    return 0;
}

int pcache_read(pcache *c, const char *path, uint64_t fingerprint, q36_err *err)
{
    q36_engine *e = pcache_engine(c);
    FILE *f = fopen(path, "rb");
    if (!f)
        return q36_err_set(err, Q36_E_IO, "%s: cannot open: %s", path, strerror(errno));
    char magic[8];
    uint64_t fp, state, row, h = 0;
    uint32_t nv, n;
    const uint64_t my_state = q36_ckpt_bytes(e, 0), my_row = q36_ckpt_bytes(e, 1) - my_state;
    const uint32_t my_nv = (uint32_t)q36_engine_n_vocab(e);
    const int n_ctx = q36_engine_n_ctx(e);
    int rc = 0, taken = 0;
    int32_t *ids = NULL;
    void *buf = NULL;
    uint64_t cap = 0;
    if (get(f, magic, 8, &h) || get(f, &fp, 8, &h) || get(f, &state, 8, &h) || get(f, &row, 8, &h) ||
        get(f, &nv, 4, &h) || get(f, &n, 4, &h) || memcmp(magic, MAGIC, 8)) {
        rc = q36_err_set(err, Q36_E_FORMAT, "%s: not a q36 prefix cache file (expected a header starting "
                         "\"Q36PCv1\")", path);
        goto done;
    }
    if (fp != fingerprint || state != my_state || row != my_row || nv != my_nv) {
        rc = q36_err_set(err, Q36_E_FORMAT, "%s: written for another model or engine options (fingerprint "
                         "%016llx, state %llu B, K/V %llu B/token, vocabulary %u; this server: %016llx, "
                         "%llu B, %llu B/token, %u)", path, (unsigned long long)fp, (unsigned long long)state,
                         (unsigned long long)row, nv, (unsigned long long)fingerprint,
                         (unsigned long long)my_state, (unsigned long long)my_row, my_nv);
        goto done;
    }
    if (!(ids = malloc((size_t)n_ctx * sizeof *ids))) {
        rc = q36_err_set(err, Q36_E_NOMEM, "%s: out of memory for a record", path);
        goto done;
    }
    for (uint32_t r = 0; r < n; r++) {
        uint32_t hd[2];
        uint64_t want;
        h = FNV0;
        if (get(f, hd, sizeof hd, &h)) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: truncated in record %u of %u", path, r, n);
            break;
        }
        if (hd[0] < 1 || hd[0] > (uint32_t)n_ctx || hd[1] > 1) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: record %u: position %u, kv %u (expected a position in "
                             "[1, %d], the context, and kv 0 or 1)", path, r, hd[0], hd[1], n_ctx);
            break;
        }
        const int pos = (int)hd[0];
        const bool kv = hd[1];
        const uint64_t nb = q36_ckpt_bytes(e, kv ? pos : 0);
        if (nb > cap) {
            void *p = realloc(buf, nb);
            if (!p) {
                rc = q36_err_set(err, Q36_E_NOMEM, "%s: out of memory for record %u (%llu bytes)", path, r,
                                 (unsigned long long)nb);
                break;
            }
            buf = p;
            cap = nb;
        }
        if (get(f, ids, (size_t)pos * sizeof *ids, &h) || get(f, buf, nb, &h) || fread(&want, 8, 1, f) != 1) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: truncated in record %u of %u", path, r, n);
            break;
        }
        if (want != h) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: record %u of %u is corrupt (its hash differs)", path, r, n);
            break;
        }
        int bad = -1;
        for (int i = 0; i < pos && bad < 0; i++)
            if (ids[i] < 0 || (uint32_t)ids[i] >= my_nv)
                bad = i;
        if (bad >= 0) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: record %u: token %d at %d is outside the vocabulary of %u",
                             path, r, ids[bad], bad, my_nv);
            break;
        }
        q36_ckpt *ck = NULL;
        if ((rc = q36_ckpt_new(e, kv ? pos : 0, &ck, err)) || (rc = q36_ckpt_put(e, ck, pos, buf, err))) {
            q36_ckpt_free(ck);
            break;
        }
        int t = pcache_attach(c, ids, pos, kv, ck, err);
        if (t <= 0)
            q36_ckpt_free(ck);
        if (t < 0) {
            rc = t;
            break;
        }
        taken += t;
    }
done:
    free(ids);
    free(buf);
    fclose(f);
    return rc ? rc : taken;
}
