/* test_cli.c — the `vla` command as a user meets it: help on every level,
 * version as JSON, unknown commands and flags rejected with a suggestion and
 * exit code 2, the GEMM benchmark printing parseable JSON (oneDNN and
 * OpenBLAS side by side, forced core types in peer processes), and `bench
 * policy` refusing a PyTorch peer that failed or trains a different model,
 * timing a list of thread counts and of GEMM libraries, running the peer
 * with a forced OpenBLAS core type, and counting a frozen group's FLOPs once. */
#include "test_util.h"
#include "serve/loadgen.h"

#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char out[65536];

static int run(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", test_cli_path(), args);
    return test_run(cmd, out, sizeof out);
}

/* v's string member key; a failure naming it when there is none (not a NULL for strcmp) */
static const char *str_of(const json_t *v, const char *key) {
    const char *s = json_string_value(json_object_get(v, key));
    if (!s) {
        char *dump = json_dumps(v, JSON_COMPACT);
        fail_msg("no string \"%s\" in %s", key, dump ? dump : "(a line)");
    }
    return s;
}

static void test_help_and_dispatch(void **state) {
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "version"));
    assert_non_null(strstr(out, "bench"));
    assert_int_equal(run(""), 2); /* no command: usage on stderr, exit 2 */
    assert_non_null(strstr(out, "usage: vla <command>"));
    assert_int_equal(run("verison"), 2);
    assert_non_null(strstr(out, "did you mean 'version'"));
    assert_int_equal(run("version --help"), 0);
    assert_non_null(strstr(out, "usage: vla version"));
    assert_int_equal(run("bench --help"), 0);
    assert_non_null(strstr(out, "gemm"));
    assert_int_equal(run("bench gemm --help"), 0);
    assert_non_null(strstr(out, "--threads=N"));
}

/* `vla data prepare` as a user meets it: help, what is required, one
 * dataset per shard set, and `train --dataset.shards` on a set that is not
 * there saying what to run. */
static void test_data_prepare_usage(void **state) {
    (void)state;
    assert_int_equal(run("data --help"), 0);
    assert_non_null(strstr(out, "prepare"));
    assert_int_equal(run("data prepare --help"), 0);
    assert_non_null(strstr(out, "--image_size=H,W"));
    assert_int_equal(run("data prepare"), 2);
    assert_non_null(strstr(out, "--dataset.root=DIR and --out=DIR are required"));
    assert_int_equal(run("data prepare --dataset.root=a --dataset.root=b --out=c"), 2);
    assert_non_null(strstr(out, "--dataset.root is given twice"));
    assert_int_equal(run("data prepare --dataset.root=a --out=c --image_size=224x224"), 2);
    assert_non_null(strstr(out, "give H,W"));
    assert_int_equal(run("train --dataset.shards=/nonexistent/shards"), 1);
    assert_non_null(strstr(out, "vla data prepare --out=/nonexistent/shards"));
}

static void test_unknown_flag(void **state) {
    assert_int_equal(run("version --jsn"), 2);
    assert_non_null(strstr(out, "unknown flag --jsn; did you mean --json?"));
    assert_int_equal(run("bench gemm --threads=many"), 2);
    assert_non_null(strstr(out, "expects an integer"));
}

static void test_version_json(void **state) {
    assert_int_equal(run("version --json"), 0);
    json_error_t err;
    json_t *v = json_loads(out, 0, &err);
    assert_non_null(v);
    assert_true(json_is_string(json_object_get(v, "version")));
    assert_non_null(strstr(json_string_value(json_object_get(v, "blas")), "OpenBLAS"));
    assert_non_null(strstr(json_string_value(json_object_get(v, "mpi")), "MPI"));
    assert_non_null(strstr(json_string_value(json_object_get(v, "ffmpeg")), "libavcodec"));
    /* the GEMM library and its kernels; VLA_GEMM picks the library */
    const char *gemm = json_string_value(json_object_get(v, "gemm"));
    assert_true(!strcmp(gemm, "onednn") || !strcmp(gemm, "openblas"));
    assert_true(strlen(json_string_value(json_object_get(v, "gemm_kernels"))) > 0);
    json_decref(v);
    assert_int_equal(run("version"), 0);
    assert_non_null(strstr(out, "GEMM    : "));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "VLA_GEMM=openblas %s version --json 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    v = json_loads(out, 0, &err);
    assert_non_null(v);
    assert_string_equal(str_of(v, "gemm"), "openblas");
    assert_non_null(strstr(json_string_value(json_object_get(v, "gemm_library")), "OpenBLAS"));
    json_decref(v);
    snprintf(cmd, sizeof cmd, "VLA_GEMM=mkl %s version 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 2); /* refused before any work, naming the variable */
    assert_non_null(strstr(out, "VLA_GEMM=mkl"));
    assert_non_null(strstr(out, "onednn or openblas"));
}

/* bench gemm: oneDNN and OpenBLAS side by side in this process, OpenBLAS
 * with the environment's kernels (whatever OPENBLAS_CORETYPE says: the test
 * neither sets nor reads it), no forced-core peers (--openblas_coretypes=none;
 * forcing one sets the variable for a peer process, which is `make bench`'s
 * business, not a test's); MFU is against the best peak of the run. */
static void test_bench_gemm_json(void **state) {
#if !defined(__x86_64__)
    skip(); /* OpenBLAS's core names are x86's */
#endif
    assert_int_equal(run("bench gemm --quick --seconds=0.01 --reps=1 --threads=1 --openblas_coretypes=none"), 0);
    int lines = 0, peaks = 0, compare = 0, self_libs = 0, peer = 0;
    double best_peak = 0, max_peak = 0;
    char env_kernels[64] = "";
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t err;
        json_t *v = json_loads(line, 0, &err);
        if (!v) fail_msg("not JSON: %s", line);
        const char *bench = json_string_value(json_object_get(v, "bench"));
        const char *gemm = json_string_value(json_object_get(v, "gemm"));
        const char *process = json_string_value(json_object_get(v, "process"));
        if (!strcmp(bench, "gemm")) {
            if (json_object_get(v, "skipped")) fail_msg("a contender was skipped: %s", line);
            assert_true(json_number_value(json_object_get(v, "gflops")) > 0.1);
            double mfu = json_number_value(json_object_get(v, "mfu"));
            assert_true(mfu > 0 && mfu <= 1.0 + 1e-9);
            if (!strcmp(process, "peer")) {
                peer++;
            } else if (!strcmp(gemm, "openblas")) {
                snprintf(env_kernels, sizeof env_kernels, "%s", json_string_value(json_object_get(v, "kernels")));
            }
        } else if (!strcmp(bench, "gemm_peak")) {
            double g = json_number_value(json_object_get(v, "gflops"));
            assert_true(g > 0.1);
            if (g > max_peak) max_peak = g;
            if (!strcmp(process, "self")) self_libs++;
            peaks++;
        } else if (!strcmp(bench, "gemm_compare")) {
            best_peak = json_number_value(json_object_get(v, "best_peak_gflops"));
            assert_true(json_number_value(json_object_get(v, "onednn_over_openblas_env")) > 0);
            compare++;
        }
        json_decref(v);
        lines++;
    }
    assert_true(lines >= 10);
    assert_int_equal(peaks, 2);
    assert_int_equal(self_libs, 2);
    assert_int_equal(peer, 0);
    assert_int_equal(compare, 1);
    assert_true(fabs(best_peak - max_peak) <= 0.01);
    assert_string_equal(env_kernels, openblas_get_corename()); /* this test's process: the same environment */
    assert_int_equal(run("bench gemm --quick --openblas_coretypes='Haswell;rm'"), 2);
    assert_non_null(strstr(out, "OpenBLAS core names"));
}

/* A stand-in interpreter: `sh SCRIPT ...` ignoring the peer script's arguments. */
static const char *fake_python(const char *name, const char *body) {
    const char *path = test_tmp_path(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

/* The policy_train lines of a bench policy run, in order (at most `cap`;
 * returns how many; the caller frees them). */
/* The JSON lines of the last run's output whose "bench" is `bench`, in
 * order (at most `cap`; returns how many; every line must parse; the
 * caller frees them). */
static int json_lines(const char *bench, json_t **lines, int cap) {
    int n = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '{') continue;
        json_error_t err;
        json_t *v = json_loads(line, 0, &err);
        if (!v) fail_msg("not JSON: %s", line);
        const char *name = json_string_value(json_object_get(v, "bench"));
        if (n < cap && name && !strcmp(name, bench)) lines[n++] = v;
        else json_decref(v);
    }
    return n;
}

static int bench_policy_train_lines(const char *args, json_t **lines, int cap) {
    assert_int_equal(run(args), 0);
    return json_lines("policy_train", lines, cap);
}

/* The policy_train line of a quick bench policy run with the peer `python` (named, so it runs), parsed (caller frees). */
static json_t *bench_policy_train_line(const char *python) {
    char args[1024];
    snprintf(args, sizeof args, "bench policy --config=%s --batch=2 --seconds=0.05 --reps=1 --threads=1 --torch_coretype=none "
             "--quick --python=%s",
             test_source_path("configs/pi05-nano.json"), python);
    json_t *train = NULL;
    assert_int_equal(bench_policy_train_lines(args, &train, 1), 1); /* every line JSON: the peer's message escaped */
    assert_true(json_number_value(json_object_get(train, "samples_per_s")) > 0);
    return train;
}

static void test_bench_policy_peer_checks(void **state) {
    /* a peer that crashes with a traceback: the reason is its last line, and no ratio */
    json_t *v = bench_policy_train_line(fake_python(
        "py_fail", "echo 'Traceback (most recent call last):'; echo '  \"quoted\"\tand tabs'; "
                   "echo \"ModuleNotFoundError: No module named 'torch'\"; exit 1"));
    assert_null(json_object_get(v, "vs_torch"));
    const char *why = json_string_value(json_object_get(v, "torch_skipped"));
    assert_non_null(why);
    assert_non_null(strstr(why, "exit 1"));
    assert_non_null(strstr(why, "No module named"));
    json_decref(v);
    /* a peer that trains another model: refused, naming both counts */
    v = bench_policy_train_line(fake_python(
        "py_other", "echo '{\"bench\": \"policy_train_peer\", \"samples_per_s\": 5.0, \"trainable_params\": 7}'"));
    assert_null(json_object_get(v, "vs_torch"));
    why = json_string_value(json_object_get(v, "torch_skipped"));
    assert_non_null(why);
    assert_non_null(strstr(why, "peer trains 7 parameters"));
    json_decref(v);
}

/* --infer_only: no training line, no gradient memory (the nano policy's
 * trainable parameters would double its weights), the memory it reports */
static void test_bench_policy_infer_only(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "bench policy --config=%s --infer_only --reps=1 --threads=1 --quick",
             test_source_path("configs/groot-nano.json"));
    assert_int_equal(run(args), 0);
    assert_null(strstr(out, "policy_train"));
    char *line = strstr(out, "{\"bench\":\"policy_infer\"");
    assert_non_null(line);
    json_error_t err;
    json_t *v = json_loadb(line, strcspn(line, "\n"), 0, &err);
    assert_non_null(v);
    double w = json_number_value(json_object_get(v, "weight_gib")), rss = json_number_value(json_object_get(v, "peak_rss_gib"));
    assert_true(w > 0 && w < 0.01);  /* groot-nano: 114 k parameters */
    assert_true(rss > w && rss < 4); /* the process holds at least its weights */
    json_decref(v);
}

static double num(const json_t *v, const char *key) { return json_number_value(json_object_get(v, key)); }

/* --threads=1,2: one line per count, in order, each count's own time, and
 * the ratio to the first computed from those times; a malformed list is
 * refused with exit code 2 */
static void test_bench_policy_thread_list(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "bench policy --config=%s --batch=2 --seconds=0.05 --reps=1 --threads=1,2 --quick",
             test_source_path("configs/pi05-nano.json"));
    json_t *l[3];
    assert_int_equal(bench_policy_train_lines(args, l, 3), 2);
    assert_int_equal((int)num(l[0], "threads"), 1);
    assert_int_equal((int)num(l[1], "threads"), 2);
    assert_null(json_object_get(l[0], "vs_base_threads"));
    /* --quick without --python: no peer, so neither its figure nor a reason it was skipped */
    assert_null(json_object_get(l[0], "torch_samples_per_s"));
    assert_null(json_object_get(l[0], "torch_skipped"));
    assert_int_equal((int)num(l[1], "base_threads"), 1);
    double r = num(l[0], "ms_per_step") / num(l[1], "ms_per_step");
    assert_true(fabs(num(l[1], "vs_base_threads") - r) < 0.002 * r + 1e-3);
    assert_true(num(l[0], "gemm_peak_gflops") > 0 && num(l[1], "gemm_peak_gflops") > 0);
    json_decref(l[0]), json_decref(l[1]);
    /* a count given twice is measured once */
    snprintf(args, sizeof args, "bench policy --config=%s --batch=2 --seconds=0.05 --reps=1 --threads=2,2 --quick",
             test_source_path("configs/pi05-nano.json"));
    assert_int_equal(bench_policy_train_lines(args, l, 3), 1);
    assert_int_equal((int)num(l[0], "threads"), 2);
    json_decref(l[0]);
    assert_int_equal(run("bench policy --threads=1,x"), 2);
    assert_non_null(strstr(out, "--threads=1,x"));
    assert_int_equal(run("bench policy --threads=-1"), 2);
}

/* --gemm=onednn,openblas: one line per library, the second with its ratio to
 * the first, the (stand-in) peer's figure on both; --torch_coretype=none
 * runs the peer once, in the environment as it is (no forced second run:
 * that sets OPENBLAS_CORETYPE for a peer, `make bench`'s business); a bad
 * library or core name is refused. */
static void test_bench_policy_gemm_list_and_forced_peer(void **state) {
    (void)state;
    char args[2048], py[1024];
    snprintf(args, sizeof args, "policy info --config=%s --json", test_source_path("configs/pi05-nano.json"));
    assert_int_equal(run(args), 0);
    json_error_t err;
    json_t *info = json_loads(out, 0, &err);
    assert_non_null(info);
    long long trainable = (long long)json_integer_value(json_object_get(info, "trainable_params"));
    json_decref(info);
    snprintf(py, sizeof py,
             "echo \"{\\\"bench\\\": \\\"policy_train_peer\\\", \\\"samples_per_s\\\": 1.0, \\\"trainable_params\\\": %lld}\"",
             trainable);
    snprintf(args, sizeof args,
             "bench policy --config=%s --batch=2 --seconds=0.05 --reps=1 --threads=1 --gemm=onednn,openblas "
             "--torch_coretype=none --quick --python=%s",
             test_source_path("configs/pi05-nano.json"), fake_python("py_core", py));
    json_t *l[3];
    assert_int_equal(bench_policy_train_lines(args, l, 3), 2);
    assert_string_equal(str_of(l[0], "gemm"), "onednn");
    assert_string_equal(str_of(l[1], "gemm"), "openblas");
    assert_null(json_object_get(l[0], "vs_gemm_base"));
    double r = num(l[0], "ms_per_step") / num(l[1], "ms_per_step");
    assert_true(fabs(num(l[1], "vs_gemm_base") - r) < 0.002 * r + 1e-3);
    for (int i = 0; i < 2; i++) {
        assert_true(fabs(num(l[i], "torch_samples_per_s") - 1.0) < 1e-9);
        assert_null(json_object_get(l[i], "torch_forced_samples_per_s"));
        json_decref(l[i]);
    }
    assert_int_equal(run("bench policy --gemm=onednn,mkl"), 2);
    assert_non_null(strstr(out, "--gemm=onednn,mkl"));
    assert_int_equal(run("bench policy --torch_coretype='a b'"), 2);
}

/* bench gemm on a backend that keeps GEMM-ready copies (checked, as cuda):
 * every quantised shape is timed again with B cast once (b_ready_*), then A too (ab_ready_*); the
 * cpu backend keeps none, so its lines have no such figure. */
static void test_bench_gemm_b_ready(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(run(k ? "bench gemm --device=cpu --precision=fp8 --quick --seconds=0.005 --reps=1"
                               : "bench gemm --device=checked --precision=fp8 --quick --seconds=0.005 --reps=1"),
                         0);
        json_t *l[16];
        int n = json_lines("gemm", l, 16);
        assert_true(n >= 3);
        for (int i = 0; i < n; i++) {
            assert_true((json_object_get(l[i], "b_ready_gflops") != NULL) == !k);
            assert_true((json_object_get(l[i], "ab_ready_gflops") != NULL) == !k); /* and with A held too */
            if (!k) assert_true(num(l[i], "b_ready_ms") > 0 && num(l[i], "b_ready_gflops") > 0);
            if (!k) assert_true(num(l[i], "ab_ready_ms") > 0 && num(l[i], "ab_ready_gflops") > 0);
            json_decref(l[i]);
        }
    }
}

/* bench serve --device=cpu,checked: per device a single-robot line and the
 * two server modes, each server line's p99 against that device's single
 * chunk, and the second device's figures as ratios to the first's, each
 * computed from the printed figures; a device not built is refused. */
static void test_bench_serve_devices(void **state) {
    (void)state;
    assert_int_equal(run("bench serve --quick --device=cpu,checked"), 0);
    json_t *l[7];
    assert_int_equal(json_lines("serve", l, 7), 6);
    static const char *const modes[3] = {"single", "no_batching", "batching"};
    for (int i = 0; i < 6; i++) {
        const json_t *v = l[i], *b = l[i % 3], *single = l[i - i % 3];
        assert_string_equal(str_of(v, "device"), i < 3 ? "cpu" : "checked");
        assert_string_equal(str_of(v, "mode"), modes[i % 3]);
        assert_string_equal(str_of(v, "precision"), "fp32");
        if (i % 3 == 0) {
            assert_null(json_object_get(v, "p99_vs_single_chunk"));
        } else {
            double r = num(v, "p99_ms") / num(single, "p50_ms");
            assert_true(fabs(num(v, "p99_vs_single_chunk") - r) < 0.002 * r + 2e-3);
        }
        /* regions replayed per batch: checked has them (compared, counted), cpu none */
        if (i < 3) {
            assert_null(json_object_get(v, "graph_replays_per_batch"));
        } else {
            double g = num(v, "graph_replays_per_batch");
            assert_true(g >= 0.0 && g <= 4.0);
        }
        if (i < 3) {
            assert_null(json_object_get(v, "base_device"));
        } else {
            assert_string_equal(str_of(v, "base_device"), "cpu");
            double r = num(v, "throughput_rps") / num(b, "throughput_rps");
            assert_true(fabs(num(v, "throughput_vs_base_device") - r) < 0.002 * r + 2e-3);
        }
    }
    for (int i = 0; i < 6; i++) json_decref(l[i]);
    assert_int_equal(run("bench serve --quick --device=cpu,nosuch"), 2);
    assert_non_null(strstr(out, "nosuch"));
}

/* A window shorter than a robot's connection (a loaded machine, a tiny --seconds) still measures: every
 * robot sends at least one request, so every line has a throughput and the second device its ratio to
 * the first (before, such a run reported 0 requests and left the ratio out). */
static void test_bench_serve_short_window(void **state) {
    (void)state;
    assert_int_equal(run("bench serve --device=cpu,checked --seconds=0.001 --rounds=1"), 0);
    json_t *l[7];
    assert_int_equal(json_lines("serve", l, 7), 6);
    for (int i = 0; i < 6; i++) {
        assert_true(num(l[i], "requests") >= num(l[i], "clients"));
        assert_true(num(l[i], "throughput_rps") > 0);
        if (i >= 3) assert_string_equal(str_of(l[i], "base_device"), "cpu");
        json_decref(l[i]);
    }
}

/* bench serve --tasks=N: the robots ask under N instructions of different lengths, which the server takes
 * (no request refused); the count is in every line; a negative count is refused. */
static void test_bench_serve_tasks(void **state) {
    (void)state;
    char a[160], b[160];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < i; j++)
            assert_int_not_equal(strlen(vla_loadgen_task(i, a, sizeof a)), strlen(vla_loadgen_task(j, b, sizeof b)));
    assert_non_null(strstr(vla_loadgen_task(9, a, sizeof a), "station 1"));
    assert_int_equal(run("bench serve --quick --device=checked --tasks=3"), 0);
    json_t *l[4];
    assert_int_equal(json_lines("serve", l, 4), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal((int)num(l[i], "tasks"), 3);
        assert_int_equal((int)num(l[i], "errors"), 0);
        assert_true(num(l[i], "requests") > 0);
        json_decref(l[i]);
    }
    assert_int_equal(run("bench serve --quick --device=checked --tasks=-1"), 2);
    assert_non_null(strstr(out, "--tasks"));
}

/* vla eval --output_dir longer than the run directory's path holds: refused, naming the flag (it used to be
 * cut silently, which names another directory) */
static void test_eval_output_dir_too_long(void **state) {
    (void)state;
    static char cmd[8192], dir[4300];
    memset(dir, 'd', sizeof dir - 1);
    dir[sizeof dir - 1] = 0;
    snprintf(cmd, sizeof cmd, "%s eval --policy.path=/nonexistent --env.type=reach --output_dir=/tmp/%s 2>&1",
             test_cli_path(), dir);
    assert_int_not_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "--output_dir is 4304 bytes long"));
}

/* Model FLOPs count a frozen group's forward once, a training group's three
 * times: groot-nano as published (VLM frozen) must count fewer FLOPs per
 * step than the same model with everything training, in the proportion the
 * shape estimate gives (the old rule, 3 × forward for every group, counted
 * both alike). */
static void test_bench_policy_frozen_flops(void **state) {
    (void)state;
    json_error_t err;
    json_t *cfg = json_load_file(test_source_path("configs/groot-nano.json"), 0, &err);
    assert_non_null(cfg);
    assert_true(json_array_size(json_object_get(cfg, "frozen")) > 0);
    json_object_set_new(cfg, "frozen", json_array());
    const char *all = test_tmp_path("groot-nano-all-train.json");
    assert_int_equal(json_dump_file(cfg, all, 0), 0);
    json_decref(cfg);
    char args[1024];
    json_t *frozen, *trains;
    snprintf(args, sizeof args, "bench policy --config=%s --batch=2 --seconds=0.02 --reps=1 --threads=1 --quick",
             test_source_path("configs/groot-nano.json"));
    assert_int_equal(bench_policy_train_lines(args, &frozen, 1), 1);
    snprintf(args, sizeof args, "bench policy --config=%s --batch=2 --seconds=0.02 --reps=1 --threads=1 --quick", all);
    assert_int_equal(bench_policy_train_lines(args, &trains, 1), 1);
    double f = num(frozen, "gflop_per_step"), t = num(trains, "gflop_per_step");
    double ef = num(frozen, "estimate_gflop_per_step"), et = num(trains, "estimate_gflop_per_step");
    assert_true(f < t);
    assert_true(ef < et);
    assert_true(fabs(f / t - ef / et) < 0.1 * (ef / et)); /* measured and estimated splits agree */
    json_decref(frozen), json_decref(trains);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bench_policy_infer_only),
        cmocka_unit_test(test_help_and_dispatch),
        cmocka_unit_test(test_data_prepare_usage),
        cmocka_unit_test(test_unknown_flag),
        cmocka_unit_test(test_version_json),
        cmocka_unit_test(test_bench_gemm_json),
        cmocka_unit_test(test_bench_policy_peer_checks),
        cmocka_unit_test(test_bench_policy_thread_list),
        cmocka_unit_test(test_bench_policy_gemm_list_and_forced_peer),
        cmocka_unit_test(test_bench_policy_frozen_flops), cmocka_unit_test(test_bench_serve_devices),
        cmocka_unit_test(test_bench_serve_tasks),
        cmocka_unit_test(test_bench_serve_short_window),
        cmocka_unit_test(test_eval_output_dir_too_long),
        cmocka_unit_test(test_bench_gemm_b_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
