/* metrics.c — JSONL/CSV metric logs and the progress line (see metrics.h). */
#include "train/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/fsutil.h"

static int valid_col(const char *s) {
    if (!s || !*s || strlen(s) > 128 || strcmp(s, "step") == 0) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '.' || *s == '/' || *s == '-'))
            return 0;
    return 1;
}

static char *path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Step of a complete line (NUL-terminated, no newline), or -1 if it is not a
 * data row. */
static long long jsonl_step(const char *line) {
    json_error_t err;
    json_t *v = json_loads(line, 0, &err);
    long long step = -1;
    json_t *s = v ? json_object_get(v, "step") : NULL;
    if (s && json_is_integer(s)) step = (long long)json_integer_value(s);
    json_decref(v);
    return step;
}

static long long csv_step(const char *line) {
    char *end;
    errno = 0;
    long long step = strtoll(line, &end, 10);
    if (end == line || (*end != ',' && *end != '\0') || errno) return -1;
    return step;
}

/* Keep the header (CSV) and the complete rows with step <= keep_step; drop
 * the rest and a torn last line; rewrite atomically if anything changed.
 * For the CSV, the header must equal `header`. */
static vla_status trim_log(const char *path, int64_t keep_step, int is_csv, const char *header) {
    char *data;
    size_t n;
    vla_status st = vla_read_file(path, &data, &n);
    if (st == VLA_ERR_NOT_FOUND) return VLA_OK;
    VLA_TRY(st);
    char *out = malloc(n + 1);
    if (!out) {
        free(data);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t on = 0, pos = 0;
    int line_no = 0;
    st = VLA_OK;
    while (pos < n) {
        char *nl = memchr(data + pos, '\n', n - pos);
        if (!nl) break; /* torn last line */
        size_t len = (size_t)(nl - (data + pos));
        *nl = '\0';
        const char *line = data + pos;
        int keep;
        if (is_csv && line_no == 0) {
            if (strcmp(line, header) != 0) {
                st = vla_error(VLA_ERR_INVALID_ARG,
                               "%s: its columns (%s) differ from this run's (%s); move it away to resume", path, line,
                               header);
                break;
            }
            keep = 1;
        } else {
            long long s = is_csv ? csv_step(line) : jsonl_step(line);
            keep = s >= 0 && s <= keep_step;
        }
        if (keep) {
            memcpy(out + on, line, len);
            out[on + len] = '\n';
            on += len + 1;
        }
        pos += len + 1;
        line_no++;
    }
    if (st == VLA_OK && on != n) st = vla_write_file_atomic(path, out, on);
    free(out);
    free(data);
    return st;
}

vla_status vla_metrics_open(vla_metrics *m, const char *dir, const char *const *cols, int ncols, int64_t resume_step) {
    memset(m, 0, sizeof *m);
    if (ncols < 0 || ncols > VLA_METRICS_MAX_COLS)
        return vla_error(VLA_ERR_INVALID_ARG, "metrics: %d columns (at most %d)", ncols, VLA_METRICS_MAX_COLS);
    for (int i = 0; i < ncols; i++) {
        if (!valid_col(cols[i]))
            return vla_error(VLA_ERR_INVALID_ARG, "metrics: bad column name '%s'", cols[i] ? cols[i] : "");
        for (int j = 0; j < i; j++)
            if (strcmp(cols[i], cols[j]) == 0)
                return vla_error(VLA_ERR_INVALID_ARG, "metrics: column '%s' given twice", cols[i]);
    }
    VLA_TRY(vla_mkdirs(dir));
    m->jsonl_path = path_join(dir, "metrics.jsonl");
    m->csv_path = path_join(dir, "metrics.csv");
    size_t hcap = 8;
    for (int i = 0; i < ncols; i++) hcap += strlen(cols[i]) + 1;
    char *header = malloc(hcap);
    if (!m->jsonl_path || !m->csv_path || !header) {
        free(header);
        vla_metrics_close(m);
        return vla_error(VLA_ERR_NOMEM, "metrics: out of memory");
    }
    strcpy(header, "step");
    vla_status st = VLA_OK;
    for (int i = 0; i < ncols; i++) {
        strcat(header, ",");
        strcat(header, cols[i]);
        m->cols[i] = strdup(cols[i]);
        if (!m->cols[i]) st = vla_error(VLA_ERR_NOMEM, "metrics: out of memory");
    }
    m->ncols = ncols;
    if (st == VLA_OK && resume_step >= 0) {
        st = trim_log(m->jsonl_path, resume_step, 0, NULL);
        if (st == VLA_OK) st = trim_log(m->csv_path, resume_step, 1, header);
    }
    const char *mode = resume_step >= 0 ? "a" : "w";
    if (st == VLA_OK && !(m->jsonl = fopen(m->jsonl_path, mode)))
        st = vla_error(VLA_ERR_IO, "%s: cannot open: %s", m->jsonl_path, strerror(errno));
    if (st == VLA_OK && !(m->csv = fopen(m->csv_path, mode)))
        st = vla_error(VLA_ERR_IO, "%s: cannot open: %s", m->csv_path, strerror(errno));
    if (st == VLA_OK) {
        /* a new or empty CSV (e.g. its header was torn) gets the header */
        fseek(m->csv, 0, SEEK_END);
        if (ftell(m->csv) == 0 && (fprintf(m->csv, "%s\n", header) < 0 || fflush(m->csv) != 0))
            st = vla_error(VLA_ERR_IO, "%s: write failed: %s", m->csv_path, strerror(errno));
    }
    free(header);
    if (st != VLA_OK) vla_metrics_close(m);
    return st;
}

vla_status vla_metrics_log(vla_metrics *m, int64_t step, const double *values) {
    /* Each line is built whole and written with one call, so a crash leaves at
     * most one torn line, which the next resume drops. */
    size_t cap = 64;
    for (int i = 0; i < m->ncols; i++) cap += strlen(m->cols[i]) + 48; /* name, quotes, %.9g */
    char *j = malloc(cap), *c = malloc(cap);
    if (!j || !c) {
        free(j), free(c);
        return vla_error(VLA_ERR_NOMEM, "metrics: out of memory");
    }
    size_t jn = (size_t)snprintf(j, cap, "{\"step\": %lld", (long long)step);
    size_t cn = (size_t)snprintf(c, cap, "%lld", (long long)step);
    for (int i = 0; i < m->ncols; i++) {
        double v = values[i];
        if (isfinite(v)) {
            jn += (size_t)snprintf(j + jn, cap - jn, ", \"%s\": %.9g", m->cols[i], v);
            cn += (size_t)snprintf(c + cn, cap - cn, ",%.9g", v);
        } else {
            cn += (size_t)snprintf(c + cn, cap - cn, ",");
        }
    }
    jn += (size_t)snprintf(j + jn, cap - jn, "}\n");
    cn += (size_t)snprintf(c + cn, cap - cn, "\n");
    vla_status st = VLA_OK;
    if (fwrite(j, 1, jn, m->jsonl) != jn || fflush(m->jsonl) != 0)
        st = vla_error(VLA_ERR_IO, "%s: write failed: %s", m->jsonl_path, strerror(errno));
    else if (fwrite(c, 1, cn, m->csv) != cn || fflush(m->csv) != 0)
        st = vla_error(VLA_ERR_IO, "%s: write failed: %s", m->csv_path, strerror(errno));
    free(j);
    free(c);
    return st;
}

vla_status vla_metrics_note(vla_metrics *m, int64_t step, const char *key, const json_t *value) {
    json_t *o = json_pack("{s:I, s:O}", "step", (json_int_t)step, key, (json_t *)value);
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!line) return vla_error(VLA_ERR_NOMEM, "metrics: out of memory");
    vla_status st = VLA_OK;
    if (fprintf(m->jsonl, "%s\n", line) < 0 || fflush(m->jsonl) != 0)
        st = vla_error(VLA_ERR_IO, "%s: write failed: %s", m->jsonl_path, strerror(errno));
    free(line);
    return st;
}

void vla_metrics_close(vla_metrics *m) {
    if (m->jsonl) fclose(m->jsonl);
    if (m->csv) fclose(m->csv);
    free(m->jsonl_path);
    free(m->csv_path);
    for (int i = 0; i < m->ncols; i++) free(m->cols[i]);
    memset(m, 0, sizeof *m);
}

vla_status vla_metrics_read_column(const char *jsonl_path, const char *col, double **steps, double **values,
                                   size_t *n) {
    *steps = *values = NULL;
    *n = 0;
    char *data;
    size_t len;
    VLA_TRY(vla_read_file(jsonl_path, &data, &len));
    size_t cap = 0;
    char *save = NULL;
    vla_status st = VLA_OK;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t err;
        json_t *v = json_loads(line, 0, &err);
        json_t *s = v ? json_object_get(v, "step") : NULL, *x = v ? json_object_get(v, col) : NULL;
        if (s && json_is_integer(s) && x && json_is_number(x)) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 256;
                double *ns = realloc(*steps, cap * sizeof **steps), *nv = ns ? realloc(*values, cap * sizeof **values) : NULL;
                if (ns) *steps = ns;
                if (nv) *values = nv;
                if (!ns || !nv) {
                    json_decref(v);
                    st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", jsonl_path);
                    break;
                }
            }
            (*steps)[*n] = (double)json_integer_value(s);
            (*values)[*n] = json_number_value(x);
            (*n)++;
        }
        json_decref(v);
    }
    free(data);
    if (st != VLA_OK) {
        free(*steps), free(*values);
        *steps = *values = NULL;
        *n = 0;
    }
    return st;
}

/* ---- progress line ---------------------------------------------------------- */

void vla_meter_start(vla_meter *m, double now_s) {
    m->start_s = now_s;
    m->wait_s = 0;
    m->samples = 0;
}

void vla_meter_add(vla_meter *m, int64_t samples, double data_wait_s) {
    m->samples += samples;
    if (data_wait_s > 0) m->wait_s += data_wait_s;
}

void vla_meter_read(vla_meter *m, double now_s, double *samples_per_s, double *data_wait_frac) {
    double dt = now_s - m->start_s;
    *samples_per_s = dt > 0 ? (double)m->samples / dt : 0.0;
    *data_wait_frac = dt > 0 ? fmin(1.0, m->wait_s / dt) : 0.0;
    vla_meter_start(m, now_s);
}

const char *vla_progress_format(const vla_progress *p, char *buf, size_t cap) {
    char eta[32];
    double pct = p->total_steps > 0 ? 100.0 * (double)p->step / (double)p->total_steps : 0.0;
    int n = snprintf(buf, cap,
                     "step %lld/%lld (%.1f%%) | loss %.4g | grad %.3g | lr %.2e | %.1f samples/s | data %.1f%% | "
                     "ETA %s",
                     (long long)p->step, (long long)p->total_steps, pct, p->loss, p->grad_norm, p->lr,
                     p->samples_per_s, 100.0 * p->data_wait_frac, vla_format_hms(p->eta_s, eta, sizeof eta));
    if (p->skipped > 0 && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " | skipped %lld", (long long)p->skipped);
    return buf;
}
