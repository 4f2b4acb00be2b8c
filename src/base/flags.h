/* flags.h — LeRobot-style command-line flags for the `vla` CLI.
 *
 * Each command declares a table of flags; vla_flags_parse() fills the
 * destinations. Accepted forms, as in LeRobot/draccus:
 *   --dataset.root=DIR   --dataset.root DIR   --json   --json=false
 * Dashes and underscores in names are interchangeable (--batch-size is
 * --batch_size). An unknown flag is an error that says what was meant: the
 * closest known flag (Damerau–Levenshtein: --stpes and --setps are one edit
 * from --steps), the group's flag for a group's bare name (--env=pusht:
 * --env.type=pusht), else the flags of its group or the command's flag
 * groups (--policy.*, --env.*, …). `--help`/`-h` asks for the help text,
 * which is generated from the table so it never drifts from what is parsed;
 * it states each flag's initial value as its default unless the flag's help
 * text speaks of its default itself (so no line says it twice). */
#ifndef VLA_BASE_FLAGS_H
#define VLA_BASE_FLAGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"

typedef enum { VLA_FLAG_STRING, VLA_FLAG_INT, VLA_FLAG_FLOAT, VLA_FLAG_BOOL } vla_flag_type;

typedef struct {
    const char *name;    /* without the leading "--", e.g. "dataset.root" */
    vla_flag_type type;
    void *dest;          /* const char **, int64_t *, double * or bool * */
    const char *metavar; /* shown in help, e.g. "DIR"; NULL for bools */
    const char *help;
} vla_flag;

typedef struct {
    const char *command;     /* "vla dataset info" */
    const char *args;        /* positional synopsis, e.g. "ROOT" (may be NULL) */
    const char *summary;     /* one line */
    const char *description; /* paragraphs after the usage line (may be NULL) */
    const vla_flag *flags;
    int n_flags;
    int min_positional, max_positional;
} vla_command_spec;

#define VLA_FLAGS_MAX 256

typedef struct {
    const char *positional[16];
    int n_positional;
    bool help;
    bool given[VLA_FLAGS_MAX]; /* given[i]: flags[i] was on the command line (not left at its default) */
} vla_flags_result;

/* Parse argv[0..argc) (argv[0] is the first argument, not the program). A
 * flag given twice is an error (one value per flag: nothing is silently
 * dropped). */
vla_status vla_flags_parse(const vla_command_spec *spec, int argc, char **argv, vla_flags_result *out);
void vla_flags_print_help(const vla_command_spec *spec, FILE *out);
/* Was the flag named `name` (as in the table) on the command line? */
bool vla_flags_given(const vla_command_spec *spec, const vla_flags_result *res, const char *name);
/* Is `typed` a close enough misspelling of `known` to suggest it: a few
 * edits for its length, on the whole name or on the last dotted part
 * (--root for --dataset.root). Names of other meaning ("device" for "path")
 * are not suggested. */
bool vla_flags_close(const char *typed, const char *known);
/* Edit distance between flag names (Damerau–Levenshtein, optimal string
 * alignment: a swap of two adjacent characters is one edit), with '-' and
 * '_' equal (for suggestions). */
int vla_flags_distance(const char *a, const char *b);

#endif
