/* test_ggml_tok_unicode.c: the pre-tokenizer's Unicode classes against
 * llama.cpp's, over every code point.
 *
 * 1. Classes: q36's letter / number / mark / whitespace classes (PCRE2 plus
 *    q36's patches, tok_pretok_class) against llama.cpp's own tables, read
 *    through libllama's exported unicode_cpt_flags_from_cpt (a C++ function
 *    returning a 16-bit flag word; its mangled name is called directly).
 *    The same comparison with PCRE2's unpatched classes is printed as a
 *    comment, to show where PCRE2 alone disagrees.
 * 2. Ids: for every code point C of planes 0-3 and of U+E0000..U+E01FF
 *    (surrogates included, as their 3-byte forms; the other planes hold no
 *    assigned letters, numbers, marks or spaces, which part 1 checks), the
 *    probe "aCa .C. xCCx\n" is tokenized by both, 512 code points per
 *    string, for "qwen2" and "qwen35". The contexts separate letters, marks,
 *    numbers, whitespace and the rest.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "llama.h"
#include "ggml-backend.h"
#include "tokenizer/tok.h"
#include "tokenizer/tok_internal.h"   /* tok_pretok_class */
#include "test.h"
#include "test_tok_util.h"

#include <stdlib.h>
#include <unistd.h>

/* llama.cpp's unicode_cpt_flags_from_cpt(uint32_t) (src/unicode.h). */
extern uint16_t _Z26unicode_cpt_flags_from_cptj(uint32_t cpt);
enum { LL_NUMBER = 0x2, LL_LETTER = 0x4, LL_MARK = 0x10, LL_WS = 0x100 };

static int llama_class(uint32_t cp)
{
    uint16_t f = _Z26unicode_cpt_flags_from_cptj(cp);
    return ((f & LL_LETTER) ? TOK_CLASS_L : 0) | ((f & LL_NUMBER) ? TOK_CLASS_N : 0) |
           ((f & LL_MARK) ? TOK_CLASS_M : 0) | ((f & LL_WS) ? TOK_CLASS_WS : 0);
}

static size_t enc(uint32_t c, char *o)
{
    uint8_t *u = (uint8_t *)o;
    if (c < 0x80) { u[0] = (uint8_t)c; return 1; }
    if (c < 0x800) { u[0] = 0xC0 | c >> 6; u[1] = 0x80 | (c & 63); return 2; }
    if (c < 0x10000) { u[0] = 0xE0 | c >> 12; u[1] = 0x80 | ((c >> 6) & 63); u[2] = 0x80 | (c & 63); return 3; }
    u[0] = 0xF0 | c >> 18; u[1] = 0x80 | ((c >> 12) & 63); u[2] = 0x80 | ((c >> 6) & 63); u[3] = 0x80 | (c & 63);
    return 4;
}

static void check_classes(void)
{
    static const char *const raw_pats[4] = { "^\\p{L}$", "^\\p{N}$", "^\\p{M}$", "^\\s$" };
    pcre2_code *raw[4];
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    for (int i = 0; i < 4; i++) {
        int ec;
        PCRE2_SIZE eo;
        raw[i] = pcre2_compile((PCRE2_SPTR)raw_pats[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    }
    long diff_q36 = 0, diff_raw[4] = { 0 };
    uint32_t first_bad = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        int want = llama_class(cp);
        int got = tok_pretok_class(cp);
        if (got != want && diff_q36++ == 0)
            first_bad = cp;
        char u[4];
        size_t n = enc(cp, u);
        for (int i = 0; i < 4; i++) {
            bool r = pcre2_match(raw[i], (PCRE2_SPTR)u, n, 0, 0, md, NULL) >= 0;
            diff_raw[i] += r != ((want >> i) & 1);
        }
    }
    printf("# PCRE2 Unicode %s; unpatched PCRE2 vs llama.cpp: \\p{L} %ld, \\p{N} %ld, \\p{M} %ld, \\s %ld code points differ\n",
           tok_pcre2_unicode_version(), diff_raw[0], diff_raw[1], diff_raw[2], diff_raw[3]);
    t_check("tok.unicode.classes_all_codepoints", diff_q36 == 0,
            "%ld code points differ, first U+%04X: llama class %d, q36 %d", diff_q36, first_bad,
            llama_class(first_bad), tok_pretok_class(first_bad));
    for (int i = 0; i < 4; i++)
        pcre2_code_free(raw[i]);
    pcre2_match_data_free(md);
}

static void check_ids(const char *pre, tok_vocab *q, const struct llama_vocab *o)
{
    char cname[128];
    snprintf(cname, sizeof cname, "tok.%s.all_codepoints_ids", pre);
    char *buf = malloc(512 * 40);
    for (uint32_t base = 0; base < 0x110000; base += 512) {
        if (base >= 0x40000 && (base < 0xE0000 || base >= 0xE0200))
            continue;
        size_t n = 0;
        for (uint32_t cp = base; cp < base + 512; cp++) {
            char u[4];
            size_t k = enc(cp, u);
            buf[n++] = 'a'; memcpy(buf + n, u, k); n += k; buf[n++] = 'a';
            buf[n++] = ' '; buf[n++] = '.'; memcpy(buf + n, u, k); n += k; buf[n++] = '.';
            buf[n++] = ' '; buf[n++] = 'x'; memcpy(buf + n, u, k); n += k;
            memcpy(buf + n, u, k); n += k; buf[n++] = 'x'; buf[n++] = '\n';
        }
        int32_t *oi = NULL, *qi = NULL;
        size_t nq = 0;
        int no = tt_oracle_tokenize(o, buf, n, true, &oi);
        int rc = tok_encode(q, buf, n, true, &qi, &nq, NULL);
        if (no < 0 || rc || (size_t)no != nq || memcmp(oi, qi, nq * sizeof *qi)) {
            size_t i = 0;
            while (no >= 0 && i < nq && i < (size_t)no && oi[i] == qi[i])
                i++;
            t_fail(cname, "block U+%04X..U+%04X: q36 %zu ids, llama %d, first difference at id %zu",
                   base, base + 511, nq, no, i);
            free(oi);
            free(qi);
            free(buf);
            return;
        }
        free(oi);
        free(qi);
    }
    free(buf);
    t_ok(cname);
}

int main(void)
{
    check_classes();
    char dir[] = "/tmp/q36_toku_XXXXXX";
    if (!mkdtemp(dir)) {
        t_fail("tok.unicode.setup", "mkdtemp failed");
        return t_exit();
    }
    const char *pres[] = { "qwen2", "qwen35" };
    for (int p = 0; p < 2; p++) {
        char path[256], cname[128];
        snprintf(path, sizeof path, "%s/vocab-%s.gguf", dir, pres[p]);
        snprintf(cname, sizeof cname, "tok.%s.all_codepoints_ids", pres[p]);
        struct llama_model *om = NULL;
        tok_vocab *q = NULL;
        q36_err err = { 0 };
        if (tt_make_vocab_gguf(TT_VOCAB_JSON, pres[p], 151936, path))
            t_fail(cname, "cannot write the test GGUF from %s", TT_VOCAB_JSON);
        else if (!(om = tt_oracle_load(path)))
            t_fail(cname, "llama.cpp (the oracle) cannot load %s", path);
        else if (tok_new_from_file(path, &q, &err))
            t_fail(cname, "q36: %s", err.msg);
        else
            check_ids(pres[p], q, llama_model_get_vocab(om));
        tok_free(q);
        if (om)
            llama_model_free(om);
        unlink(path);
    }
    rmdir(dir);
    return t_exit();
}
