/* fuzz_chat_stream.c: libFuzzer target for the incremental Qwen output
 * parser (src/chat/chat_stream.c). The first byte picks the flags (tools
 * parsed or not, output starting in reasoning or not) and the size of the
 * pieces the rest is fed in. Besides the sanitizers, it checks the parser's
 * promise: every call that ends has arguments that form one JSON object.
 * Build and run: tests/fuzz_server.test.sh.
 */
#include "chat/chat_stream.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":"
    "{\"s\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"},\"o\":{\"type\":\"object\"},"
    "\"u\":{\"type\":[\"string\",\"null\"]}}}}}]";

typedef struct acc {
    char  *args;
    size_t n;
} acc;

static void on_ev(void *user, const chat_ev *ev)
{
    acc *a = user;
    if (ev->kind == CHAT_EV_TOOL_BEGIN) {
        a->n = 0;
    } else if (ev->kind == CHAT_EV_TOOL_ARGS) {
        char *p = realloc(a->args, a->n + ev->len + 1);
        if (!p)
            abort();
        a->args = p;
        memcpy(a->args + a->n, ev->text, ev->len);
        a->n += ev->len;
        a->args[a->n] = 0;
    } else if (ev->kind == CHAT_EV_TOOL_END) {
        cJSON *j = cJSON_Parse(a->args ? a->args : "");
        if (!cJSON_IsObject(j))
            abort();                          /* the arguments are not one JSON object */
        cJSON_Delete(j);
        a->n = 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *tools;
    if (!tools)
        tools = cJSON_Parse(TOOLS);
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const char *text = (const char *)data + 1;
    size_t n = size - 1, piece = 1 + (flags >> 2);
    chat_stream *cs;
    if (chat_stream_new(tools, flags & 1, flags & 2, &cs, NULL))
        return 0;
    acc a = { 0 };
    for (size_t i = 0; i < n; i += piece)
        chat_stream_push(cs, text + i, n - i < piece ? n - i : piece, on_ev, &a);
    chat_stream_finish(cs, on_ev, &a);
    chat_stream_free(cs);
    free(a.args);
    return 0;
}
