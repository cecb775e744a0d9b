/* chat.h: the Qwen3.5/3.6 chat template rendered in C, and the parser
 * of what the model writes back (reasoning, answer, tool calls).
 *
 * The renderer reproduces the template Qwen ships with Qwen3.5 (llama.cpp
 * keeps a copy as models/templates/Qwen3.5-4B.jinja): ChatML turns, the
 * tools system block, <think> blocks for assistant turns after the last real
 * user query, tool calls as <tool_call><function=NAME><parameter=K>V...,
 * consecutive tool results in one user turn, and the generation prompt with
 * thinking on ("<think>\n") or off ("<think>\n\n</think>\n\n"). Where Jinja
 * engines differ, it follows Python's Jinja2 (which defines the template):
 * `trim` strips Python's whitespace, rstrip('\n')/lstrip('\n') strip only
 * newlines, an empty list is false, booleans print as True/False. It does
 * NOT interpret the GGUF's tokenizer.chat_template: a file whose template
 * differs from Qwen's gets Qwen's rendering (see chat_template_is_qwen35).
 *
 * Inputs are OpenAI-style cJSON values: messages [{role, content,
 * reasoning_content?, tool_calls?}], content a string, null or a list of
 * parts ({type:"text",text} / image / image_url / video); tool_calls
 * [{function:{name, arguments}}] with arguments an object or a JSON string.
 */
#ifndef Q36_CHAT_H
#define Q36_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "../util/err.h"

/* Error kinds (q36_err.kind); out of memory is Q36_E_NOMEM. */
enum chat_err_kind {
    CHAT_E_TEMPLATE = -801,  /* the template refused the messages (its own error text) */
};

typedef struct chat_opts {
    bool add_generation_prompt;
    int  enable_thinking;    /* -1: not given (thinking on), 0: false, 1: true */
    bool add_vision_id;      /* "Picture N: " / "Video N: " before media */
    bool preserve_thinking;  /* Qwen3.6's preserve_thinking: every assistant turn keeps
                                its <think> block, not only those after the last user
                                query (false: Qwen3.5's rendering, the default) */
} chat_opts;

/* Renders messages (and tools, NULL or a list) into a malloc'd,
 * NUL-terminated prompt. Returns 0, or CHAT_E_TEMPLATE with the template's own
 * error text ("No user query found in messages.", ...) in err. */
int chat_render(const cJSON *messages, const cJSON *tools, const chat_opts *o,
                    char **out, size_t *len, q36_err *err);

/* True when a GGUF's tokenizer.chat_template is the Qwen3.5/3.6 template
 * this renderer reproduces (recognised by its distinctive pieces). */
bool chat_template_is_qwen35(const char *tmpl, size_t len);

/* What the model wrote after the generation prompt, split up. */
typedef struct chat_reply {
    char  *reasoning;     /* text inside <think>...</think>, trimmed; "" if none */
    char  *content;       /* the answer, before any tool call, trimmed */
    cJSON *tool_calls;    /* [{type:"function", function:{name, arguments: "<json>"}}], or NULL */
    bool   complete;      /* false when </think> or </tool_call> never came */
} chat_reply;

/* Parses text[0..len). `in_thinking`: the prompt ended inside <think> (the
 * default generation prompt), so the text starts with reasoning. Parameter
 * values are JSON when they parse as JSON other than a bare string, else
 * strings. Returns 0 or Q36_E_NOMEM. */
int  chat_parse(const char *text, size_t len, bool in_thinking, chat_reply *out, q36_err *err);
void chat_reply_free(chat_reply *r);   /* accepts NULL, resets *r */

#endif
