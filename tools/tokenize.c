/* tokenize.c: `q36 tokenize` and `q36 detokenize`: the tokenizer of a GGUF
 * on the command line (ARCHITECTURE.md). Special tokens written in the text
 * are parsed as special tokens unless --no-parse-special; no BOS/EOS is
 * added. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/tokenizer/tok.h"

static void usage_tokenize(FILE *o)
{
    fprintf(o,
"usage: q36 tokenize [-m MODEL.gguf] (-p TEXT | -f FILE) [--ids] [--no-parse-special]\n"
"\n"
"Tokenizes TEXT (or the bytes of FILE) with the model's tokenizer, as\n"
"llama_tokenize(add_special = false, parse_special = true) does.\n"
"\n"
"  -m FILE              model (default: build/default.gguf)\n"
"  -p TEXT              the text\n"
"  -f FILE              read the text from FILE (raw bytes; '-' for stdin)\n"
"  --ids                print one line of space-separated ids\n"
"                       (default: one token per line, \"id 'piece'\")\n"
"  --no-parse-special   treat control tokens written in the text as text\n");
}

static void usage_detokenize(FILE *o)
{
    fprintf(o,
"usage: q36 detokenize [-m MODEL.gguf] --ids \"ID ID ...\" [--no-special]\n"
"\n"
"Writes the bytes the ids decode to (raw, no newline added). Control tokens\n"
"are written as their text unless --no-special.\n"
"\n"
"  -m FILE        model (default: build/default.gguf)\n"
"  --ids LIST     token ids separated by spaces or commas\n"
"  --no-special   leave control tokens out\n");
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool ids_only = false, parse_special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_tokenize(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--ids")) {
            ids_only = true;
        } else if (!strcmp(a, "--no-parse-special")) {
            parse_special = false;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "-p") || !strcmp(a, "-f")) && i + 1 < argc) {
            const char **dst = a[1] == 'm' ? &model : a[1] == 'p' ? &prompt : &file;
            *dst = argv[++i];
        } else {
            return cli_usage("tokenize", "unknown or incomplete flag '%s'", a);
        }
    }
    if (!!prompt == !!file)
        return cli_usage("tokenize", "give exactly one of -p TEXT and -f FILE");
    if (!model)
        model = cli_default_model();

    char *owned = NULL;
    size_t len = prompt ? strlen(prompt) : 0;
    q36_err err = { 0 };
    if (file && !(owned = cli_read_file(file, &len, &err)))
        return cli_fail(&err);
    tok_vocab *v = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = CLI_OK;
    if (tok_new_from_file(model, &v, &err) ||
        tok_encode(v, prompt ? prompt : owned, len, parse_special, &ids, &n, &err)) {
        rc = cli_fail(&err);
        goto done;
    }
    if (ids_only) {
        for (size_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    } else {
        for (size_t i = 0; i < n; i++) {
            size_t pl;
            const char *p = tok_piece(v, ids[i], true, &pl);
            printf("%d '", ids[i]);
            fwrite(p, 1, pl, stdout);
            printf("'\n");
        }
    }
done:
    free(ids);
    free(owned);
    tok_free(v);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *model = NULL, *list = NULL;
    bool special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_detokenize(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--no-special")) {
            special = false;
        } else if (!strcmp(a, "-m") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(a, "--ids") && i + 1 < argc) {
            list = argv[++i];
        } else {
            return cli_usage("detokenize", "unknown or incomplete flag '%s'", a);
        }
    }
    if (!list)
        return cli_usage("detokenize", "--ids is required");
    if (!model)
        model = cli_default_model();

    size_t cap = strlen(list) / 2 + 1, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) {
        fprintf(stderr, "q36: out of memory\n");
        return CLI_ERROR;
    }
    for (const char *s = list; *s;) {
        if (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') {
            s++;
            continue;
        }
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (end == s || errno || x < INT32_MIN || x > INT32_MAX ||
            (*end && *end != ' ' && *end != ',' && *end != '\t' && *end != '\n')) {
            free(ids);
            return cli_usage("detokenize", "--ids expects integers separated by spaces, got '%.20s'", s);
        }
        ids[n++] = (int32_t)x;
        s = end;
    }
    q36_err err = { 0 };
    tok_vocab *v = NULL;
    char *out = NULL;
    size_t len = 0;
    int rc = CLI_OK;
    if (tok_new_from_file(model, &v, &err) || tok_decode(v, ids, n, special, &out, &len, &err))
        rc = cli_fail(&err);
    else
        fwrite(out, 1, len, stdout);
    free(out);
    free(ids);
    tok_free(v);
    return rc;
}
