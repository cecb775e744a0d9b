/* sse.c: Server-Sent Events framing: one JSON object per `data:` line, with
 * an `event:` line for the Anthropic stream (its SDK dispatches on it).
 * cJSON prints without newlines, so an object is always one line.
 */
#include "srv_internal.h"

void sse_data(q36_buf *out, cJSON *v)
{
    q36_buf_str(out, "data: ");
    srv_buf_json(out, v);
    q36_buf_str(out, "\n\n");
    cJSON_Delete(v);
}

void sse_event(q36_buf *out, const char *name, cJSON *v)
{
    q36_buf_str(out, "event: ");
    q36_buf_str(out, name);
    q36_buf_str(out, "\n");
    sse_data(out, v);
}
