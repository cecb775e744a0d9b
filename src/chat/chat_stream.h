/* chat_stream.h: the incremental parser of what a Qwen3.5/3.6 model writes
 * after the generation prompt: reasoning, answer text and XML tool calls,
 * turned into events as the text arrives, one piece at a time.
 *
 * The model writes
 *     {reasoning}\n</think>\n\n{text}\n\n<tool_call>\n<function=NAME>\n
 *     <parameter=K>\n{value}\n</parameter>\n ... </function>\n</tool_call> ...
 * Reasoning ends at </think> or, implicitly, at <tool_call>; output that
 * did not start inside reasoning may still open with <think>. Each parameter
 * value is converted by the tool's JSON schema (parameters.properties[K]):
 * a string parameter stays the raw text (it may span lines and contain
 * anything, even "</function>", up to "</parameter>"); other types are parsed
 * as JSON, Python's True/False/None accepted; what does not parse stays a
 * string.
 *
 * Events are never retracted: text that may be the start of a tag (or
 * whitespace that may end a section) is held back until it cannot be; the
 * arguments of a call are sent one completed parameter at a time, so their
 * concatenation is the call's JSON object. Output that breaks the format
 * comes back as content text, never as an error.
 *
 * Ownership: a chat_stream copies what it needs from `tools` (may be NULL);
 * event text is a view valid during the callback only. One thread at a time.
 */
#ifndef Q36_CHAT_STREAM_H
#define Q36_CHAT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "../util/err.h"

enum chat_ev_kind {
    CHAT_EV_REASONING,   /* text: a piece of reasoning */
    CHAT_EV_CONTENT,     /* text: a piece of the answer */
    CHAT_EV_TOOL_BEGIN,  /* tool: its index; text: the function name */
    CHAT_EV_TOOL_ARGS,   /* tool; text: the next piece of its JSON arguments */
    CHAT_EV_TOOL_END,    /* tool: the call is complete (its arguments are closed) */
};

typedef struct chat_ev {
    enum chat_ev_kind kind;
    int               tool;    /* index of the call, 0, 1, ... */
    const char       *text;
    size_t            len;
} chat_ev;

/* Receives each event; returns nothing: a sink that fails records it itself. */
typedef void (*chat_ev_fn)(void *user, const chat_ev *ev);

typedef struct chat_stream chat_stream;

/* tools: the request's OpenAI-style tools ([{type:"function", function:{name,
 * parameters}}]) or NULL. parse_tools false: tool-call markup is plain
 * content. in_thinking: the prompt ended inside <think>, so output starts
 * with reasoning. Returns 0 or Q36_E_NOMEM. */
int  chat_stream_new(const cJSON *tools, bool parse_tools, bool in_thinking, chat_stream **out,
                     q36_err *err);
void chat_stream_free(chat_stream *cs);                      /* accepts NULL */

/* Feeds text[0..len) and sends the events it completes. */
void chat_stream_push(chat_stream *cs, const char *text, size_t len, chat_ev_fn fn, void *user);
/* The output has ended: flushes held text and closes an open call. */
void chat_stream_finish(chat_stream *cs, chat_ev_fn fn, void *user);

/* Calls begun so far. */
int  chat_stream_n_calls(const chat_stream *cs);
/* After chat_stream_finish: false when the output ended inside reasoning
 * (no </think>) or inside a call (no </tool_call>). */
bool chat_stream_complete(const chat_stream *cs);

/* Converts one parameter value by its property schema (NULL: unknown) into a
 * new cJSON value (see above); NULL only when out of memory. */
cJSON *chat_param_value(const char *v, size_t n, const cJSON *schema);

#endif
