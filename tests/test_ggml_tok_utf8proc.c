/* test_ggml_tok_utf8proc.c: the utf8proc alternative to the PCRE2
 * pre-tokenizer (bench/tokenizer/pretok_utf8proc.c), measured against
 * llama.cpp's Unicode tables and against q36's split. The library does not
 * use utf8proc; this test records why the choice holds.
 *
 * 1. Classes, out of the box: utf8proc_category() mapped to letter (L*),
 *    number (N*), mark (M*) and whitespace (White_Space, which utf8proc does
 *    not expose: Zs, Zl, Zp plus the Cc code points U+0009..U+000D and
 *    U+0085, written out) against llama.cpp's tables, read through libllama's
 *    exported unicode_cpt_flags_from_cpt as in test_ggml_tok_unicode.c, over
 *    every code point. Prints the counts and the first code points of each
 *    kind of difference, and asserts the counts utf8proc 2.8.0 (Unicode
 *    15.0) gives: another utf8proc changes them and fails here.
 * 2. The same with tok_pretok.c's Unicode 15.x ranges applied where utf8proc
 *    says Cn: no difference.
 * 3. Split: the utf8proc-driven matcher's pieces equal tok_pretok_split's
 *    (PCRE2) for "qwen35" and "qwen2" on every tests/corpus/ file, on
 *    tt_gen_mixed's 1 MB text, on all those files repeated to 1 MB (the
 *    bench's corpus text leaves three of them out), on the probe
 *    "aCa .C. xCCx\n" for every code point C, and on random strings over
 *    an alphabet of the patterns' edge cases (quotes, CR/LF, spaces, marks,
 *    digits, invalid bytes).
 */
#include "llama.h"
#include "ggml-backend.h"
#include "tokenizer/tok.h"
#include "tokenizer/tok_internal.h"   /* tok_pretok_split */
#include "test.h"
#include "test_tok_util.h"

#include "../bench/tokenizer/pretok_utf8proc.c"

#include <stdlib.h>

/* llama.cpp's unicode_cpt_flags_from_cpt(uint32_t) (src/unicode.h). */
extern uint16_t _Z26unicode_cpt_flags_from_cptj(uint32_t cpt);
enum { LL_NUMBER = 0x2, LL_LETTER = 0x4, LL_MARK = 0x10, LL_WS = 0x100 };

static int llama_class(uint32_t cp)
{
    uint16_t f = _Z26unicode_cpt_flags_from_cptj(cp);
    return ((f & LL_LETTER) ? U8P_L : 0) | ((f & LL_NUMBER) ? U8P_N : 0) |
           ((f & LL_MARK) ? U8P_M : 0) | ((f & LL_WS) ? U8P_WS : 0);
}

/* What utf8proc 2.8.0 gives, out of the box, measured by this test:
 * [class][0] llama.cpp has it and utf8proc not, [class][1] the reverse. */
static const long want_unpatched[4][2] = {
    { 622, 0 },   /* letter: the CJK Extension I block, U+2EBF0..U+2EE5D (Unicode 15.1) */
    { 0, 0 },     /* number */
    { 0, 0 },     /* mark */
    { 0, 0 },     /* whitespace */
};

static void check_classes(void)
{
    static const char *const names[4] = { "letter", "number", "mark", "whitespace" };
    long diff[2][4][2] = { { { 0 } } };
    uint32_t first[4][2][6];
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        int want = llama_class(cp);
        for (int patched = 0; patched < 2; patched++) {
            int got = u8p_class(cp, patched);
            for (int c = 0; c < 4; c++) {
                int w = (want >> c) & 1, g = (got >> c) & 1;
                if (w == g)
                    continue;
                long k = diff[patched][c][g]++;
                if (!patched && k < 6)
                    first[c][g][k] = cp;
            }
        }
    }
    printf("# utf8proc %s (Unicode %s) out of the box against llama.cpp's tables:\n",
           utf8proc_version(), utf8proc_unicode_version());
    bool same = true;
    for (int c = 0; c < 4; c++) {
        for (int g = 0; g < 2; g++) {
            printf("#   %-10s %s: %ld", names[c], g ? "utf8proc only" : "llama.cpp only", diff[0][c][g]);
            for (long k = 0; k < diff[0][c][g] && k < 6; k++)
                printf(" U+%04X", first[c][g][k]);
            printf("%s\n", diff[0][c][g] > 6 ? " ..." : "");
            same = same && diff[0][c][g] == want_unpatched[c][g];
        }
    }
    t_check("tok.utf8proc.unpatched_class_counts", same,
            "the counts above are not those of utf8proc 2.8.0 (Unicode 15.0): letter %ld/%ld, "
            "number %ld/%ld, mark %ld/%ld, whitespace %ld/%ld",
            diff[0][0][0], diff[0][0][1], diff[0][1][0], diff[0][1][1], diff[0][2][0], diff[0][2][1],
            diff[0][3][0], diff[0][3][1]);
    long tot = 0;
    for (int c = 0; c < 4; c++)
        tot += diff[1][c][0] + diff[1][c][1];
    t_check("tok.utf8proc.patched_classes_all_codepoints", tot == 0,
            "%ld class memberships differ with tok_pretok.c's Unicode 15.x ranges applied", tot);
}

/* ---- split comparison ----------------------------------------------------- */

typedef struct {
    uint8_t *bytes;
    size_t  *lens;
    size_t   nb, np, cap_b, cap_p;
} pieces;

static int collect(void *user, const uint8_t *p, size_t n)
{
    pieces *c = user;
    if (c->nb + n > c->cap_b) {
        c->cap_b = (c->nb + n) * 2 + 64;
        c->bytes = realloc(c->bytes, c->cap_b);
    }
    if (c->np + 1 > c->cap_p) {
        c->cap_p = c->np * 2 + 64;
        c->lens = realloc(c->lens, c->cap_p * sizeof *c->lens);
    }
    memcpy(c->bytes + c->nb, p, n);
    c->nb += n;
    c->lens[c->np++] = n;
    return 0;
}

typedef struct {
    tok_pretok    *rx;
    tok_split_ctx *ctx;
    u8p_split     *hand;
    pieces         a, b;
} splitters;

/* 0 when both split text the same; else prints where they part, once per case. */
static int compare(splitters *s, const char *what, const char *text, size_t n, char *why, size_t whylen)
{
    s->a.nb = s->a.np = s->b.nb = s->b.np = 0;
    q36_err err = { 0 };
    if (tok_pretok_split(s->rx, s->ctx, (const uint8_t *)text, n, collect, &s->a, &err)) {
        snprintf(why, whylen, "%.100s: PCRE2 split failed: %.200s", what, err.msg);
        return -1;
    }
    if (u8p_split_run(s->hand, (const uint8_t *)text, n, collect, &s->b)) {
        snprintf(why, whylen, "%.100s: utf8proc split failed", what);
        return -1;
    }
    if (s->a.np == s->b.np && s->a.nb == s->b.nb && !memcmp(s->a.bytes, s->b.bytes, s->a.nb) &&
        !memcmp(s->a.lens, s->b.lens, s->a.np * sizeof *s->a.lens))
        return 0;
    size_t k = 0, off = 0;
    while (k < s->a.np && k < s->b.np && s->a.lens[k] == s->b.lens[k])
        off += s->a.lens[k++];
    snprintf(why, whylen, "%.100s: %zu pieces (PCRE2) vs %zu (utf8proc); first difference at piece %zu, "
             "byte %zu: lengths %zu vs %zu", what, s->a.np, s->b.np, k, off,
             k < s->a.np ? s->a.lens[k] : 0, k < s->b.np ? s->b.lens[k] : 0);
    return -1;
}

static char *corpus_1mb(size_t *len, char *names, size_t cap)
{
    /* every regular file of tests/corpus/, sorted by name, repeated to 1 MB
     * (the file list goes to names, for the per-file cases) */
    struct dirent **ent;
    int m = scandir("tests/corpus", &ent, NULL, alphasort);
    size_t nn = 0, bcap = (1u << 20) + (1u << 17), n = 0;
    char *buf = malloc(bcap);
    names[0] = 0;
    for (int i = 0; i < m; i++) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "tests/corpus/%s", ent[i]->d_name);
        if (ent[i]->d_name[0] != '.' && !stat(path, &st) && S_ISREG(st.st_mode) &&
            nn + strlen(ent[i]->d_name) + 2 < cap)
            nn += (size_t)snprintf(names + nn, cap - nn, "%s\n", ent[i]->d_name);
        free(ent[i]);
    }
    free(ent);
    while (nn && n < (1u << 20)) {
        for (char *p = names; *p && n < (1u << 20);) {
            char *e = strchr(p, '\n'), path[512];
            snprintf(path, sizeof path, "tests/corpus/%.*s", (int)(e - p), p);
            size_t k;
            char *t = tt_read_file(path, &k);
            if (t) {
                if (n + k > bcap) k = bcap - n;
                memcpy(buf + n, t, k);
                n += k;
                free(t);
            }
            p = e + 1;
        }
    }
    *len = n;
    return buf;
}

static size_t enc(uint32_t c, char *o)
{
    return tok_utf8_encode(c, (uint8_t *)o);
}

static void check_split(const char *pre, bool qwen35)
{
    char cname[128], why[512];
    splitters s = { 0 };
    q36_err err = { 0 };
    snprintf(cname, sizeof cname, "tok.utf8proc.%s.setup", pre);
    if (tok_pretok_new(qwen35 ? TOK_PRE_QWEN35 : TOK_PRE_QWEN2, &s.rx, &err) ||
        !(s.ctx = tok_split_ctx_new(s.rx)) || !(s.hand = u8p_split_new(qwen35))) {
        t_fail(cname, "cannot make the splitters: %s", err.msg);
        goto out;
    }

    /* every corpus file, then the bench's two 1 MB texts */
    char names[4096];
    size_t clen, mlen;
    char *corpus = corpus_1mb(&clen, names, sizeof names);
    int files = 0, bad = 0;
    why[0] = 0;
    for (char *p = names; *p;) {
        char *e = strchr(p, '\n'), path[512];
        snprintf(path, sizeof path, "tests/corpus/%.*s", (int)(e - p), p);
        size_t k;
        char *t = tt_read_file(path, &k);
        if (!t) {
            snprintf(why, sizeof why, "cannot read %.200s", path);
            bad++;
        } else if (compare(&s, path, t, k, why, sizeof why)) {
            bad++;
        }
        files++;
        free(t);
        p = e + 1;
    }
    snprintf(cname, sizeof cname, "tok.utf8proc.%s.split_corpus_files", pre);
    t_check(cname, files >= 20 && !bad, "%d of %d files differ (%s)", bad, files, why);

    char *mixed = tt_gen_mixed(1u << 20, &mlen);
    snprintf(cname, sizeof cname, "tok.utf8proc.%s.split_1mb_mixed", pre);
    t_check(cname, !compare(&s, "mixed", mixed, mlen, why, sizeof why), "%s", why);
    snprintf(cname, sizeof cname, "tok.utf8proc.%s.split_1mb_corpus", pre);
    t_check(cname, clen >= (1u << 20) && !compare(&s, "corpus", corpus, clen, why, sizeof why), "%s", why);
    free(mixed);
    free(corpus);

    /* every code point in the probe contexts of test_ggml_tok_unicode.c */
    char *buf = malloc(4096 * 40);
    bad = 0;
    for (uint32_t base = 0; base < 0x110000 && !bad; base += 4096) {
        size_t n = 0;
        for (uint32_t cp = base; cp < base + 4096; cp++) {
            char u[4];
            size_t k = enc(cp, u);
            buf[n++] = 'a'; memcpy(buf + n, u, k); n += k; buf[n++] = 'a';
            buf[n++] = ' '; buf[n++] = '.'; memcpy(buf + n, u, k); n += k; buf[n++] = '.';
            buf[n++] = ' '; buf[n++] = 'x'; memcpy(buf + n, u, k); n += k;
            memcpy(buf + n, u, k); n += k; buf[n++] = 'x'; buf[n++] = '\n';
        }
        char what[64];
        snprintf(what, sizeof what, "block U+%04X", base);
        bad = compare(&s, what, buf, n, why, sizeof why) != 0;
    }
    free(buf);
    snprintf(cname, sizeof cname, "tok.utf8proc.%s.split_all_codepoints", pre);
    t_check(cname, !bad, "%s", why);

    /* random strings over the edge cases */
    static const char *const alpha[] = {
        " ", "  ", "\t", "\n", "\r", "\r\n", "\xc2\xa0", "\xe3\x80\x80", "\xe1\xa0\x8e", "\xc2\x85",
        "'", "s", "S", "t", "re", "rE", "ve", "m", "ll", "lL", "d", "x", "a", "\xc3\xa9",
        "\xcc\x81", "\xe0\xa4\xbf", "\xe0\xa5\x8d", "7", "\xd9\xa3", "\xe2\x85\xa2", "\xc2\xbd",
        ".", "!", "{", "_", "\xe2\x80\x94", "\xf0\x9f\x91\x8d", "\xe2\x80\x8d", "\xef\xb8\x8f",
        "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80\xaf", "\xf0\xae\xaf\xb0",
        "\xf0\x91\xbc\x80", "\xf0\x9e\x93\xb0", "\xe4\xb8\xad", "\xe3\x81\x82", "\x0b", "\x0c",
    };
    t_rng r = t_rng_named("tok.utf8proc.random");
    char str[512];
    bad = 0;
    for (int it = 0; it < 200000 && !bad; it++) {
        size_t n = 0, len = 1 + t_next(&r) % 24;
        for (size_t k = 0; k < len; k++) {
            const char *a = alpha[t_next(&r) % (sizeof alpha / sizeof alpha[0])];
            size_t al = strlen(a);
            memcpy(str + n, a, al);
            n += al;
        }
        bad = compare(&s, "random string", str, n, why, sizeof why) != 0;
        if (bad) {
            size_t w = strlen(why);
            snprintf(why + w, sizeof why - w, "; input:");
            for (size_t k = 0; k < n && strlen(why) + 4 < sizeof why; k++) {
                w = strlen(why);
                snprintf(why + w, sizeof why - w, " %02x", (uint8_t)str[k]);
            }
        }
    }
    snprintf(cname, sizeof cname, "tok.utf8proc.%s.split_random_200000", pre);
    t_check(cname, !bad, "%s", why);

out:
    free(s.a.bytes); free(s.a.lens); free(s.b.bytes); free(s.b.lens);
    u8p_split_free(s.hand);
    tok_split_ctx_free(s.ctx);
    tok_pretok_free(s.rx);
}

int main(void)
{
    check_classes();
    check_split("qwen35", true);
    check_split("qwen2", false);
    return t_exit();
}
