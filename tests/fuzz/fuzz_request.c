/* fuzz_request.c: libFuzzer target for the request-to-prompt path of the
 * server: a body is parsed (rq_parse), read as an OpenAI chat request or an
 * Anthropic messages request (the first byte picks), its sampling and limit
 * fields checked, and its messages rendered by the chat template. Every
 * refusal must be an error with a status, a type and a message.
 * Build and run: tests/fuzz_server.test.sh.
 */
#include "server/srv_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static srv s;
    if (!s.model_id[0]) {
        s.o.model_path = "model.gguf";
        strcpy(s.model_id, "model.gguf");
        s.n_ctx = 4096;
    }
    if (size < 1)
        return 0;
    enum srv_flavour f = data[0] & 1 ? SRV_ANTHROPIC : SRV_OPENAI;
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, (const char *)data + 1, size - 1);
    srv_prompt p = { 0 };
    srv_job *j = srv_job_new();
    if (body && j) {
        srv_check_model(&e, &s, body, false);
        if (f == SRV_ANTHROPIC)
            srv_prompt_anthropic(&e, body, &p);
        else
            srv_prompt_openai(&e, body, &p);
        srv_gen_fields(&e, &s, body, j, f);
        srv_prompt_render(&e, NULL, &p);
        if (!e.status && !p.text)
            abort();                          /* accepted but nothing rendered */
    }
    if (e.status) {
        if (e.status < 400 || e.status > 599 || !e.type || !e.msg[0])
            abort();                          /* an error without its parts */
        cJSON *j2 = srv_error_json(&e, f);
        char *t = cJSON_PrintUnformatted(j2);
        if (!t)
            abort();
        free(t);
        cJSON_Delete(j2);
    }
    srv_prompt_free(&p);
    srv_job_unref(j);
    cJSON_Delete(body);
    return 0;
}
