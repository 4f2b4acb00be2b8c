/* bench_dist.c — `vla bench dist`: samples/s of the synthetic MLP
 * (dist/synthetic.h) trained data-parallel at 1 and 2 ranks (1 thread each
 * by default), and the fraction of step time spent blocked in communication
 * that compute did not hide. Each rank count is a fresh job: 1 rank runs this
 * same command line as a plain process, N ranks under `mpirun -np N`; the
 * child sees VLA_BENCH_DIST_WORKER=1 and trains instead of launching. */
#include "cli/cli.h"
#include "dist/synthetic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* This process's own command line, up to (not including) the last `argc`
 * arguments, quoted: "'/path/vla' 'bench' 'dist' ". */
static int self_prefix(int argc, char *buf, size_t cap) {
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return -1;
    static char raw[16384];
    size_t n = fread(raw, 1, sizeof raw - 1, f);
    fclose(f);
    raw[n] = '\0';
    int total = 0;
    for (size_t i = 0; i < n; i++) total += raw[i] == '\0';
    char exe[1024];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return -1;
    exe[k] = '\0';
    buf[0] = '\0';
    vla_cli_shell_quote(buf, cap, exe);
    const char *p = raw + strlen(raw) + 1; /* skip argv[0]: use the resolved exe */
    for (int i = 1; i < total - argc; i++) {
        vla_cli_shell_quote(buf, cap, p);
        p += strlen(p) + 1;
    }
    return 0;
}

int vla_bench_dist(int argc, char **argv) {
    vla_synth_opts o;
    vla_synth_defaults(&o);
    o.dims = "256,1024,1024,1024,1024,256";
    o.samples = 1 << 16;
    o.batch = 32;
    o.steps = 30;
    o.warmup = 5;
    o.threads = 1;
    o.bucket_bytes = 2 << 20;
    o.lr = 1e-3;
    o.bench = true;
    const char *ranks = "1,2";
    const char *mpirun = "mpirun --oversubscribe --allow-run-as-root --bind-to none";
    /* --ranks and --mpirun are ours; everything else is the worker's */
    char **rest = calloc((size_t)argc + 1, sizeof(char *));
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--ranks=", 8)) ranks = a + 8;
        else if (!strcmp(a, "--ranks") && i + 1 < argc) ranks = argv[++i];
        else if (!strncmp(a, "--mpirun=", 9)) mpirun = a + 9;
        else if (!strcmp(a, "--mpirun") && i + 1 < argc) mpirun = argv[++i];
        else rest[nrest++] = argv[i];
    }
    int rc = vla_synth_parse(&o, "vla bench dist", nrest, rest);
    free(rest);
    if (rc == 0 && !getenv("VLA_BENCH_DIST_WORKER"))
        printf("\nAlso: --ranks LIST (default 1,2: one job per rank count), --mpirun CMD (launcher prefix).\n");
    if (rc >= 0) return rc;

    if (getenv("VLA_BENCH_DIST_WORKER")) {
        vla_status st = vla_synth_train(&o, stdout);
        return st == VLA_OK ? 0 : vla_cli_fail(st);
    }

    static char prefix[16384], cmd[16384 + 8192 + 4096];
    if (self_prefix(argc, prefix, sizeof prefix) != 0) {
        fprintf(stderr, "vla bench dist: cannot read /proc/self/cmdline to relaunch\n");
        return 1;
    }
    /* the worker gets our arguments without --ranks/--mpirun */
    static char args[8192];
    args[0] = '\0';
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "--ranks=", 8) || !strncmp(argv[i], "--mpirun=", 9)) continue;
        if ((!strcmp(argv[i], "--ranks") || !strcmp(argv[i], "--mpirun")) && i + 1 < argc) {
            i++;
            continue;
        }
        vla_cli_shell_quote(args, sizeof args, argv[i]);
    }
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    int failed = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", ranks);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int np = atoi(tok);
        if (np < 1) {
            fprintf(stderr, "vla bench dist: --ranks '%s': bad rank count '%s'\n", ranks, tok);
            return 2;
        }
        int len = np == 1 ? snprintf(cmd, sizeof cmd, "VLA_BENCH_DIST_WORKER=1 %s%s", prefix, args)
                          : snprintf(cmd, sizeof cmd, "%.4000s -np %d -x VLA_BENCH_DIST_WORKER=1 %s%s", mpirun, np,
                                     prefix, args);
        if (len < 0 || (size_t)len >= sizeof cmd) {
            fprintf(stderr, "vla bench dist: command line too long\n");
            return 2;
        }
        fflush(stdout);
        int st = system(cmd);
        if (st != 0) {
            fprintf(stderr, "vla bench dist: %d rank(s) failed (status %d): %s\n", np, st, cmd);
            failed = 1;
        }
    }
    return failed;
}
