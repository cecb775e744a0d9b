/* test_tok_chat.c: q36's C rendering of the Qwen3.5/3.6 chat template
 * against @huggingface/jinja rendering the template text itself, and the
 * reply parser.
 *
 * The template is Qwen's (llama.cpp's copy, models/templates/Qwen3.5-4B.jinja
 * in build/llama.cpp), stored as tokenizer.chat_template in a GGUF written
 * with q36's writer and read back with q36's reader; node renders that text
 * (tests/corpus/chat/render.mjs, which gives @huggingface/jinja 0.5.1 the
 * three Jinja features it lacks) for every conversation of
 * tests/corpus/chat/conversations.json. One line per conversation: same
 * text, or both refuse. Then the parser reads back the assistant turns the
 * renderer wrote (reasoning, answer, tool calls) and a few model outputs.
 */
#include "test.h"
#include "gguf/gguf.h"
#include "tokenizer/tok.h"
#include "chat/chat.h"

#include <stdlib.h>
#include <unistd.h>

#define TEMPLATE "build/llama.cpp/models/templates/Qwen3.5-4B.jinja"
#define CONVS    "tests/corpus/chat/conversations.json"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        if (len)
            *len = n;
    }
    return b;
}

static char *read_cmd(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *b = malloc(cap);
    while (b && (k = fread(b + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap)
            b = realloc(b, cap *= 2);
    }
    int rc = pclose(p);
    if (b)
        b[n] = 0;
    if (rc != 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* The template as a GGUF carries it: written, then read back. */
static char *template_via_gguf(const char *dir, size_t *len)
{
    char *tmpl = read_file(TEMPLATE, len);
    if (!tmpl)
        return NULL;
    char path[256];
    snprintf(path, sizeof path, "%s/t.gguf", dir);
    q36_err err = { 0 };
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "qwen35");
    gguf_w_str(w, "tokenizer.chat_template", tmpl);
    int rc = gguf_w_begin(w, path, &err);
    if (!rc)
        rc = gguf_w_finish(w, &err);
    gguf_writer_free(w);
    free(tmpl);
    tmpl = NULL;
    gguf_file *f = NULL;
    if (!rc && gguf_open(path, &f, &err) == 0) {
        uint64_t n;
        const char *s = gguf_value_str(gguf_get(f, "tokenizer.chat_template"), &n);
        if (s && (tmpl = malloc(n + 1))) {
            memcpy(tmpl, s, n);
            tmpl[n] = 0;
            *len = n;
        }
    }
    gguf_close(f);
    unlink(path);
    return tmpl;
}

static void show_diff(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    size_t from = i > 40 ? i - 40 : 0;
    printf("#   first difference at byte %zu\n#   q36:  '%.80s'\n#   jinja: '%.80s'\n", i, a + from, b + from);
}

static void check_renders(const char *dir, const char *tmpl_path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "node tests/corpus/chat/render.mjs '%s' " CONVS " 2>&1", tmpl_path);
    char *ref_text = read_cmd(cmd);
    cJSON *ref = ref_text ? cJSON_Parse(ref_text) : NULL;
    size_t cl;
    char *conv_text = read_file(CONVS, &cl);
    cJSON *convs = conv_text ? cJSON_Parse(conv_text) : NULL;
    if (!ref || !convs) {
        t_fail("chat.oracle", "cannot run the jinja reference (node %s): %.200s",
               ref ? "ok" : "failed", ref_text ? ref_text : "(no output)");
        goto done;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, convs) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        char cname[128];
        snprintf(cname, sizeof cname, "chat.%s", name);
        const cJSON *want = cJSON_GetObjectItem(ref, name);
        const cJSON *et = cJSON_GetObjectItem(c, "enable_thinking");
        chat_opts o = {
            .add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")),
            .enable_thinking = et ? cJSON_IsTrue(et) : -1,
        };
        char *got = NULL;
        size_t gl;
        q36_err err = { 0 };
        int rc = chat_render(cJSON_GetObjectItem(c, "messages"), cJSON_GetObjectItem(c, "tools"), &o,
                                 &got, &gl, &err);
        if (cJSON_IsString(want)) {
            if (rc)
                t_fail(cname, "q36 refused (%s), jinja rendered %zu bytes", err.msg, strlen(want->valuestring));
            else if (strcmp(got, want->valuestring)) {
                t_fail(cname, "renderings differ");
                show_diff(got, want->valuestring);
            } else
                t_ok(cname);
        } else {
            const char *why = cJSON_GetObjectItem(want, "error") ? cJSON_GetObjectItem(want, "error")->valuestring : "?";
            if (!rc)
                t_fail(cname, "jinja refused (%s), q36 rendered %zu bytes", why, gl);
            else {
                if (strcmp(err.msg, why))
                    printf("# %s: both refuse; q36 says '%s', jinja says '%s'\n", cname, err.msg, why);
                t_ok(cname);
            }
        }
        free(got);
    }
done:
    (void)dir;
    cJSON_Delete(ref);
    cJSON_Delete(convs);
    free(ref_text);
    free(conv_text);
}

/* Renders [user, assistant], parses the assistant turn back. */
static void check_round_trip(const char *name, const char *assistant_json)
{
    char cname[128], buf[2048];
    snprintf(cname, sizeof cname, "chat.parse_back.%s", name);
    snprintf(buf, sizeof buf, "[{\"role\":\"user\",\"content\":\"q\"},%s]", assistant_json);
    cJSON *msgs = cJSON_Parse(buf);
    chat_opts o = { .enable_thinking = -1 };
    char *text = NULL;
    size_t len;
    chat_reply rep = { 0 };
    if (!msgs || chat_render(msgs, NULL, &o, &text, &len, NULL)) {
        t_fail(cname, "cannot render");
        goto done;
    }
    const char *a = strstr(text, "<|im_start|>assistant\n") + 22;
    const char *e = strstr(a, "<|im_end|>");
    chat_parse(a, (size_t)(e - a), false, &rep, NULL);
    const cJSON *m = cJSON_GetArrayItem(msgs, 1);
    const cJSON *rc = cJSON_GetObjectItem(m, "reasoning_content");
    const cJSON *content = cJSON_GetObjectItem(m, "content");
    const cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");
    bool ok = !strcmp(rep.reasoning, cJSON_IsString(rc) ? rc->valuestring : "") &&
              !strcmp(rep.content, cJSON_IsString(content) ? content->valuestring : "") && rep.complete;
    int n_calls = calls ? cJSON_GetArraySize(calls) : 0;
    ok = ok && (rep.tool_calls ? cJSON_GetArraySize(rep.tool_calls) : 0) == n_calls;
    for (int i = 0; ok && i < n_calls; i++) {
        const cJSON *want = cJSON_GetObjectItem(cJSON_GetArrayItem(calls, i), "function");
        const cJSON *got = cJSON_GetObjectItem(cJSON_GetArrayItem(rep.tool_calls, i), "function");
        cJSON *args = cJSON_Parse(cJSON_GetObjectItem(got, "arguments")->valuestring);
        const cJSON *wa = cJSON_GetObjectItem(want, "arguments");
        cJSON *wparsed = cJSON_IsString(wa) ? cJSON_Parse(wa->valuestring) : NULL;
        ok = !strcmp(cJSON_GetObjectItem(want, "name")->valuestring, cJSON_GetObjectItem(got, "name")->valuestring) &&
             cJSON_Compare(args, wparsed ? wparsed : wa, true);
        cJSON_Delete(args);
        cJSON_Delete(wparsed);
    }
    if (ok)
        t_ok(cname);
    else
        t_fail(cname, "reasoning '%s' content '%s' calls %s", rep.reasoning, rep.content,
               rep.tool_calls ? cJSON_PrintUnformatted(rep.tool_calls) : "none");
done:
    chat_reply_free(&rep);
    free(text);
    cJSON_Delete(msgs);
}

static void check_parse_outputs(void)
{
    chat_reply r;
    const char *t1 = "Let me think.\nStill thinking";
    chat_parse(t1, strlen(t1), true, &r, NULL);
    t_check("chat.parse_unfinished_thinking", !r.complete && !strcmp(r.reasoning, "Let me think.\nStill thinking") &&
            !r.content[0] && !r.tool_calls, "reasoning '%s'", r.reasoning);
    chat_reply_free(&r);
    const char *t2 = "plan\n</think>\n\nHere you go.\n\n<tool_call>\n<function=run>\n<parameter=cmd>\nls -la\n"
                     "</parameter>\n<parameter=n>\n3\n</parameter>\n<parameter=obj>\n{\"a\": [1, 2]}\n</parameter>\n"
                     "</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                     "\n  two\nlines  \n\n</parameter>\n</function>\n</tool_call>";
    chat_parse(t2, strlen(t2), true, &r, NULL);
    char *calls = r.tool_calls ? cJSON_PrintUnformatted(r.tool_calls) : NULL;
    const char *want = "[{\"type\":\"function\",\"function\":{\"name\":\"run\",\"arguments\":"
                       "\"{\\\"cmd\\\":\\\"ls -la\\\",\\\"n\\\":3,\\\"obj\\\":{\\\"a\\\":[1,2]}}\"}},"
                       "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
                       "\"{\\\"city\\\":\\\"\\\\n  two\\\\nlines  \\\\n\\\"}\"}}]";
    t_check("chat.parse_tool_calls", r.complete && !strcmp(r.reasoning, "plan") && !strcmp(r.content, "Here you go.") &&
            calls && !strcmp(calls, want), "got reasoning '%s' content '%s' calls %s", r.reasoning, r.content,
            calls ? calls : "none");
    free(calls);
    chat_reply_free(&r);
    const char *t3 = "Plain answer, no thinking.";
    chat_parse(t3, strlen(t3), false, &r, NULL);
    t_check("chat.parse_plain", r.complete && !r.reasoning[0] && !strcmp(r.content, t3), "content '%s'", r.content);
    chat_reply_free(&r);
    const char *t4 = "<tool_call>\n<function=run>\n<parameter=cmd>\nunfinished";
    chat_parse(t4, strlen(t4), false, &r, NULL);
    t_check("chat.parse_unfinished_call", !r.complete && r.tool_calls && cJSON_GetArraySize(r.tool_calls) == 1,
            "complete %d", r.complete);
    chat_reply_free(&r);
}

int main(void)
{
    char dir[] = "/tmp/q36_chat_XXXXXX";
    if (!mkdtemp(dir)) {
        t_fail("chat.setup", "mkdtemp failed");
        return t_exit();
    }
    size_t tl;
    char *tmpl = template_via_gguf(dir, &tl);
    char tpath[256];
    snprintf(tpath, sizeof tpath, "%s/template.jinja", dir);
    FILE *f = tmpl ? fopen(tpath, "wb") : NULL;
    if (!f) {
        t_fail("chat.template", "cannot read %s through a GGUF (run make deps)", TEMPLATE);
    } else {
        fwrite(tmpl, 1, tl, f);
        fclose(f);
        t_check("chat.template_recognised", chat_template_is_qwen35(tmpl, tl),
                "the Qwen3.5 template is not recognised");
        size_t sl;
        char *synth = read_file("tools/data/chat_template.jinja", &sl);
        t_check("chat.other_template_not_recognised", synth && !chat_template_is_qwen35(synth, sl),
                "q36 synth's simplified template taken for Qwen's");
        free(synth);
        check_renders(dir, tpath);
        unlink(tpath);
    }
    free(tmpl);
    check_round_trip("answer_only", "{\"role\":\"assistant\",\"content\":\"Hello there\",\"reasoning_content\":\"greet\"}");
    check_round_trip("tool_calls",
                     "{\"role\":\"assistant\",\"content\":\"Checking.\",\"reasoning_content\":\"need data\","
                     "\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"days\":3}}},"
                     "{\"function\":{\"name\":\"run\",\"arguments\":{\"cmd\":\"ls\\n-la\",\"env\":{\"A\":[1,\"x\"]}}}}]}");
    check_round_trip("tool_call_string_args",
                     "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"type\":\"function\",\"function\":"
                     "{\"name\":\"run\",\"arguments\":\"{\\\"cmd\\\":\\\"pwd\\\"}\"}}]}");
    check_parse_outputs();
    rmdir(dir);
    return t_exit();
}
