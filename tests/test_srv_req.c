/* test_srv_req.c: the server's request reading without a server: a table of
 * broken request bodies, OpenAI and Anthropic, each read the way its route
 * reads it (model, messages, template, sampling fields, context), with the
 * status, error type, field path and message words it must give; the first
 * error wins; good bodies pass and normalize as documented (system and
 * developer messages anywhere merged into one leading system turn).
 * Like the GGUF reader's table of broken files (test_gguf.c).
 */
#include "test.h"
#include "server/srv_internal.h"

static srv S;

/* Reads body as its route does, up to the rendered prompt. */
static void read_body(enum srv_flavour f, const char *body, srv_error *e, srv_prompt *p, srv_job *j)
{
    cJSON *b = rq_parse(e, body, strlen(body));
    if (!b)
        return;
    srv_check_model(e, &S, b, false);
    if (f == SRV_ANTHROPIC)
        srv_prompt_anthropic(e, b, p);
    else
        srv_prompt_openai(e, b, p);
    srv_prompt_render(e, NULL, p);
    srv_gen_fields(e, &S, b, j, f);
    cJSON_Delete(b);
}

typedef struct bcase {
    const char *name;
    enum srv_flavour f;
    const char *body;
    int status;
    const char *type, *param, *words;
} bcase;

#define OA SRV_OPENAI
#define AN SRV_ANTHROPIC
#define IRE "invalid_request_error"
#define U "[{\"role\":\"user\",\"content\":\"hi\"}]"

static const bcase broken[] = {
    { "not_json", OA, "{\"messages\": [", 400, IRE, "", "not valid JSON (at byte" },
    { "trailing_bytes", OA, "{} x", 400, IRE, "", "bytes after its JSON value (at byte 3" },
    { "body_array", OA, "[1]", 400, IRE, "", "expected a JSON object, found an array" },
    { "body_empty", OA, "", 400, IRE, "", "the request body is empty" },
    { "no_messages", OA, "{}", 400, IRE, "messages", "'messages': required, expected an array" },
    { "messages_string", OA, "{\"messages\":\"hi\"}", 400, IRE, "messages", "expected an array, found a string" },
    { "messages_empty", OA, "{\"messages\":[]}", 400, IRE, "messages", "at least one message" },
    { "message_number", OA, "{\"messages\":[5]}", 400, IRE, "messages[0]", "'messages[0]': expected an object, found a number" },
    { "content_number", OA, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":7}]}",
      400, IRE, "messages[1].content", "'messages[1].content': expected a string or an array or null, found a number" },
    { "role_unknown", OA, "{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", 400, IRE, "messages[0]",
      "found 'robot'" },
    { "role_missing", OA, "{\"messages\":[{\"content\":\"x\"}]}", 400, IRE, "messages[0].role", "'messages[0].role': required" },
    { "part_no_type", OA, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]}", 400, IRE,
      "messages[0].content[0].type", "required, expected a string" },
    { "part_image", OA, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}", 400,
      IRE, "messages[0].content[0]", "content of type 'image_url' is not supported" },
    { "call_arguments_not_json", OA, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\","
      "\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{oops\"}}]}]}", 400, IRE,
      "messages[1].tool_calls[0].function", "expected a JSON object in the string" },
    { "temperature_string", OA, "{\"messages\":" U ",\"temperature\":\"hot\"}", 400, IRE, "temperature",
      "'temperature': expected a number, found a string" },
    { "temperature_range", OA, "{\"messages\":" U ",\"temperature\":1e9}", 400, IRE, "temperature",
      "expected a number in [0, 100], found 1e+09" },
    { "top_k_fraction", OA, "{\"messages\":" U ",\"top_k\":1.5}", 400, IRE, "top_k", "expected an integer, found 1.5" },
    { "max_tokens_zero", OA, "{\"messages\":" U ",\"max_tokens\":0}", 400, IRE, "max_tokens", "expected at least 1" },
    { "stop_number", OA, "{\"messages\":" U ",\"stop\":[1]}", 400, IRE, "stop", "'stop[0]': expected a string, found a number" },
    { "stop_too_many", OA, "{\"messages\":" U ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\","
      "\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}", 400, IRE, "stop", "at most 16 strings, found 17" },
    { "n_two", OA, "{\"messages\":" U ",\"n\":2}", 400, IRE, "n", "only 1 choice" },
    { "top_logprobs_alone", OA, "{\"messages\":" U ",\"top_logprobs\":2}", 400, IRE, "top_logprobs", "needs 'logprobs': true" },
    { "top_logprobs_range", OA, "{\"messages\":" U ",\"logprobs\":true,\"top_logprobs\":99}", 400, IRE, "top_logprobs",
      "in [0, 20]" },
    { "model_unknown", OA, "{\"model\":\"gpt-9\",\"messages\":" U "}", 404, "not_found_error", "model",
      "'model': 'gpt-9' is not served here" },
    { "model_number", OA, "{\"model\":5,\"messages\":" U "}", 400, IRE, "model", "'model': expected a string, found a number" },
    { "json_schema", OA, "{\"messages\":" U ",\"response_format\":{\"type\":\"json_schema\"}}", 400, IRE,
      "response_format", "'json_schema' is not supported" },
    { "tool_choice_unknown_name", OA, "{\"messages\":" U ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
      "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", 400, IRE, "tool_choice.function.name",
      "names the tool 'g', which is not in 'tools'" },
    { "tool_choice_required_no_tools", OA, "{\"messages\":" U ",\"tool_choice\":\"required\"}", 400, IRE, "tool_choice",
      "'tools' is empty" },
    { "tool_choice_word", OA, "{\"messages\":" U ",\"tool_choice\":\"sometimes\"}", 400, IRE, "tool_choice",
      "expected auto, none, required or a named tool, found 'sometimes'" },
    { "tool_not_function", OA, "{\"messages\":" U ",\"tools\":[{\"type\":\"web\",\"function\":{\"name\":\"f\"}}]}", 400, IRE,
      "tools[0]", "'tools[0].type': expected 'function', found 'web'" },
    { "tool_no_name", OA, "{\"messages\":" U ",\"tools\":[{\"type\":\"function\",\"function\":{}}]}", 400, IRE,
      "tools[0].function.name", "required" },
    { "reasoning_effort_word", OA, "{\"messages\":" U ",\"reasoning_effort\":\"max\"}", 400, IRE, "reasoning_effort",
      "found 'max'" },
    { "enable_thinking_string", OA, "{\"messages\":" U ",\"chat_template_kwargs\":{\"enable_thinking\":\"yes\"}}", 400, IRE,
      "chat_template_kwargs.enable_thinking", "expected a boolean, found a string" },
    { "template_no_user", OA, "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"}]}", 400, IRE, "messages",
      "No user query found in messages." },
    { "first_error_wins", OA, "{\"temperature\":\"hot\",\"model\":7}", 400, IRE, "model", "'model': expected a string" },
    { "an_no_max_tokens", AN, "{\"messages\":" U "}", 400, IRE, "max_tokens", "'max_tokens': required, expected a number" },
    { "an_max_tokens_zero", AN, "{\"max_tokens\":0,\"messages\":" U "}", 400, IRE, "max_tokens", "in [1, " },
    { "an_image", AN, "{\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}",
      400, IRE, "messages[0].content[0]", "content of type 'image' is not supported" },
    { "an_tool_use_from_user", AN, "{\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\","
      "\"id\":\"x\",\"name\":\"f\",\"input\":{}}]}]}", 400, IRE, "messages[0].content[0]", "'tool_use' is not a block user messages take" },
    { "an_tool_use_no_input", AN, "{\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\","
      "\"content\":[{\"type\":\"tool_use\",\"name\":\"f\"}]}]}", 400, IRE, "messages[1].content[0].input", "required, expected an object" },
    { "an_role", AN, "{\"max_tokens\":4,\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", 400, IRE, "messages[0]",
      "expected user or assistant, found 'tool'" },
    { "an_stop_sequences_string", AN, "{\"max_tokens\":4,\"messages\":" U ",\"stop_sequences\":\"x\"}", 400, IRE,
      "stop_sequences", "expected an array, found a string" },
    { "an_thinking_type", AN, "{\"max_tokens\":4,\"messages\":" U ",\"thinking\":{\"type\":\"maybe\"}}", 400, IRE,
      "thinking.type", "found 'maybe'" },
    { "an_tool_choice_type", AN, "{\"max_tokens\":4,\"messages\":" U ",\"tool_choice\":{\"type\":\"some\"}}", 400, IRE,
      "tool_choice.type", "expected auto, any, tool or none" },
    { "an_system_number", AN, "{\"max_tokens\":4,\"system\":3,\"messages\":" U "}", 400, IRE, "system",
      "expected a string or an array, found a number" },
};

static void test_broken(void)
{
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        const bcase *c = &broken[i];
        char name[96];
        snprintf(name, sizeof name, "srv_req.broken.%s", c->name);
        srv_error e = { 0 };
        srv_prompt p = { 0 };
        srv_job *j = srv_job_new();
        read_body(c->f, c->body, &e, &p, j);
        if (e.status != c->status || !e.type || strcmp(e.type, c->type) || strcmp(e.param, c->param) ||
            !strstr(e.msg, c->words))
            t_fail(name, "expected %d %s '%s' with '%s'; found %d %s '%s': %s", c->status, c->type, c->param,
                   c->words, e.status, e.type ? e.type : "-", e.param, e.msg);
        else
            t_ok(name);
        srv_prompt_free(&p);
        srv_job_unref(j);
    }
}

static void test_good(void)
{
    srv_error e = { 0 };
    srv_prompt p = { 0 };
    srv_job *j = srv_job_new();
    read_body(OA, "{\"model\":\"m.gguf\",\"messages\":[{\"role\":\"user\",\"content\":\"Q1\"},"
                  "{\"role\":\"developer\",\"content\":\"D\"},{\"role\":\"assistant\",\"content\":\"A\"},"
                  "{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"Q2\"}],"
                  "\"stop\":\"x\",\"max_completion_tokens\":9,\"seed\":3,\"temperature\":0.5}", &e, &p, j);
    t_check("srv_req.good.openai", !e.status && p.text &&
            !strncmp(p.text, "<|im_start|>system\nD\n\nS<|im_end|>\n<|im_start|>user\nQ1<|im_end|>", 52) &&
            j->gp.n_predict == 9 && j->gp.n_stop == 1 && j->gp.smp.seed == 3 && j->gp.smp.temp == 0.5f,
            "%d %s / %s", e.status, e.msg, p.text ? p.text : "(no text)");
    srv_prompt_free(&p);
    srv_job_unref(j);

    memset(&e, 0, sizeof e);
    j = srv_job_new();
    read_body(AN, "{\"max_tokens\":5,\"system\":[{\"type\":\"text\",\"text\":\"S\"}],\"thinking\":{\"type\":\"disabled\"},"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"Q\"},{\"role\":\"assistant\",\"content\":["
                  "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{\"k\":1}}]},{\"role\":\"user\","
                  "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"R\"}]}]}", &e, &p, j);
    t_check("srv_req.good.anthropic", !e.status && p.text && strstr(p.text, "<tool_response>\nR\n</tool_response>") &&
            strstr(p.text, "<function=f>\n<parameter=k>\n1\n</parameter>") &&
            strstr(p.text, "<|im_start|>assistant\n<think>\n\n</think>\n\n") && j->gp.n_predict == 5,
            "%d %s / %s", e.status, e.msg, p.text ? p.text : "(no text)");
    srv_prompt_free(&p);

    /* The context check: both numbers, and the budget clamped to the room left. */
    memset(&e, 0, sizeof e);
    j->n_prompt = 4096;
    srv_fit_context(&e, &S, j);
    t_check("srv_req.context_over", e.status == 400 && e.n_prompt == 4096 && e.n_ctx == 4096 &&
            strstr(e.msg, "prompt is too long: 4096 tokens > 4095 maximum"), "%d: %s", e.status, e.msg);
    memset(&e, 0, sizeof e);
    j->n_prompt = 4000;
    j->gp.n_predict = -1;
    srv_fit_context(&e, &S, j);
    t_check("srv_req.context_clamps_budget", !e.status && j->gp.n_predict == 96, "n_predict %d", j->gp.n_predict);
    srv_job_unref(j);

    /* One call at most: the first </tool_call> stops the reply. */
    const char *single[2] = {
        "{\"messages\":" U ",\"parallel_tool_calls\":false,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}",
        "{\"max_tokens\":4,\"messages\":" U ",\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],"
        "\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}" };
    for (int k = 0; k < 2; k++) {
        memset(&e, 0, sizeof e);
        srv_prompt q = { 0 };
        j = srv_job_new();
        read_body(k ? AN : OA, single[k], &e, &q, j);
        srv_single_call(j, &q);
        t_check(k ? "srv_req.single_call_anthropic" : "srv_req.single_call_openai",
                !e.status && j->call_stop == 0 && j->gp.n_stop == 1 && !strcmp(j->gp.stop[0], "</tool_call>"),
                "%d %s: call_stop %d", e.status, e.msg, j->call_stop);
        srv_prompt_free(&q);
        srv_job_unref(j);
    }

    /* required with one tool is that tool, named: the prompt ends inside its call. */
    memset(&e, 0, sizeof e);
    srv_prompt q = { 0 };
    j = srv_job_new();
    read_body(OA, "{\"messages\":" U ",\"tool_choice\":\"required\",\"tools\":[{\"type\":\"function\","
                  "\"function\":{\"name\":\"only\"}}]}", &e, &q, j);
    size_t tl = q.text ? strlen(q.text) : 0;
    t_check("srv_req.required_one_tool_is_named", !e.status && tl > 40 &&
            !strcmp(q.text + tl - 28, "<tool_call>\n<function=only>\n"), "%d %s / %s", e.status, e.msg,
            q.text ? q.text + (tl > 60 ? tl - 60 : 0) : "(none)");
    srv_prompt_free(&q);
    srv_job_unref(j);

    /* --alias '*' accepts any model name. */
    memset(&e, 0, sizeof e);
    S.o.aliases[0] = "*";
    S.o.n_aliases = 1;
    cJSON *b = cJSON_Parse("{\"model\":\"claude-sonnet-4-5\"}");
    srv_check_model(&e, &S, b, true);
    t_check("srv_req.alias_star_any_model", !e.status, "%d: %s", e.status, e.msg);
    cJSON_Delete(b);
    S.o.n_aliases = 0;
}

int main(void)
{
    S.o.model_path = "/models/m.gguf";
    strcpy(S.model_id, "m.gguf");
    S.n_ctx = 4096;
    test_broken();
    test_good();
    return t_exit();
}
