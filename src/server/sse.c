/* sse.c: Server-Sent Events framing: one JSON object per `data:` line, with
 * an `event:` line for the Anthropic stream (its SDK dispatches on it).
 * cJSON prints without newlines, so an object is always one line.
 */
#include "srv_internal.h"

void sse_data(srv_buf *out, cJSON *v)
{
    srv_buf_str(out, "data: ");
    srv_buf_json(out, v);
    srv_buf_str(out, "\n\n");
    cJSON_Delete(v);
}

void sse_event(srv_buf *out, const char *name, cJSON *v)
{
    srv_buf_str(out, "event: ");
    srv_buf_str(out, name);
    srv_buf_str(out, "\n");
    sse_data(out, v);
}
