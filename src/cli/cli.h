/* cli.h — shared plumbing of the `vla` subcommands: dispatch, flag parsing
 * with help, and turning a vla_status into a message and an exit code.
 *
 * Each command lives in its own cmd_<name>.c and exposes one
 * `int vla_cmd_<name>(int argc, char **argv)`; main.c lists them. A command
 * with subcommands (vla dataset info, vla sim play) dispatches through
 * vla_cli_dispatch() with its own table. */
#ifndef VLA_CLI_CLI_H
#define VLA_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/flags.h"
#include "base/status.h"

typedef int (*vla_cli_fn)(int argc, char **argv);

typedef struct {
    const char *name;
    const char *summary;
    vla_cli_fn run;
} vla_cli_command;

/* Run the subcommand named by argv[0]; `prefix` is e.g. "vla dataset". */
int vla_cli_dispatch(const char *prefix, const vla_cli_command *cmds, int n, int argc, char **argv);

/* Parse flags. Returns -1 when the command should go on; otherwise the exit
 * code to return at once (0 after --help, 2 after a usage error). */
int vla_cli_parse(const vla_command_spec *spec, int argc, char **argv, vla_flags_result *res);

/* Help text of --device, the flag that picks the backend (tensor/backend.h). */
#define VLA_CLI_DEVICE_HELP "backend that runs the model: cpu, checked (the CPU kernels on memory the host cannot touch " \
    "outside an op: a correctness mode, slow) or cuda (NVIDIA GPUs, built with make CUDA=1). Default: $VLA_DEVICE, else cuda " \
    "when built in and a GPU is usable here (as LeRobot), else cpu; `vla version` lists those built in and the default"

/* Print "vla: error: <thread's error message>" and return the exit code. */
int vla_cli_fail(vla_status st);

/* Route stdout through a filter that writes a non-finite number on a JSON
 * line (one starting with '{' or '[') as null: no JSON vla prints carries
 * NaN or Inf, whatever a command's printf formats (main.c, first thing). */
void vla_cli_guard_stdout(void);
/* Flush it at the end of main. */
void vla_cli_guard_end(void);

/* Range checks that name the flag and the value given: print
 * "vla: error: CMD: --FLAG=V: must be …" and return false when out of range. */
bool vla_cli_int_in(const char *cmd, const char *flag, int64_t v, int64_t lo, int64_t hi);
bool vla_cli_float_in(const char *cmd, const char *flag, double v, double lo, double hi, bool lo_open, bool hi_open);
/* A flag given where the command would not use it: an error naming it and
 * why (`why` says what would make it count); returns the exit code 2. */
int vla_cli_ignored(const char *cmd, const char *flag, const char *why);

/* A command's dataset, given exactly one way: the positional ROOT,
 * --dataset.root=DIR, or --dataset.repo_id=ORG/NAME (LeRobot's cache,
 * data/lerobot.h vla_lerobot_repo_roots; the path into buf). *out points at
 * the root. Returns -1 to go on, else the exit code (message printed). */
int vla_cli_dataset_source(const char *cmd, const char *positional, const char *root, const char *repo_id, char *buf,
                           size_t cap, const char **out);
/* The simulator flags every env-using command shares: --env.type (in *env),
 * --env.task (LeRobot's: "transfer_cube" or "AlohaTransferCube-v0"; NULL:
 * the default) and --env.model (a model file replacing a 3-D env's built-in
 * one). Resolves *env to the registered env and loads the model file; -1 to
 * go on, else the exit code (the error printed). */
int vla_cli_env(const char **env, const char *task, const char *model);
#define VLA_CLI_ENV_TASK_HELP "the env's task (aloha: transfer_cube, also LeRobot's AlohaTransferCube-v0; default: the env's one)"
#define VLA_CLI_ENV_MODEL_HELP "MJCF file replacing a 3-D env's built-in scene (it must keep the names the env uses)"
/* An image size flag: "N" (square) or "H,W" (LeRobot's shape order); even
 * sides in 16..4096. -1 to go on, else 2 (the error printed). */
int vla_cli_image_size(const char *flag, const char *text, int *height, int *width);

/* Commands (one file each). */
int vla_cmd_version(int argc, char **argv);
int vla_cmd_bench(int argc, char **argv);
int vla_cmd_plan(int argc, char **argv);
int vla_cmd_policy(int argc, char **argv);
int vla_cmd_sim(int argc, char **argv);
int vla_cmd_sim_record(int argc, char **argv);
int vla_cmd_parquet(int argc, char **argv);
int vla_cmd_dataset(int argc, char **argv);
int vla_cmd_data(int argc, char **argv);
int vla_cmd_train(int argc, char **argv);
int vla_cmd_dagger(int argc, char **argv);
int vla_cmd_eval(int argc, char **argv);
int vla_cmd_tokenize(int argc, char **argv);
int vla_cmd_serve(int argc, char **argv);

/* Print `s` as the inside of a JSON string (quotes and backslashes escaped,
 * control characters dropped). */
void vla_cli_print_json_chars(const char *s);

#endif
