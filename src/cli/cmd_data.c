/* cmd_data.c — `vla data prepare`: decode a LeRobot dataset once into
 * training shards (data/shards.h), on one process or as N MPI ranks that
 * each write a share and rank 0 writing the manifest. Several datasets
 * (--dataset.root=A,B) become one shard set each under OUT, tied together by
 * OUT/mixture.json, written last. Exit codes: 0 ok, 1 error, 2 usage. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fault.h"
#include "cli/cli.h"
#include "data/shards.h"
#include "distributed/comm.h"

/* One dataset into one shard set, every rank its share; rank 0 writes the
 * manifest once all are written. totals: shards written, kept, frames (all
 * ranks). Collective: every rank returns the same status. */
static vla_status prepare_one(vla_comm *comm, const char *root, const vla_shards_prepare_opts *o, int64_t totals[3],
                              vla_shards_prepare_stats *s) {
    int rank = vla_comm_rank(comm), world = vla_comm_world(comm);
    vla_status st = vla_shards_prepare(root, o, s);
    if (st != VLA_OK) fprintf(stderr, "vla: error: rank %d/%d: %s\n", rank, world, vla_error_message());
    /* the manifest only when every rank's shards are written */
    vla_status all = vla_comm_agree(comm, st, "data prepare");
    vla_status fin = VLA_OK;
    if (all == VLA_OK && rank == 0) fin = vla_shards_finish(root, o);
    if (rank == 0 && fin != VLA_OK) fprintf(stderr, "vla: error: %s\n", vla_error_message());
    int64_t t[3] = {s->written, s->kept, s->frames};
    if (all == VLA_OK) all = vla_comm_allreduce(comm, t, t, 3, VLA_COMM_I64, VLA_COMM_SUM);
    if (all == VLA_OK) all = vla_comm_agree(comm, fin, "data prepare manifest");
    for (int i = 0; i < 3; i++) totals[i] += t[i];
    return all;
}

static int cmd_prepare(int argc, char **argv) {
    const char *root = NULL, *out = NULL, *episodes = NULL, *image_size = NULL, *repo_id = NULL;
    double shard_mb = 256;
    int64_t workers = 0, crash_at = 0;
    bool quiet = false;
    const vla_flag flags[] = {
        {"dataset.root", VLA_FLAG_STRING, &root, "DIR[,DIR2…]",
         "the LeRobot dataset (v2.1 or v3.0) to prepare (required); several: one shard set each under OUT and "
         "OUT/mixture.json, so --dataset.shards=OUT trains the mixture"},
        {"dataset.repo_id", VLA_FLAG_STRING, &repo_id, "ORG/NAME[,…]",
         "instead of --dataset.root: the dataset by its Hugging Face name, read from the LeRobot cache "
         "($HF_LEROBOT_HOME, else ~/.cache/huggingface/lerobot); vla.c does not download"},
        {"dataset.episodes", VLA_FLAG_STRING, &episodes, "LIST",
         "only these episodes (LeRobot's name): 0,3,7 or 2-5 or [1, 2] (one dataset only)"},
        {"out", VLA_FLAG_STRING, &out, "DIR", "the shard set to write (required; resumed when it holds shards of the same plan)"},
        {"image_size", VLA_FLAG_STRING, &image_size, "H,W",
         "store every camera's frames resized to H×W (the policy's image size, e.g. 224,224 or 96); default: each camera's own size"},
        {"shard_mb", VLA_FLAG_FLOAT, &shard_mb, "MB", "target shard size in MiB; a shard holds whole episodes (default 256)"},
        {"num_workers", VLA_FLAG_INT, &workers, "N", "decoding threads of this process (default: its share of the cores)"},
        {"quiet", VLA_FLAG_BOOL, &quiet, NULL, "no progress line"},
        {"crash_at_frame", VLA_FLAG_INT, &crash_at, "N", "testing: SIGKILL this process after it wrote N frames"},
    };
    const vla_command_spec spec = {
        "vla data prepare", NULL, "Decode a LeRobot dataset once into training shards.",
        "Writes OUT/shard-NNNNN.vshard files (numeric columns as the reader holds them, every camera's frames decoded and "
        "resized once, CRC-checked), OUT/meta/ and OUT/manifest.json. Train from them with --dataset.shards=OUT (or "
        "--dataset.root=OUT): every sample equals the direct read of the dataset, with no video decoding. Under "
        "`mpirun -np N` each rank writes every N-th shard and rank 0 writes the manifest; the files are the same for any N. "
        "A prepare that was interrupted resumes: shards already complete and of the same plan are kept. Several "
        "datasets (--dataset.root=A,B) go to OUT/00-<A's name>/, OUT/01-<B's name>/, … and OUT/mixture.json. See "
        "docs/dataset.md, \"Training shards\" and \"Mixtures\".",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if ((!root && !repo_id) || !out) {
        fprintf(stderr, "vla: error: vla data prepare: --dataset.root=DIR and --out=DIR are required (see --help)\n");
        return 2;
    }
    char repo_roots[8192];
    if (repo_id && (rc = vla_cli_dataset_source(spec.command, NULL, root, repo_id, repo_roots, sizeof repo_roots, &root)) >= 0)
        return rc;
    int h = 0, w = 0;
    if (image_size) {
        int n = 0;
        if (sscanf(image_size, "%d,%d%n", &h, &w, &n) == 2 && image_size[n] == 0) {
        } else if (sscanf(image_size, "%d%n", &h, &n) == 1 && image_size[n] == 0) {
            w = h;
        } else {
            h = 0;
        }
        if (h < 1 || w < 1 || h > 8192 || w > 8192) {
            fprintf(stderr, "vla: error: vla data prepare: --image_size=%s: give H,W (e.g. 224,224) or one size\n", image_size);
            return 2;
        }
    }
    vla_comm *comm;
    vla_status st = vla_comm_init(NULL, &comm);
    if (st != VLA_OK) return vla_cli_fail(st);
    int rank = vla_comm_rank(comm), world = vla_comm_world(comm);
    if (workers <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cores / world > 0 ? cores / world : 1;
    }
    if (crash_at > 0) vla_fault_set(VLA_FAULT_SHARD_FRAME, VLA_FAULT_KILL, crash_at, crash_at);
    vla_lr_open_opts sel = {0};
    int64_t *eps = NULL;
    if (episodes && (st = vla_lerobot_parse_episodes(episodes, &eps, &sel.n_episodes)) != VLA_OK) {
        vla_comm_finalize(comm);
        return vla_cli_fail(st);
    }
    sel.episodes = eps;
    static char roots[VLA_SHARDS_MIXTURE_MAX][VLA_ROOT_MAX];
    int n_roots = 0;
    vla_status all = vla_dataset_roots(root, false, roots, VLA_SHARDS_MIXTURE_MAX, &n_roots);
    if (all != VLA_OK)
        all = vla_error_context(all, "--dataset.root");
    else if (n_roots > 1 && episodes)
        all = vla_error(VLA_ERR_INVALID_ARG, "--dataset.episodes selects episodes of one dataset; prepare a mixture's "
                        "datasets one by one to select theirs");
    if (all != VLA_OK) {
        free(eps);
        vla_comm_finalize(comm);
        fprintf(stderr, "vla: error: vla data prepare: %s\n", vla_error_message());
        return 2;
    }
    int64_t totals[3] = {0};
    int64_t shards = 0;
    double seconds = 0;
    static char sets[VLA_SHARDS_MIXTURE_MAX][256], dirs[VLA_SHARDS_MIXTURE_MAX][VLA_ROOT_MAX + 256];
    for (int i = 0; i < n_roots && all == VLA_OK; i++) {
        if (n_roots > 1) { /* OUT/NN-<the dataset directory's name> */
            const char *base = strrchr(roots[i], '/');
            base = base && base[1] ? base + 1 : roots[i];
            snprintf(sets[i], sizeof sets[i], "%02d-%.200s", i, base);
            snprintf(dirs[i], sizeof dirs[i], "%s/%s", out, sets[i]);
        } else {
            snprintf(dirs[i], sizeof dirs[i], "%s", out);
        }
        vla_shards_prepare_opts o = {.out = dirs[i], .sel = episodes ? &sel : NULL, .image_h = h, .image_w = w,
                                     .shard_mb = shard_mb, .rank = rank, .world = world, .num_workers = (int)workers,
                                     .progress = !quiet && rank == 0 && isatty(STDERR_FILENO)};
        vla_shards_prepare_stats s;
        all = prepare_one(comm, roots[i], &o, totals, &s);
        shards += s.shards, seconds += s.seconds;
    }
    if (all == VLA_OK && n_roots > 1) { /* the sets are complete: tie them together, last */
        vla_status mst = VLA_OK;
        const char *names[VLA_SHARDS_MIXTURE_MAX], *srcs[VLA_SHARDS_MIXTURE_MAX];
        for (int i = 0; i < n_roots; i++) names[i] = sets[i], srcs[i] = roots[i];
        if (rank == 0) mst = vla_shards_mixture_write(out, names, srcs, n_roots);
        if (rank == 0 && mst != VLA_OK) fprintf(stderr, "vla: error: %s\n", vla_error_message());
        all = vla_comm_agree(comm, mst, "data prepare mixture.json");
    }
    if (rank == 0 && all == VLA_OK) {
        json_t *j = json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:i,s:f,s:f}", "out", out, "datasets", n_roots, "shards",
                              (json_int_t)shards, "written", (json_int_t)totals[0], "kept", (json_int_t)totals[1],
                              "frames", (json_int_t)totals[2], "ranks", world, "seconds", seconds,
                              "frames_per_s", seconds > 0 ? (double)totals[2] / seconds : 0.0);
        char *text = j ? json_dumps(j, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) : NULL;
        if (text) puts(text);
        free(text);
        json_decref(j);
    }
    free(eps);
    vla_comm_finalize(comm);
    return all == VLA_OK ? 0 : 1;
}

int vla_cmd_data(int argc, char **argv) {
    static const vla_cli_command cmds[] = {
        {"prepare", "decode LeRobot datasets once into checksummed training shards (resumable, MPI)", cmd_prepare},
    };
    return vla_cli_dispatch("vla data", cmds, (int)(sizeof cmds / sizeof cmds[0]), argc, argv);
}
