/* run.c: `q36 run`: prefill a prompt (text or ids) and generate, streaming
 * text (or ids with --print-ids) to stdout; prompt and generation speed go
 * to stderr. */
#include "cli.h"
#include "cli_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 run [-m MODEL.gguf] (-p TEXT | -f FILE | --ids \"1 2 3\") [-n N] [flags]\n"
"\n"
"Continues the prompt: special tokens written in the text (<|im_start|>, ...)\n"
"are parsed as special tokens; no chat template is applied (see q36 chat).\n"
"\n"
"  -p TEXT              the prompt\n"
"  -f FILE              the prompt, read from a file\n"
"  --ids LIST           the prompt as token ids\n"
"%s", cli_gen_flags_help);
}

int cmd_run(int argc, char **argv)
{
    cli_gen_opts o;
    cli_gen_opts_default(&o);
    const char *prompt = NULL, *file = NULL, *ids_arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        enum cli_flag r = cli_gen_flag("run", argc, argv, &i, &o);
        if (r == CLI_FLAG_BAD)
            return CLI_USAGE;
        if (r == CLI_FLAG_TAKEN)
            continue;
        if (!v)
            return cli_usage("run", "unknown flag '%s' or missing value", a);
        if (!strcmp(a, "-p")) prompt = v;
        else if (!strcmp(a, "-f")) file = v;
        else if (!strcmp(a, "--ids")) ids_arg = v;
        else return cli_usage("run", "unknown flag '%s'", a);
        i++;
    }
    if (!!prompt + !!file + !!ids_arg != 1)
        return cli_usage("run", "give exactly one of -p TEXT, -f FILE or --ids LIST");

    q36_err err = { 0 };
    int32_t *ids = NULL;
    int n_ids = 0, rc;
    if (ids_arg && (rc = cli_parse_ids("run", ids_arg, &ids, &n_ids)))
        return rc;
    /* the prompt file is read before the model loads: a missing file is
     * reported at once */
    size_t len = prompt ? strlen(prompt) : 0;
    char *text = file ? cli_read_file(file, &len, &err) : (char *)prompt;
    if (file && !text)
        return cli_fail(&err);
    cli_gen g;
    if (cli_gen_open(&o, &g, &err)) {
        free(ids);
        if (file)
            free(text);
        return cli_fail(&err);
    }
    if (!ids) {
        size_t n = 0;
        if (tok_encode(g.tok, text, len, true, &ids, &n, &err) == 0)
            n_ids = (int)n;
    }
    if (file)
        free(text);
    if (err.kind)
        goto fail;
    for (int i = 0; i < n_ids; i++)
        if (ids[i] >= g.n_vocab) {
            q36_err_set(&err, Q36_E_ARG, "--ids: id %d is outside the vocabulary of %d", ids[i], g.n_vocab);
            goto fail;
        }
    cli_gen_on_sigint();
    cli_gen_stats st = { 0 };
    if (cli_gen_prefill(&g, ids, n_ids, &st, &err) || cli_gen_generate(&g, &o, &st, NULL, NULL, &err))
        goto fail;
    if (o.print_ids)
        printf("\n");
    fflush(stdout);
    cli_gen_report(&st);
    if (g.spec)
        cli_gen_report_spec(g.spec);
    free(ids);
    cli_gen_close(&g);
    return 0;
fail:
    free(ids);
    cli_gen_close(&g);
    return cli_fail(&err);
}
