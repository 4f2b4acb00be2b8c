/* bench_parquet.c — `vla bench parquet`: Parquet throughput on a generated
 * LeRobot-like data file (~100k rows, one row group per episode, SNAPPY,
 * dictionary where it pays): the write once, then a scan that decodes every
 * column of every row group, and the dense float path the data loader uses
 * (observation.state and action as [rows × 6]). One JSON object per line;
 * MB/s counts bytes of the file read. --file scans an existing file instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/timer.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "io/parquet.h"

enum { B_STATE, B_ACTION, B_TS, B_FRAME, B_EP, B_INDEX, B_TASK, B_N };

static vla_status write_file(const char *path, int64_t rows, int64_t ep_len) {
    static const vla_parquet_field f[B_N] = {
        {"observation.state", VLA_PQW_FLOAT, 1, 0}, {"action", VLA_PQW_FLOAT, 1, 0},
        {"timestamp", VLA_PQW_FLOAT, 0, 0},         {"frame_index", VLA_PQW_INT64, 0, 0},
        {"episode_index", VLA_PQW_INT64, 0, 0},     {"index", VLA_PQW_INT64, 0, 0},
        {"task_index", VLA_PQW_INT64, 0, 0},
    };
    float *state = malloc((size_t)ep_len * 6 * sizeof *state), *action = malloc((size_t)ep_len * 6 * sizeof *action);
    float *ts = malloc((size_t)ep_len * sizeof *ts);
    int64_t *frame = malloc((size_t)ep_len * sizeof(int64_t)), *ep = malloc((size_t)ep_len * sizeof(int64_t));
    int64_t *index = malloc((size_t)ep_len * sizeof(int64_t)), *task = malloc((size_t)ep_len * sizeof(int64_t));
    int64_t *lo = malloc((size_t)(ep_len + 1) * sizeof(int64_t));
    vla_parquet_writer *w = NULL;
    vla_status st = (state && action && ts && frame && ep && index && task && lo) ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
    vla_parquet_write_options opt = vla_parquet_write_defaults();
    if (st == VLA_OK) st = vla_parquet_writer_open(path, f, B_N, &opt, &w);
    vla_rng g = vla_rng_stream(7, 0);
    float pos[6] = {0};
    for (int64_t base = 0, e = 0; st == VLA_OK && base < rows; base += ep_len, e++) {
        int64_t n = rows - base < ep_len ? rows - base : ep_len;
        lo[0] = 0;
        for (int64_t r = 0; r < n; r++) {
            for (int k = 0; k < 6; k++) {
                /* a smooth random walk, like joint positions */
                pos[k] += (float)(vla_rng_uniform_f64(&g) - 0.5);
                state[r * 6 + k] = pos[k];
                action[r * 6 + k] = pos[k] + (float)(vla_rng_uniform_f64(&g) - 0.5) * 0.1f;
            }
            lo[r + 1] = (r + 1) * 6;
            ts[r] = (float)r / 30.0f;
            frame[r] = r;
            ep[r] = e;
            index[r] = base + r;
            task[r] = e % 3;
        }
        vla_parquet_wcolumn c[B_N] = {{.values = state, .list_offsets = lo}, {.values = action, .list_offsets = lo},
                                      {.values = ts}, {.values = frame}, {.values = ep}, {.values = index}, {.values = task}};
        st = vla_parquet_writer_write_row_group(w, n, c);
    }
    if (w) {
        if (st == VLA_OK) st = vla_parquet_writer_close(w);
        else vla_parquet_writer_abort(w);
    }
    free(state);
    free(action);
    free(ts);
    free(frame);
    free(ep);
    free(index);
    free(task);
    free(lo);
    return st;
}

static vla_status scan_all(const char *path, int64_t *rows, int64_t *values) {
    vla_parquet_file *pq;
    VLA_TRY(vla_parquet_open(path, &pq));
    vla_status st = VLA_OK;
    *rows = vla_parquet_num_rows(pq);
    for (int g = 0; g < vla_parquet_num_row_groups(pq) && st == VLA_OK; g++)
        for (int c = 0; c < vla_parquet_num_columns(pq) && st == VLA_OK; c++) {
            vla_parquet_column col;
            st = vla_parquet_read_column(pq, g, c, &col);
            *values += col.num_values;
            vla_parquet_column_free(&col);
        }
    vla_parquet_close(pq);
    return st;
}

static vla_status dense(const char *path) {
    vla_parquet_file *pq;
    VLA_TRY(vla_parquet_open(path, &pq));
    float *m = NULL;
    int64_t rows;
    int width;
    vla_status st = vla_parquet_read_f32_matrix(pq, -1, "observation.state", &m, &rows, &width);
    free(m);
    m = NULL;
    if (st == VLA_OK) st = vla_parquet_read_f32_matrix(pq, -1, "action", &m, &rows, &width);
    free(m);
    vla_parquet_close(pq);
    return st;
}

int vla_bench_parquet(int argc, char **argv) {
    int64_t rows = 100000, ep_len = 400, repeat = 5;
    const char *file = NULL, *out = NULL;
    bool quick = false;
    const vla_flag flags[] = {
        {"rows", VLA_FLAG_INT, &rows, "N", "rows in the generated file"},
        {"episode-len", VLA_FLAG_INT, &ep_len, "N", "rows per episode (= per row group)"},
        {"repeat", VLA_FLAG_INT, &repeat, "N", "scans to time (the best is reported)"},
        {"file", VLA_FLAG_STRING, &file, "PATH", "scan this file instead of a generated one"},
        {"out", VLA_FLAG_STRING, &out, "PATH", "where to write the generated file (default: a temp file, removed)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "10,000 rows, one scan (smoke test)"},
    };
    const vla_command_spec spec = {"vla bench parquet", NULL, "Parquet write and scan throughput on a LeRobot-like file.",
                                   NULL, flags, 6, 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) rows = rows < 10000 ? rows : 10000, repeat = 1;
    if (rows < 1 || ep_len < 1 || repeat < 1) {
        fprintf(stderr, "vla: error: --rows, --episode-len and --repeat must be positive\n");
        return 2;
    }
    char tmp[512];
    const char *path = file;
    if (!path) {
        if (out) {
            path = out;
        } else {
            const char *dir = getenv("TMPDIR");
            snprintf(tmp, sizeof tmp, "%s/vla-bench-parquet-%ld.parquet", dir ? dir : "/tmp", (long)getpid());
            path = tmp;
        }
        double t0 = vla_now_s();
        vla_status st = write_file(path, rows, ep_len);
        double dt = vla_now_s() - t0;
        if (st != VLA_OK) return vla_cli_fail(st);
        struct stat sb;
        long long bytes = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
        printf("{\"bench\":\"parquet_write\",\"rows\":%lld,\"row_groups\":%lld,\"codec\":\"snappy\",\"file_bytes\":%lld,"
               "\"seconds\":%.4f,\"rows_per_s\":%.0f,\"mb_per_s\":%.1f}\n",
               (long long)rows, (long long)((rows + ep_len - 1) / ep_len), bytes, dt, rows / dt, bytes / dt / 1e6);
        fflush(stdout);
    }
    struct stat sb;
    long long bytes = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
    double best = 1e30, best_dense = 1e30;
    int64_t nrows = 0, values = 0;
    vla_status st = VLA_OK;
    for (int64_t i = 0; i < repeat && st == VLA_OK; i++) {
        values = 0;
        double t0 = vla_now_s();
        st = scan_all(path, &nrows, &values);
        double dt = vla_now_s() - t0;
        if (dt < best) best = dt;
        t0 = vla_now_s();
        if (st == VLA_OK) st = dense(path);
        dt = vla_now_s() - t0;
        if (dt < best_dense) best_dense = dt;
    }
    if (!file && !out) unlink(path);
    if (st != VLA_OK) return vla_cli_fail(st);
    printf("{\"bench\":\"parquet_scan\",\"columns\":\"all\",\"rows\":%lld,\"values\":%lld,\"file_bytes\":%lld,"
           "\"seconds\":%.4f,\"rows_per_s\":%.0f,\"values_per_s\":%.0f,\"mb_per_s\":%.1f}\n",
           (long long)nrows, (long long)values, bytes, best, nrows / best, values / best, bytes / best / 1e6);
    if (!file)
        printf("{\"bench\":\"parquet_dense_f32\",\"columns\":\"observation.state,action\",\"rows\":%lld,\"seconds\":%.4f,"
               "\"rows_per_s\":%.0f}\n",
               (long long)nrows, best_dense, nrows / best_dense);
    return 0;
}
