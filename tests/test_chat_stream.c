/* test_chat_stream.c: the incremental Qwen output parser (chat_stream.h) on
 * outputs written the way Qwen3.5/3.6 writes them: reasoning and answer,
 * tool calls with multi-line string values, JSON values by schema,
 * Python-style True/None, several calls, "</function>" inside a value, a
 * call inside reasoning, broken markup. Every case is fed whole, one byte at
 * a time and in random pieces; the three must give the same reasoning,
 * content and calls (events are never retracted, so any split gives the
 * same result), and the calls' arguments must be the JSON expected.
 */
#include "test.h"
#include "chat/chat_stream.h"

typedef struct got {
    char  reasoning[4096], content[4096];
    int   n_calls, n_end;
    char  name[8][64];
    char  args[8][2048];
} got;

static void cat(char *dst, size_t cap, const char *t, size_t n)
{
    size_t l = strlen(dst);
    if (l + n + 1 > cap)
        n = cap - l - 1;
    memcpy(dst + l, t, n);
    dst[l + n] = 0;
}

static void on_ev(void *user, const chat_ev *ev)
{
    got *g = user;
    switch (ev->kind) {
    case CHAT_EV_REASONING: cat(g->reasoning, sizeof g->reasoning, ev->text, ev->len); break;
    case CHAT_EV_CONTENT:   cat(g->content, sizeof g->content, ev->text, ev->len); break;
    case CHAT_EV_TOOL_BEGIN:
        if (g->n_calls < 8) {
            g->name[g->n_calls][0] = 0;
            cat(g->name[g->n_calls], 64, ev->text, ev->len);
            g->args[g->n_calls][0] = 0;
        }
        g->n_calls++;
        break;
    case CHAT_EV_TOOL_ARGS:
        if (ev->tool >= 0 && ev->tool < 8)
            cat(g->args[ev->tool], 2048, ev->text, ev->len);
        break;
    case CHAT_EV_TOOL_END: g->n_end++; break;
    }
}

/* step: 0 whole, 1 byte by byte, else random pieces from rng. */
static void run(const cJSON *tools, bool parse, bool think, const char *text, int step, t_rng *r, got *g)
{
    memset(g, 0, sizeof *g);
    chat_stream *cs;
    if (chat_stream_new(tools, parse, think, &cs, NULL))
        return;
    size_t n = strlen(text), i = 0;
    while (i < n) {
        size_t k = step == 0 ? n : step == 1 ? 1 : 1 + t_next(r) % 7;
        if (k > n - i)
            k = n - i;
        chat_stream_push(cs, text + i, k, on_ev, g);
        i += k;
    }
    chat_stream_finish(cs, on_ev, g);
    chat_stream_free(cs);
}

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"search\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"query\":{\"type\":\"string\"},\"limit\":{\"type\":\"integer\"},"
    "\"fuzzy\":{\"type\":\"boolean\"},\"score\":{\"type\":\"number\"},\"filter\":{\"type\":\"object\"},"
    "\"tags\":{\"type\":\"array\"},\"lang\":{\"type\":[\"string\",\"null\"]}}}}}]";

typedef struct scase {
    const char *name;
    bool parse, think;
    const char *text;
    const char *reasoning, *content;
    int n_calls;
    const char *call[3][2];           /* name, arguments JSON (compared as JSON) */
} scase;

static const scase cases[] = {
    { "reasoning_then_answer", true, true,
      "The user greets me.\nI answer briefly.\n</think>\n\nHello! How can I help?",
      "The user greets me.\nI answer briefly.", "Hello! How can I help?", 0, { { 0 } } },
    { "thinking_off_answer", true, false, "Just the answer.\n", "", "Just the answer.", 0, { { 0 } } },
    { "multiline_string_value", true, true,
      "I will write the file.\n</think>\n\n<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.py\n"
      "</parameter>\n<parameter=content>\ndef f(x):\n    return x < 2\n\nprint(f(1))\n</parameter>\n"
      "</function>\n</tool_call>",
      "I will write the file.", "", 1,
      { { "write_file", "{\"path\":\"/tmp/a.py\",\"content\":\"def f(x):\\n    return x < 2\\n\\nprint(f(1))\"}" } } },
    { "json_values_by_schema", true, false,
      "<tool_call>\n<function=search>\n<parameter=query>\n42\n</parameter>\n<parameter=limit>\n10\n</parameter>\n"
      "<parameter=fuzzy>\ntrue\n</parameter>\n<parameter=score>\n0.5\n</parameter>\n"
      "<parameter=filter>\n{\"lang\": \"c\", \"n\": [1, 2]}\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n"
      "</parameter>\n</function>\n</tool_call>",
      "", "", 1,
      { { "search", "{\"query\":\"42\",\"limit\":10,\"fuzzy\":true,\"score\":0.5,\"filter\":{\"lang\":\"c\",\"n\":[1,2]},\"tags\":[\"a\",\"b\"]}" } } },
    { "python_true_none", true, false,
      "<tool_call>\n<function=search>\n<parameter=fuzzy>\nTrue\n</parameter>\n<parameter=filter>\n"
      "{'x': 1}\n</parameter>\n<parameter=tags>\n[True, None, False]\n</parameter>\n<parameter=lang>\nNone\n"
      "</parameter>\n</function>\n</tool_call>",
      "", "", 1,
      { { "search", "{\"fuzzy\":true,\"filter\":\"{'x': 1}\",\"tags\":[true,null,false],\"lang\":\"None\"}" } } },
    { "several_calls", true, true,
      "Two searches.\n</think>\n\nLet me look.\n\n<tool_call>\n<function=search>\n<parameter=query>\ncats\n"
      "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=search>\n<parameter=query>\ndogs\n"
      "</parameter>\n<parameter=limit>\n3\n</parameter>\n</function>\n</tool_call>",
      "Two searches.", "Let me look.", 2,
      { { "search", "{\"query\":\"cats\"}" }, { "search", "{\"query\":\"dogs\",\"limit\":3}" } } },
    { "function_close_inside_value", true, false,
      "<tool_call>\n<function=write_file>\n<parameter=path>\nx.xml\n</parameter>\n<parameter=content>\n"
      "<a></function></a>\n</parameter>\n</function>\n</tool_call>",
      "", "", 1, { { "write_file", "{\"path\":\"x.xml\",\"content\":\"<a></function></a>\"}" } } },
    { "call_inside_reasoning", true, true,
      "I should search first.\n<tool_call>\n<function=search>\n<parameter=query>\nq36\n</parameter>\n"
      "</function>\n</tool_call>",
      "I should search first.", "", 1, { { "search", "{\"query\":\"q36\"}" } } },
    { "missing_parameter_close", true, false,
      "<tool_call>\n<function=search>\n<parameter=query>\nunclosed value\n</function>\n</tool_call>",
      "", "", 1, { { "search", "{\"query\":\"unclosed value\"}" } } },
    { "no_parameters", true, false,
      "<tool_call>\n<function=search>\n</function>\n</tool_call>", "", "", 1, { { "search", "{}" } } },
    { "broken_call_is_text", true, false,
      "Sure. <tool_call>this is not a call</tool_call>", "", "Sure. <tool_call>this is not a call</tool_call>", 0,
      { { 0 } } },
    { "tag_start_that_is_not", true, true,
      "a <b> c </thi nk> d\n</think>\n\n<tool_ca ll> e", "a <b> c </thi nk> d", "<tool_ca ll> e", 0, { { 0 } } },
    { "tools_off_markup_is_text", false, false,
      "<tool_call>\n<function=search>\n</function>\n</tool_call>",
      "", "<tool_call>\n<function=search>\n</function>\n</tool_call>", 0, { { 0 } } },
    { "unfinished_reasoning", true, true, "thinking and thinking", "thinking and thinking", "", 0, { { 0 } } },
    { "text_after_call", true, false,
      "<tool_call>\n<function=search>\n</function>\n</tool_call>\nDone.", "", "Done.", 1, { { "search", "{}" } } },
    { "opens_think_itself", true, false, "\n<think>\nhmm\n</think>\n\nok", "hmm", "ok", 0, { { 0 } } },
    { "think_tag_later_is_text", true, false, "a <think> b", "", "a <think> b", 0, { { 0 } } },
    { "unknown_param_type", true, false,
      "<tool_call>\n<function=other>\n<parameter=n>\n7\n</parameter>\n<parameter=s>\nhi there\n</parameter>\n"
      "</function>\n</tool_call>",
      "", "", 1, { { "other", "{\"n\":7,\"s\":\"hi there\"}" } } },
};

static bool json_equal(const char *a, const char *b)
{
    cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
    bool eq = x && y && cJSON_Compare(x, y, true);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return eq;
}

static bool same(const got *a, const got *b)
{
    if (strcmp(a->reasoning, b->reasoning) || strcmp(a->content, b->content) || a->n_calls != b->n_calls)
        return false;
    for (int i = 0; i < a->n_calls && i < 8; i++)
        if (strcmp(a->name[i], b->name[i]) || strcmp(a->args[i], b->args[i]))
            return false;
    return true;
}

int main(void)
{
    cJSON *tools = cJSON_Parse(TOOLS);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const scase *c = &cases[i];
        char name[96];
        snprintf(name, sizeof name, "chat_stream.%s", c->name);
        t_rng r = t_rng_named(name);
        got whole, bytes, pieces;
        run(tools, c->parse, c->think, c->text, 0, &r, &whole);
        run(tools, c->parse, c->think, c->text, 1, &r, &bytes);
        run(tools, c->parse, c->think, c->text, 2, &r, &pieces);
        const char *why = NULL;
        if (strcmp(whole.reasoning, c->reasoning))
            why = "reasoning";
        else if (strcmp(whole.content, c->content))
            why = "content";
        else if (whole.n_calls != c->n_calls || whole.n_end != c->n_calls)
            why = "number of calls";
        for (int k = 0; !why && k < c->n_calls; k++)
            if (strcmp(whole.name[k], c->call[k][0]) || !json_equal(whole.args[k], c->call[k][1]))
                why = "call name or arguments";
        if (!why && !same(&whole, &bytes))
            why = "byte-by-byte feeding differs";
        if (!why && !same(&whole, &pieces))
            why = "feeding in pieces differs";
        if (why)
            t_fail(name, "%s: reasoning '%s' content '%s' calls %d (ended %d) first '%s' %s", why, whole.reasoning,
                   whole.content, whole.n_calls, whole.n_end, whole.name[0], whole.args[0]);
        else
            t_ok(name);
    }
    /* chat_param_value by schema. */
    cJSON *str = cJSON_Parse("{\"type\":\"string\"}"), *num = cJSON_Parse("{\"type\":\"number\"}");
    cJSON *v1 = chat_param_value("007", 3, str), *v2 = chat_param_value("007x", 4, num);
    cJSON *v3 = chat_param_value(" 1e3 ", 5, num);
    t_check("chat_stream.param_string_stays_string", cJSON_IsString(v1) && !strcmp(v1->valuestring, "007"),
            "expected the string 007");
    t_check("chat_stream.param_bad_number_is_string", cJSON_IsString(v2), "expected a string");
    t_check("chat_stream.param_number", cJSON_IsNumber(v3) && v3->valuedouble == 1000, "expected 1000");
    cJSON_Delete(v1);
    cJSON_Delete(v2);
    cJSON_Delete(v3);
    cJSON_Delete(str);
    cJSON_Delete(num);
    cJSON_Delete(tools);
    return t_exit();
}
