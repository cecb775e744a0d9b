/* test_tok.c: the tokenizer without the oracle: the byte alphabet, lenient
 * UTF-8 decoding, BPE merge order on a hand-made vocabulary, the decoder's
 * pieces, the streaming decoder, and the error values for broken or
 * unsupported tokenizer metadata (each naming the GGUF key).
 */
#include "test.h"
#include "gguf/gguf.h"
#include "tokenizer/tok.h"
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <unistd.h>

static char g_dir[64];

/* ---- a small byte-level vocabulary -------------------------------------------- */

typedef struct spec {
    const char *model, *pre;
    int drop_key;             /* 0 none, 1 tokens, 2 merges, 3 model, 4 pre */
    bool types_short;         /* token_type one entry short */
    bool tokens_as_u32;       /* tokens stored as a u32 array */
    const char *bad_merge;    /* appended to the merges */
    int64_t eos;              /* -1: absent */
} spec;

static char *byte_text(uint8_t b)
{
    static char buf[256][5];
    uint8_t u[4];
    size_t n = tok_utf8_encode(tok_byte_to_cpt(b), u);
    memcpy(buf[b], u, n);
    buf[b][n] = 0;
    return buf[b];
}

/* Tokens: the 256 byte symbols, then "aa", "aaa"... see extra[]; merges
 * "a a", "aa a", "b c", "c d", "Ġ a", then <|im_start|> (CONTROL), <think>
 * (USER_DEFINED), "Ω" (NORMAL, outside the byte alphabet) and [PAD] (UNUSED). */
static const char *const extra[] = { "aa", "aaa", "bc", "cd", "\xc4\xa0" "a",
                                     "<|im_start|>", "<think>", "\xce\xa9", "[PAD270]", "</s>" };
static const int32_t extra_type[] = { 1, 1, 1, 1, 1, 3, 4, 1, 5, 1 };
static const char *const merges[] = { "a a", "aa a", "b c", "c d", "\xc4\xa0 a" };

static int write_vocab(const char *path, const spec *s, q36_err *err)
{
    const int n_extra = (int)(sizeof extra / sizeof extra[0]);
    const int n = 256 + n_extra;
    const char *toks[256 + 16];
    int32_t types[256 + 16];
    uint32_t fake[256 + 16];
    for (int i = 0; i < 256; i++) {
        toks[i] = byte_text((uint8_t)i);
        types[i] = 1;
        fake[i] = (uint32_t)i;
    }
    for (int i = 0; i < n_extra; i++) {
        toks[256 + i] = extra[i];
        types[256 + i] = extra_type[i];
        fake[256 + i] = 0;
    }
    const char *m[8];
    int nm = 0;
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++)
        m[nm++] = merges[i];
    if (s->bad_merge)
        m[nm++] = s->bad_merge;
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "qwen35");
    if (s->drop_key != 3)
        gguf_w_str(w, "tokenizer.ggml.model", s->model ? s->model : "gpt2");
    if (s->drop_key != 4)
        gguf_w_str(w, "tokenizer.ggml.pre", s->pre ? s->pre : "qwen35");
    if (s->drop_key != 1) {
        if (s->tokens_as_u32)
            gguf_w_arr(w, "tokenizer.ggml.tokens", GGUF_T_U32, fake, (uint64_t)n);
        else
            gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, (uint64_t)n);
    }
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_T_I32, types, (uint64_t)(n - (s->types_short ? 1 : 0)));
    if (s->drop_key != 2)
        gguf_w_arr_str(w, "tokenizer.ggml.merges", m, NULL, (uint64_t)nm);
    if (s->eos >= 0)
        gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)s->eos);
    int rc = gguf_w_begin(w, path, err);
    if (!rc)
        rc = gguf_w_finish(w, err);
    gguf_writer_free(w);
    return rc;
}

static tok_vocab *load(const spec *s, q36_err *err)
{
    char path[128];
    snprintf(path, sizeof path, "%s/v.gguf", g_dir);
    tok_vocab *v = NULL;
    if (write_vocab(path, s, err) == 0)
        tok_new_from_file(path, &v, err);
    unlink(path);
    return v;
}

/* ---- cases ----------------------------------------------------------------------- */

static void test_bytes(void)
{
    bool bij = true;
    for (int b = 0; b < 256; b++)
        if (tok_cpt_to_byte(tok_byte_to_cpt((uint8_t)b)) != b)
            bij = false;
    t_check("tok.bytes.bijection", bij, "a byte does not map back to itself");
    t_check("tok.bytes.examples",
            tok_byte_to_cpt(' ') == 0x120 && tok_byte_to_cpt('\n') == 0x10A && tok_byte_to_cpt(0xAD) == 0x143 &&
            tok_byte_to_cpt('A') == 'A' && tok_byte_to_cpt(0xE9) == 0xE9 && tok_byte_to_cpt(0) == 0x100,
            "space U+%04X, newline U+%04X, 0xAD U+%04X", tok_byte_to_cpt(' '), tok_byte_to_cpt('\n'),
            tok_byte_to_cpt(0xAD));
    t_check("tok.bytes.outside", tok_cpt_to_byte(0x144) < 0 && tok_cpt_to_byte(0x3A9) < 0 && tok_cpt_to_byte(0xAD) < 0,
            "code points outside the alphabet map to a byte");
}

static void test_utf8(void)
{
    size_t u;
    bool ok = tok_utf8_decode((const uint8_t *)"\xc0\x80", 2, &u) == 0 && u == 2 &&       /* overlong */
              tok_utf8_decode((const uint8_t *)"\xed\xa0\x80", 3, &u) == 0xD800 && u == 3 && /* surrogate */
              tok_utf8_decode((const uint8_t *)"\xf7\xbf\xbf\xbf", 4, &u) == 0x1FFFFF &&
              tok_utf8_decode((const uint8_t *)"\xe2\x82", 2, &u) == TOK_CPT_INVALID && u == 1 &&
              tok_utf8_decode((const uint8_t *)"\x80", 1, &u) == TOK_CPT_INVALID &&
              tok_utf8_decode((const uint8_t *)"\xf8\x88\x80\x80\x80", 5, &u) == TOK_CPT_INVALID;
    t_check("tok.utf8.lenient_decode", ok, "llama.cpp-compatible decoding rules broken");
    ok = tok_utf8_valid((const uint8_t *)"ok \xc3\xa9 \xf0\x9f\x98\x80", 10) &&
         !tok_utf8_valid((const uint8_t *)"\xc0\x80", 2) && !tok_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3) &&
         !tok_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4) && !tok_utf8_valid((const uint8_t *)"abcdefgh\xff", 9);
    t_check("tok.utf8.strict_valid", ok, "strict validity check broken");
}

static bool ids_are(const tok_vocab *v, const char *text, const int32_t *want, size_t n_want)
{
    int32_t *ids;
    size_t n;
    if (tok_encode(v, text, strlen(text), true, &ids, &n, NULL))
        return false;
    bool same = n == n_want && !memcmp(ids, want, n * sizeof *ids);
    if (!same) {
        printf("# '%s' ->", text);
        for (size_t i = 0; i < n; i++)
            printf(" %d", ids[i]);
        printf("\n");
    }
    free(ids);
    return same;
}

static void test_bpe(void)
{
    q36_err err = { 0 };
    spec s = { .eos = -1 };
    tok_vocab *v = load(&s, &err);
    if (!v) {
        t_fail("tok.bpe.load", "%s", err.msg);
        return;
    }
    t_ok("tok.bpe.load");
    /* ids: aa 256, aaa 257, bc 258, cd 259, Ġa 260, <|im_start|> 261, <think> 262, Ω 263, [PAD270] 264, </s> 265 */
    /* "a a" (rank 0) merges leftmost first, and again before "aa a" (rank 1). */
    const int32_t a4[] = { 256, 256 };
    t_check("tok.bpe.leftmost_lowest_rank", ids_are(v, "aaaa", a4, 2), "aaaa");
    const int32_t a5[] = { 256, 257 };          /* aa|a|a|a -> aa|aa|a -> aa|aaa */
    t_check("tok.bpe.aaaaa", ids_are(v, "aaaaa", a5, 2), "aaaaa");
    const int32_t bcd[] = { 258, 'd' };         /* "b c" outranks "c d" */
    t_check("tok.bpe.rank_order", ids_are(v, "bcd", bcd, 2), "bcd");
    const int32_t sp[] = { 'x', 260 };          /* " a" is one piece: Ġa */
    t_check("tok.bpe.space_prefix", ids_are(v, "x a", sp, 2), "x a");
    const int32_t sp2[] = { 261, 262, 260 };
    t_check("tok.special.partition", ids_are(v, "<|im_start|><think> a", sp2, 3), "specials");
    int32_t *ids;
    size_t n;
    tok_encode(v, "<|im_start|>", 12, false, &ids, &n, NULL);
    t_check("tok.special.control_needs_parse_special", n > 1 && ids[0] != 261, "control parsed without parse_special");
    free(ids);
    tok_encode(v, "<think>", 7, false, &ids, &n, NULL);
    t_check("tok.special.user_defined_always", n == 1 && ids[0] == 262, "USER_DEFINED not matched without parse_special");
    free(ids);
    const int32_t slash_s[] = { 265 };
    t_check("tok.special.text_detected_eog", ids_are(v, "</s>", slash_s, 1) && tok_is_eog(v, 265) &&
            tok_is_control(v, 265), "</s> is not treated as control/EOG");

    size_t pl;
    const char *p = tok_piece(v, 263, true, &pl);
    t_check("tok.decode.unk_byte", pl == strlen("[UNK_BYTE_0xcea9\xce\xa9]") && !memcmp(p, "[UNK_BYTE_0xcea9\xce\xa9]", pl),
            "got '%.*s'", (int)pl, p);
    p = tok_piece(v, 264, true, &pl);
    t_check("tok.decode.unused_empty", pl == 0, "UNUSED token has a piece");
    p = tok_piece(v, 261, false, &pl);
    t_check("tok.decode.control_hidden", pl == 0, "control token shown without special");
    p = tok_piece(v, 262, false, &pl);
    t_check("tok.decode.user_defined_shown", pl == 7 && !memcmp(p, "<think>", 7), "USER_DEFINED hidden");
    char *out;
    size_t ol;
    int32_t bad[] = { 5, 9999 };
    q36_err e2 = { 0 };
    t_check("tok.decode.bad_id", tok_decode(v, bad, 2, true, &out, &ol, &e2) == TOK_E_ID && strstr(e2.msg, "9999"),
            "got %d '%s'", e2.kind, e2.msg);
    tok_free(v);
}

static void test_stream(void)
{
    tok_stream s;
    tok_stream_init(&s);
    char out[16];
    size_t a = tok_stream_push(&s, "x\xe2", 2, out);          /* 'x' then the start of € */
    bool ok = a == 1 && out[0] == 'x';
    size_t b = tok_stream_push(&s, "\x82", 1, out);
    ok = ok && b == 0;
    size_t c = tok_stream_push(&s, "\xac!", 2, out);
    ok = ok && c == 4 && !memcmp(out, "\xe2\x82\xac!", 4);
    t_check("tok.stream.split_character", ok, "a=%zu b=%zu c=%zu", a, b, c);
    size_t d = tok_stream_push(&s, "\xff\x80z", 3, out);      /* invalid bytes pass through */
    ok = d == 3 && !memcmp(out, "\xff\x80z", 3);
    size_t e = tok_stream_push(&s, "\xf0\x9f", 2, out);
    size_t f = tok_stream_flush(&s, out);
    ok = ok && e == 0 && f == 2 && !memcmp(out, "\xf0\x9f", 2);
    t_check("tok.stream.invalid_and_flush", ok, "d=%zu e=%zu f=%zu", d, e, f);
}

static void expect_err(const char *name, const spec *s, int kind, const char *needle)
{
    q36_err err = { 0 };
    tok_vocab *v = load(s, &err);
    t_check(name, !v && err.kind == kind && strstr(err.msg, needle) && strstr(err.msg, "v.gguf"),
            "kind %d (want %d), message '%s' (want it to name '%s' and the file)", err.kind, kind, err.msg, needle);
    tok_free(v);
}

static void test_errors(void)
{
    expect_err("tok.err.no_tokens", &(spec){ .drop_key = 1, .eos = -1 }, TOK_E_KEY, "tokenizer.ggml.tokens");
    expect_err("tok.err.no_merges", &(spec){ .drop_key = 2, .eos = -1 }, TOK_E_KEY, "tokenizer.ggml.merges");
    expect_err("tok.err.no_model", &(spec){ .drop_key = 3, .eos = -1 }, TOK_E_KEY, "tokenizer.ggml.model");
    expect_err("tok.err.no_pre", &(spec){ .drop_key = 4, .eos = -1 }, TOK_E_KEY, "tokenizer.ggml.pre");
    expect_err("tok.err.model_llama", &(spec){ .model = "llama", .eos = -1 }, TOK_E_UNSUP, "'llama'");
    expect_err("tok.err.pre_unknown", &(spec){ .pre = "gpt-4o", .eos = -1 }, TOK_E_UNSUP, "'gpt-4o'");
    expect_err("tok.err.tokens_type", &(spec){ .tokens_as_u32 = true, .eos = -1 }, TOK_E_TYPE, "tokenizer.ggml.tokens");
    expect_err("tok.err.types_count", &(spec){ .types_short = true, .eos = -1 }, TOK_E_VALUE, "token_type");
    expect_err("tok.err.bad_merge", &(spec){ .bad_merge = "nospace", .eos = -1 }, TOK_E_VALUE, "nospace");
    expect_err("tok.err.eos_range", &(spec){ .eos = 100000 }, TOK_E_VALUE, "eos_token_id");
    q36_err err = { 0 };
    spec ok = { .pre = "qwen2", .eos = 261 };
    tok_vocab *v = load(&ok, &err);
    t_check("tok.err.qwen2_loads", v && tok_pre_type(v) == TOK_PRE_QWEN2 && tok_eos(v) == 261 && tok_is_eog(v, 261),
            "%s", err.msg);
    tok_free(v);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/q36_tok_unit_XXXXXX");
    if (!mkdtemp(g_dir)) {
        t_fail("tok.setup", "mkdtemp failed");
        return t_exit();
    }
    test_bytes();
    test_utf8();
    test_bpe();
    test_stream();
    test_errors();
    rmdir(g_dir);
    return t_exit();
}
