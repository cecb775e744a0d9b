/* serve.c: `q36 serve`: flags, the API key file, signals, and the server of
 * src/server (srv.h) until SIGINT or SIGTERM. */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/server/srv.h"

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 serve [-m MODEL.gguf] [--host ADDR] [--port N] [-np N] [-c N] [flags]\n"
"\n"
"Serves the model over HTTP: OpenAI (/v1/chat/completions, /v1/completions,\n"
"/v1/models), Anthropic (/v1/messages, /v1/messages/count_tokens), and\n"
"/health, /metrics, /slots, /tokenize, /detokenize, /apply-template.\n"
"\n"
"  -m FILE              model (default: the embedded default model)\n"
"  --host ADDR          address to bind (default 127.0.0.1; 0.0.0.0 for every interface)\n"
"  --port N             port (default 8080; 0 = any free port)\n"
"  -np N                slots: requests decoded at once (default 4)\n"
"  -c N                 context per slot (default: training context, at most 4096)\n"
"  -t N                 threads of the engine, all slots together (default 0: every online CPU)\n"
"  -b N                 rows per forward pass: decode rows and prompt chunks of all\n"
"                       slots together (default 512)\n"
"  -ub N                prompt tokens of one slot per pass at most (default: -b)\n"
"  --cache-ram MiB      prefix cache budget (default 2048; 0: no prefix cache); refused\n"
"                       at start when the engine and the cache do not fit in memory\n"
"  --cache-every N      save the prompt's state every N tokens besides each chat turn\n"
"                       and each prompt's and reply's end (default 64: an edit re-reads at\n"
"                       most 64 tokens more than changed while the budget holds; 0: only those)\n"
"  --cache-dir DIR      keep the prefix cache in DIR/q36-prefix-cache.bin across restarts:\n"
"                       read at start (what fits --cache-ram; a file of another model\n"
"                       or engine is refused with a message), written at a clean stop\n"
"  -ctk T, -ctv T       K/V cache types: f16 (default), f32 or q8_0\n"
"  --spec-type T        speculative decoding: none (default) or draft-mtp (every slot\n"
"                       drafts with the model's MTP block, verified in the same pass;\n"
"                       the replies are the same tokens)\n"
"  --draft-max N        tokens drafted per slot and step at most (default 3; a slot\n"
"                       whose drafts miss drafts fewer, down to none for a while)\n"
"  --draft-vocab N      the MTP head over N ids only (the lowest ids with a non-zero\n"
"                       head row); 0 = all, as llama.cpp; default: all where a greedy\n"
"                       choice from the head is cheap here (a GPU, a CPU with AVX-512\n"
"                       VNNI and a Q8_0 head), else 8192\n"
"%s"
"  --api-key KEY        require 'Authorization: Bearer KEY' or 'x-api-key: KEY' (not on /health)\n"
"  --api-key-file FILE  the same, the key read from FILE's first line\n"
"  --alias NAME         another model name requests may use (repeatable, up to 8;\n"
"                       '*' accepts any name, for clients that send their own)\n"
"  --max-body N         request body limit in bytes (default 8388608)\n"
"  --max-conn N         concurrent connections (default 256)\n"
"  --max-tokens N       generated tokens per request at most (default: the context)\n"
"  --timeout S          idle connection timeout in seconds (default 600)\n"
"With a GPU (-ngl N > 0), the slots' state and the prefix cache's checkpoints are on it.\n",
            cli_device_help);
}

static char *read_key(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[4096];
    char *k = NULL;
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0])
            k = strdup(line);
    }
    fclose(f);
    return k;
}

int cmd_serve(int argc, char **argv)
{
    srv_opts o;
    srv_opts_default(&o);
    char *key = NULL;
    int64_t x;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int dv = cli_device_flag("serve", argc, argv, &i, &o.sess.backend);
        if (dv) {
            if (dv > 0)
                continue;
            free(key);
            return CLI_USAGE;
        }
        if (cli_mode_flag(a, &o.sess.fast))
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            free(key);
            return cli_usage("serve", "unknown flag '%s' or missing value", a);
        }
#define INT(flag, lo, hi, dst) \
        if (!strcmp(a, flag)) { if (cli_int("serve", flag, v, lo, hi, &x)) { free(key); return CLI_USAGE; } dst = x; i++; continue; }
        INT("--port", 0, 65535, o.port);
        INT("-np", 1, 256, o.n_slots);
        INT("-c", 16, 1 << 24, o.n_ctx);
        INT("-t", 0, 1024, o.sess.n_threads);
        INT("-b", 1, 1 << 16, o.sess.n_batch);
        INT("-ub", 1, 1 << 16, o.n_ubatch);
        INT("--cache-ram", 0, (int64_t)1 << 30, o.cache_mib);
        INT("--cache-every", 0, 1 << 24, o.cache_every);
        INT("--max-body", 1024, (int64_t)1 << 34, o.max_body);
        INT("--max-conn", 1, 65536, o.max_conn);
        INT("--max-tokens", 1, 1 << 24, o.max_tokens);
        INT("--timeout", 1, 86400, o.timeout_s);
        INT("--draft-max", 1, 16, o.draft_max);
        INT("--draft-vocab", 0, 1 << 24, o.draft_vocab);
#undef INT
        if (!strcmp(a, "-m")) {
            o.model_path = v;
        } else if (!strcmp(a, "--spec-type")) {
            if (strcmp(v, "draft-mtp") && strcmp(v, "none")) {
                free(key);
                return cli_usage("serve", "--spec-type expects none or draft-mtp, got '%s'", v);
            }
            o.spec_mtp = !strcmp(v, "draft-mtp");
        } else if (!strcmp(a, "--cache-dir")) {
            o.cache_dir = v;
        } else if (!strcmp(a, "--host")) {
            o.host = v;
        } else if (!strcmp(a, "--api-key")) {
            free(key);
            key = strdup(v);
        } else if (!strcmp(a, "--api-key-file")) {
            free(key);
            if (!(key = read_key(v))) {
                fprintf(stderr, "q36: %s: cannot read an API key from its first line\n", v);
                return CLI_ERROR;
            }
        } else if (!strcmp(a, "--alias")) {
            if (o.n_aliases == SRV_MAX_ALIASES) {
                free(key);
                return cli_usage("serve", "--alias: at most %d names", SRV_MAX_ALIASES);
            }
            o.aliases[o.n_aliases++] = v;
        } else if (!strcmp(a, "-ctk") || !strcmp(a, "-ctv")) {
            int t = q36_kv_type_parse(v);
            if (t < 0) {
                free(key);
                return cli_usage("serve", "%s expects f16, f32 or q8_0, got '%s'", a, v);
            }
            *(!strcmp(a, "-ctk") ? &o.sess.type_k : &o.sess.type_v) = t;
        } else {
            free(key);
            return cli_usage("serve", "unknown flag '%s'", a);
        }
        i++;
    }
    if (!o.model_path)
        o.model_path = cli_default_model();
    o.api_key = key;

    /* Signals are taken by this thread alone (sigwait); every thread the
     * server starts inherits the blocked mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    q36_err err = { 0 };
    srv *s = NULL;
    if (srv_start(&o, &s, &err)) {
        free(key);
        return cli_fail(&err);
    }
    printf("q36 serve: listening on %s (model %s, %d slots)\n", srv_url(s), o.model_path, o.n_slots);
    printf("q36 serve: %s\n", srv_memory_plan(s));
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "q36 serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_stop(s);
    free(key);
    return 0;
}
