/* prompt.c: from a request body to the prompt: OpenAI chat messages and
 * Anthropic messages become one normalized OpenAI-style list that the Qwen
 * template (src/chat) renders, then token ids.
 *
 * Normalization does what the template cannot: every system and developer
 * message, wherever it is (Claude Code sends them mid-conversation), and
 * Anthropic's `system` are merged, in order, into one leading system turn;
 * `reasoning` is accepted for `reasoning_content`; Anthropic content blocks
 * become content, reasoning, tool calls and tool messages. Images, audio and
 * documents are refused with a 400 that names the block: the models q36
 * serves read text only.
 *
 * Tool choice without constrained decoding: `none` drops the tools from the
 * prompt and the parser; a named tool (or `required` / `any`) turns thinking
 * off and ends the prompt with the start of the call, so that the model
 * continues inside it.
 */
#include "srv_internal.h"
#include "../chat/chat.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_prompt_free(srv_prompt *p)
{
    cJSON_Delete(p->messages);
    cJSON_Delete(p->tools);
    free(p->text);
    free(p->ids);
    memset(p, 0, sizeof *p);
}

void srv_content_text(srv_error *e, const cJSON *content, const char *path, q36_buf *b)
{
    if (!content || cJSON_IsNull(content))
        return;
    if (cJSON_IsString(content)) {
        q36_buf_str(b, content->valuestring);
        return;
    }
    const cJSON *part;
    int i = 0;
    cJSON_ArrayForEach(part, content) {
        char pp[96];
        snprintf(pp, sizeof pp, "%s[%d]", path, i++);
        const cJSON *ty = rq_get(e, part, pp, "type", RQ_STR, true);
        if (!ty)
            return;
        if (!strcmp(ty->valuestring, "text") || !strcmp(ty->valuestring, "input_text") ||
            !strcmp(ty->valuestring, "output_text") || !strcmp(ty->valuestring, "summary_text") ||
            !strcmp(ty->valuestring, "reasoning_text")) {
            const cJSON *t = rq_get(e, part, pp, "text", RQ_STR, true);
            if (t)
                q36_buf_str(b, t->valuestring);
        } else if (!strcmp(ty->valuestring, "image_url") || !strcmp(ty->valuestring, "image") ||
                   !strcmp(ty->valuestring, "input_image") || !strcmp(ty->valuestring, "input_audio") ||
                   !strcmp(ty->valuestring, "document") || !strcmp(ty->valuestring, "file")) {
            srv_fail(e, 400, "invalid_request_error", pp,
                     "'%s': content of type '%s' is not supported: this server's model reads text only",
                     pp, ty->valuestring);
            return;
        } else {
            srv_fail(e, 400, "invalid_request_error", pp, "'%s.type': expected 'text', found '%.60s'", pp,
                     ty->valuestring);
            return;
        }
    }
}

static void add_system(q36_buf *sys, const char *t)
{
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\n'))
        n--;
    if (!n)
        return;
    if (sys->n)
        q36_buf_str(sys, "\n\n");
    q36_buf_add(sys, t, n);
}

static cJSON *msg(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    if (content)
        cJSON_AddStringToObject(m, "content", content);
    else
        cJSON_AddNullToObject(m, "content");
    return m;
}

/* The length of the volatile stamp at the start of a system prompt: some
 * clients (Claude Code) open it with a per-request billing stamp,
 * "x-anthropic-billing-header: cc_version=...; cc_entrypoint=cli; cch=XXXXX;"
 * (often a system block of its own, so that the text after it may follow on
 * the same line), which differs on every request and would end the cached
 * prefix at the system prompt's first tokens. It means nothing to the
 * model: the stamp (its key=value; fields) and the white space after it are
 * dropped from the prompt. */
static size_t volatile_head(const char *t, size_t n)
{
    static const char stamp[] = "x-anthropic-billing-header:";
    size_t i = 0;
    while (n - i >= sizeof stamp - 1 && !strncmp(t + i, stamp, sizeof stamp - 1)) {
        i += sizeof stamp - 1;
        for (;;) {                           /* fields: " key=value;" */
            size_t k = i;
            while (k < n && t[k] == ' ')
                k++;
            size_t key = k;
            while (k < n && (isalnum((unsigned char)t[k]) || t[k] == '_' || t[k] == '-' || t[k] == '.'))
                k++;
            if (k == key || k == n || t[k] != '=')
                break;
            while (k < n && t[k] != ';' && t[k] != '\n')
                k++;
            if (k == n || t[k] != ';')
                break;
            i = k + 1;
        }
        while (i < n && isspace((unsigned char)t[i]))
            i++;
    }
    return i;
}

static void finish_messages(srv_error *e, srv_prompt *p, cJSON *list, q36_buf *sys)
{
    if (sys->oom)
        srv_fail(e, 500, "server_error", "", "out of memory");
    size_t skip = sys->n ? volatile_head(sys->p, sys->n) : 0;
    if (sys->n > skip)
        cJSON_InsertItemInArray(list, 0, msg("system", sys->p + skip));
    p->messages = list;
    q36_buf_free(sys);
}

/* ---- tools and tool_choice ------------------------------------------------------------------- */

static bool tool_named(const cJSON *tools, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(f, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            return true;
    }
    return false;
}

static void choose(srv_error *e, srv_prompt *p, const char *choice, const char *name, const char *path)
{
    if (!strcmp(choice, "none")) {
        cJSON_Delete(p->tools);
        p->tools = NULL;
    } else if (!strcmp(choice, "required") || !strcmp(choice, "any")) {
        p->require_tool = true;
    } else if (name) {
        if (!p->tools || !tool_named(p->tools, name)) {
            srv_fail(e, 400, "invalid_request_error", path, "'%s': names the tool '%.100s', which is not in 'tools'",
                     path, name);
            return;
        }
        snprintf(p->forced_tool, sizeof p->forced_tool, "%s", name);
    } else if (strcmp(choice, "auto")) {
        srv_fail(e, 400, "invalid_request_error", path,
                 "'%s': expected auto, none, required or a named tool, found '%.60s'", path, choice);
    }
    if ((p->require_tool || p->forced_tool[0]) && !p->tools)
        srv_fail(e, 400, "invalid_request_error", path, "'%s': a tool is required but 'tools' is empty", path);
    if (p->require_tool && cJSON_GetArraySize(p->tools) == 1) {
        /* One tool to choose from: required means that one, named. */
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(p->tools, 0), "function");
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name"));
        if (n && strlen(n) < sizeof p->forced_tool) {
            snprintf(p->forced_tool, sizeof p->forced_tool, "%s", n);
            p->require_tool = false;
        }
    }
}

static void openai_tools(srv_error *e, const cJSON *body, srv_prompt *p)
{
    const cJSON *tools = rq_get(e, body, "", "tools", RQ_ARR | RQ_NULL, false);
    if (tools && cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0) {
        const cJSON *t;
        int i = 0;
        cJSON_ArrayForEach(t, tools) {
            char tp[64];
            snprintf(tp, sizeof tp, "tools[%d]", i++);
            const cJSON *ty = rq_get(e, t, tp, "type", RQ_STR, false);
            if (ty && strcmp(ty->valuestring, "function")) {
                srv_fail(e, 400, "invalid_request_error", tp, "'%s.type': expected 'function', found '%.60s'",
                         tp, ty->valuestring);
                return;
            }
            const cJSON *f = rq_get(e, t, tp, "function", RQ_OBJ, true);
            char fp[80];
            snprintf(fp, sizeof fp, "%s.function", tp);
            rq_get(e, f, fp, "name", RQ_STR, true);
            rq_get(e, f, fp, "parameters", RQ_OBJ, false);
        }
        if (!e->status)
            p->tools = cJSON_Duplicate(tools, true);
    }
    bool parallel = true;
    rq_bool(e, body, "", "parallel_tool_calls", &parallel);
    p->single_call = !parallel;
    const cJSON *tc = rq_get(e, body, "", "tool_choice", RQ_STR | RQ_OBJ, false);
    if (cJSON_IsString(tc)) {
        choose(e, p, tc->valuestring, NULL, "tool_choice");
    } else if (tc) {
        const cJSON *f = rq_get(e, tc, "tool_choice", "function", RQ_OBJ, true);
        const cJSON *n = rq_get(e, f, "tool_choice.function", "name", RQ_STR, true);
        if (n)
            choose(e, p, "function", n->valuestring, "tool_choice.function.name");
    }
}

/* ---- OpenAI ------------------------------------------------------------------------------------- */

void srv_prompt_openai(srv_error *e, const cJSON *body, srv_prompt *p)
{
    p->enable_thinking = -1;
    p->preserve_thinking = true;
    const cJSON *msgs = rq_get(e, body, "", "messages", RQ_ARR, true);
    if (msgs && cJSON_GetArraySize(msgs) == 0)
        srv_fail(e, 400, "invalid_request_error", "messages", "'messages': expected at least one message, found none");
    cJSON *list = cJSON_CreateArray();
    q36_buf sys = { 0 };
    const cJSON *m;
    int i = 0;
    cJSON_ArrayForEach(m, msgs) {
        if (e->status)
            break;
        char mp[48], cp[64];
        snprintf(mp, sizeof mp, "messages[%d]", i);
        snprintf(cp, sizeof cp, "messages[%d].content", i++);
        if (!cJSON_IsObject(m)) {
            srv_fail(e, 400, "invalid_request_error", mp, "'%s': expected an object, found %s", mp, rq_type_name(m));
            break;
        }
        const cJSON *role = rq_get(e, m, mp, "role", RQ_STR, true);
        const cJSON *content = rq_get(e, m, mp, "content", RQ_STR | RQ_ARR | RQ_NULL, false);
        if (!role)
            break;
        q36_buf text = { 0 };
        srv_content_text(e, content, cp, &text);
        const char *r = role->valuestring;
        if (!strcmp(r, "system") || !strcmp(r, "developer")) {
            add_system(&sys, text.p ? text.p : "");
        } else if (!strcmp(r, "user") || !strcmp(r, "tool")) {
            cJSON_AddItemToArray(list, msg(r, text.p ? text.p : ""));
        } else if (!strcmp(r, "assistant")) {
            cJSON *a = msg("assistant", text.p ? text.p : "");
            const cJSON *rc = rq_get(e, m, mp, "reasoning_content", RQ_STR | RQ_NULL, false);
            if (!rc)
                rc = rq_get(e, m, mp, "reasoning", RQ_STR | RQ_NULL, false);
            if (cJSON_IsString(rc))
                cJSON_AddStringToObject(a, "reasoning_content", rc->valuestring);
            const cJSON *calls = rq_get(e, m, mp, "tool_calls", RQ_ARR | RQ_NULL, false);
            const cJSON *c;
            int k = 0;
            cJSON_ArrayForEach(c, calls) {
                char fp[96];
                snprintf(fp, sizeof fp, "%s.tool_calls[%d].function", mp, k++);
                const cJSON *f = rq_get(e, c, fp, "function", RQ_OBJ, true);
                rq_get(e, f, fp, "name", RQ_STR, true);
                const cJSON *args = rq_get(e, f, fp, "arguments", RQ_STR | RQ_OBJ, false);
                if (cJSON_IsString(args)) {
                    cJSON *parsed = cJSON_Parse(args->valuestring);
                    if (!cJSON_IsObject(parsed))
                        srv_fail(e, 400, "invalid_request_error", fp,
                                 "'%s.arguments': expected a JSON object in the string, found '%.80s'", fp,
                                 args->valuestring);
                    cJSON_Delete(parsed);
                }
            }
            if (cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0)
                cJSON_AddItemToObject(a, "tool_calls", cJSON_Duplicate(calls, true));
            cJSON_AddItemToArray(list, a);
        } else {
            srv_fail(e, 400, "invalid_request_error", mp,
                     "'%s.role': expected system, developer, user, assistant or tool, found '%.60s'", mp, r);
        }
        q36_buf_free(&text);
    }
    finish_messages(e, p, list, &sys);
    openai_tools(e, body, p);

    const cJSON *kw = rq_get(e, body, "", "chat_template_kwargs", RQ_OBJ, false);
    const cJSON *et = rq_get(e, kw, "chat_template_kwargs", "enable_thinking", RQ_BOOL, false);
    if (et)
        p->enable_thinking = cJSON_IsTrue(et);
    rq_bool(e, kw, "chat_template_kwargs", "preserve_thinking", &p->preserve_thinking);
    const cJSON *re = rq_get(e, body, "", "reasoning_effort", RQ_STR | RQ_NULL, false);
    if (cJSON_IsString(re)) {
        const char *v = re->valuestring;
        if (!strcmp(v, "none"))
            p->enable_thinking = 0;
        else if (strcmp(v, "minimal") && strcmp(v, "low") && strcmp(v, "medium") && strcmp(v, "high") &&
                 strcmp(v, "xhigh"))
            srv_fail(e, 400, "invalid_request_error", "reasoning_effort",
                     "'reasoning_effort': expected none, minimal, low, medium or high, found '%.40s'", v);
    }
    const cJSON *rf = rq_get(e, body, "", "response_format", RQ_OBJ, false);
    const cJSON *rft = rq_get(e, rf, "response_format", "type", RQ_STR, rf != NULL);
    if (rft && strcmp(rft->valuestring, "text"))
        srv_fail(e, 400, "invalid_request_error", "response_format",
                 "'response_format': type '%.40s' is not supported: q36 has no constrained decoding yet; use 'text'",
                 rft->valuestring);
}

/* ---- Anthropic ----------------------------------------------------------------------------------- */

static void anthropic_tools(srv_error *e, const cJSON *body, srv_prompt *p)
{
    const cJSON *tools = rq_get(e, body, "", "tools", RQ_ARR, false);
    const cJSON *t;
    int i = 0;
    cJSON *out = cJSON_CreateArray();
    cJSON_ArrayForEach(t, tools) {
        char tp[48];
        snprintf(tp, sizeof tp, "tools[%d]", i++);
        const cJSON *name = rq_get(e, t, tp, "name", RQ_STR, true);
        const cJSON *schema = rq_get(e, t, tp, "input_schema", RQ_OBJ, false);
        const cJSON *desc = rq_get(e, t, tp, "description", RQ_STR, false);
        if (!name || !schema)
            continue;                       /* server tools (web search, ...) have no schema */
        cJSON *f = cJSON_CreateObject(), *w = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", name->valuestring);
        if (desc)
            cJSON_AddStringToObject(f, "description", desc->valuestring);
        cJSON_AddItemToObject(f, "parameters", cJSON_Duplicate(schema, true));
        cJSON_AddStringToObject(w, "type", "function");
        cJSON_AddItemToObject(w, "function", f);
        cJSON_AddItemToArray(out, w);
    }
    if (cJSON_GetArraySize(out) > 0)
        p->tools = out;
    else
        cJSON_Delete(out);
    const cJSON *tc = rq_get(e, body, "", "tool_choice", RQ_OBJ, false);
    const cJSON *ty = rq_get(e, tc, "tool_choice", "type", RQ_STR, tc != NULL);
    rq_bool(e, tc, "tool_choice", "disable_parallel_tool_use", &p->single_call);
    if (ty) {
        const char *v = ty->valuestring;
        if (!strcmp(v, "tool")) {
            const cJSON *n = rq_get(e, tc, "tool_choice", "name", RQ_STR, true);
            if (n)
                choose(e, p, "tool", n->valuestring, "tool_choice.name");
        } else if (!strcmp(v, "auto") || !strcmp(v, "any") || !strcmp(v, "none")) {
            choose(e, p, v, NULL, "tool_choice.type");
        } else {
            srv_fail(e, 400, "invalid_request_error", "tool_choice.type",
                     "'tool_choice.type': expected auto, any, tool or none, found '%.40s'", v);
        }
    }
}

static const char *last_role(const cJSON *list)
{
    const cJSON *m = cJSON_GetArrayItem(list, cJSON_GetArraySize(list) - 1);
    const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
    return r ? r : "";
}

/* One Anthropic message's blocks into the normalized list. */
static void anthropic_message(srv_error *e, const cJSON *m, const char *mp, cJSON *list, q36_buf *sys)
{
    const cJSON *role = rq_get(e, m, mp, "role", RQ_STR, true);
    const cJSON *content = rq_get(e, m, mp, "content", RQ_STR | RQ_ARR, true);
    if (!role || !content)
        return;
    const char *r = role->valuestring;
    char cp[64];
    snprintf(cp, sizeof cp, "%s.content", mp);
    bool user = !strcmp(r, "user"), asst = !strcmp(r, "assistant");
    if (!user && !asst && strcmp(r, "system")) {
        srv_fail(e, 400, "invalid_request_error", mp, "'%s.role': expected user or assistant, found '%.60s'", mp, r);
        return;
    }
    if (cJSON_IsString(content)) {
        if (!user && !asst)
            add_system(sys, content->valuestring);
        else
            cJSON_AddItemToArray(list, msg(r, content->valuestring));
        return;
    }
    q36_buf text = { 0 }, reasoning = { 0 };
    cJSON *calls = NULL;
    const cJSON *b;
    int i = 0;
    cJSON_ArrayForEach(b, content) {
        char bp[96];
        snprintf(bp, sizeof bp, "%s[%d]", cp, i++);
        const cJSON *ty = rq_get(e, b, bp, "type", RQ_STR, true);
        if (!ty)
            break;
        const char *t = ty->valuestring;
        if (!strcmp(t, "text")) {
            const cJSON *x = rq_get(e, b, bp, "text", RQ_STR, true);
            if (x)
                q36_buf_str(&text, x->valuestring);
        } else if (!strcmp(t, "thinking") && asst) {
            const cJSON *x = rq_get(e, b, bp, "thinking", RQ_STR, true);
            if (x)
                q36_buf_str(&reasoning, x->valuestring);
        } else if (!strcmp(t, "redacted_thinking") && asst) {
            continue;
        } else if (!strcmp(t, "tool_use") && asst) {
            const cJSON *id = rq_get(e, b, bp, "id", RQ_STR, false);
            const cJSON *name = rq_get(e, b, bp, "name", RQ_STR, true);
            const cJSON *input = rq_get(e, b, bp, "input", RQ_OBJ, true);
            if (!name || !input)
                break;
            cJSON *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
            if (id)
                cJSON_AddStringToObject(c, "id", id->valuestring);
            cJSON_AddStringToObject(c, "type", "function");
            cJSON_AddStringToObject(f, "name", name->valuestring);
            cJSON_AddItemToObject(f, "arguments", cJSON_Duplicate(input, true));
            cJSON_AddItemToObject(c, "function", f);
            if (!calls)
                calls = cJSON_CreateArray();
            cJSON_AddItemToArray(calls, c);
        } else if (!strcmp(t, "tool_result") && user) {
            /* Results first, then the user's own text as a turn after them. */
            q36_buf res = { 0 };
            char rp[112];
            snprintf(rp, sizeof rp, "%s.content", bp);
            srv_content_text(e, rq_get(e, b, bp, "content", RQ_STR | RQ_ARR, false), rp, &res);
            cJSON_AddItemToArray(list, msg("tool", res.p ? res.p : ""));
            q36_buf_free(&res);
        } else if (!strcmp(t, "image") || !strcmp(t, "document")) {
            srv_fail(e, 400, "invalid_request_error", bp,
                     "'%s': content of type '%s' is not supported: this server's model reads text only", bp, t);
            break;
        } else {
            srv_fail(e, 400, "invalid_request_error", bp, "'%s.type': '%.60s' is not a block %s messages take",
                     bp, t, r);
            break;
        }
    }
    if (!e->status) {
        if (!user && !asst) {
            add_system(sys, text.p ? text.p : "");
        } else if (asst) {
            cJSON *a = msg("assistant", text.p ? text.p : "");
            if (reasoning.n)
                cJSON_AddStringToObject(a, "reasoning_content", reasoning.p);
            if (calls) {
                cJSON_AddItemToObject(a, "tool_calls", calls);
                calls = NULL;
            }
            cJSON_AddItemToArray(list, a);
        } else if (text.n || strcmp(last_role(list), "tool")) {
            cJSON_AddItemToArray(list, msg("user", text.p ? text.p : ""));
        }
    }
    cJSON_Delete(calls);
    q36_buf_free(&text);
    q36_buf_free(&reasoning);
}

void srv_prompt_anthropic(srv_error *e, const cJSON *body, srv_prompt *p)
{
    p->enable_thinking = -1;
    p->preserve_thinking = true;
    q36_buf sys = { 0 };
    const cJSON *system = rq_get(e, body, "", "system", RQ_STR | RQ_ARR, false);
    if (system) {
        q36_buf t = { 0 };
        srv_content_text(e, system, "system", &t);
        add_system(&sys, t.p ? t.p : "");
        q36_buf_free(&t);
    }
    const cJSON *msgs = rq_get(e, body, "", "messages", RQ_ARR, true);
    if (msgs && cJSON_GetArraySize(msgs) == 0)
        srv_fail(e, 400, "invalid_request_error", "messages", "'messages': expected at least one message, found none");
    cJSON *list = cJSON_CreateArray();
    const cJSON *m;
    int i = 0;
    cJSON_ArrayForEach(m, msgs) {
        if (e->status)
            break;
        char mp[48];
        snprintf(mp, sizeof mp, "messages[%d]", i++);
        if (!cJSON_IsObject(m)) {
            srv_fail(e, 400, "invalid_request_error", mp, "'%s': expected an object, found %s", mp, rq_type_name(m));
            break;
        }
        anthropic_message(e, m, mp, list, &sys);
    }
    finish_messages(e, p, list, &sys);
    anthropic_tools(e, body, p);
    const cJSON *th = rq_get(e, body, "", "thinking", RQ_OBJ, false);
    const cJSON *tt = rq_get(e, th, "thinking", "type", RQ_STR, th != NULL);
    if (tt) {
        if (!strcmp(tt->valuestring, "disabled"))
            p->enable_thinking = 0;
        else if (!strcmp(tt->valuestring, "enabled") || !strcmp(tt->valuestring, "adaptive"))
            p->enable_thinking = 1;
        else
            srv_fail(e, 400, "invalid_request_error", "thinking.type",
                     "'thinking.type': expected enabled, disabled or adaptive, found '%.40s'", tt->valuestring);
    }
}

/* ---- rendering ------------------------------------------------------------------------------------ */

void srv_prompt_render(srv_error *e, const tok_vocab *tok, srv_prompt *p)
{
    if (e->status)
        return;
    bool force = p->forced_tool[0] || p->require_tool;
    chat_opts o = { .add_generation_prompt = true, .enable_thinking = force ? 0 : p->enable_thinking,
                    .preserve_thinking = p->preserve_thinking };
    q36_err err = { 0 };
    char *text = NULL;
    size_t len = 0;
    if (chat_render(p->messages, p->tools, &o, &text, &len, &err)) {
        srv_fail(e, err.kind == CHAT_E_TEMPLATE ? 400 : 500,
                 err.kind == CHAT_E_TEMPLATE ? "invalid_request_error" : "server_error", "messages",
                 "the chat template refused the messages: %s", err.msg);
        return;
    }
    q36_buf b = { .p = text, .n = len, .cap = len + 1 };
    if (p->forced_tool[0])
        snprintf(p->prefix, sizeof p->prefix, "<tool_call>\n<function=%s>\n", p->forced_tool);
    else if (p->require_tool)
        snprintf(p->prefix, sizeof p->prefix, "<tool_call>\n<function=");
    q36_buf_str(&b, p->prefix);
    if (b.oom) {
        q36_buf_free(&b);
        srv_fail(e, 500, "server_error", "", "out of memory rendering the prompt");
        return;
    }
    p->text = b.p;
    p->len = b.n;
    p->in_thinking = !force && o.enable_thinking != 0;
    p->parse_tools = p->tools != NULL;
    if (!tok)
        return;
    size_t n = 0;
    if (tok_encode(tok, p->text, p->len, true, &p->ids, &n, &err)) {
        srv_fail(e, 500, "server_error", "", "tokenizing the prompt failed: %s", err.msg);
        return;
    }
    p->n_ids = (int)n;
}
