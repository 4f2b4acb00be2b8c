/* cmd_dataset.c — `vla dataset`: inspect LeRobot datasets (info, frame),
 * check them (validate, stats) and convert v2.1 to v3.0. Exit codes: 0 ok
 * or clean, 1 problems or errors, 2 usage. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "cli/cli.h"
#include "data/lerobot.h"
#include "data/shards.h"
#include "io/video.h"

static void print_json(json_t *j) {
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    if (s) puts(s);
    free(s);
}

static void be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static vla_status png_chunk(vla_atomic_file *af, const char *type, const uint8_t *data, uint32_t n) {
    uint8_t hdr[8];
    be32(hdr, n);
    memcpy(hdr + 4, type, 4);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), hdr + 4, 4);
    if (n) crc = crc32(crc, data, n);
    uint8_t tail[4];
    be32(tail, (uint32_t)crc);
    VLA_TRY(vla_atomic_write(af, hdr, 8));
    if (n) VLA_TRY(vla_atomic_write(af, data, n));
    return vla_atomic_write(af, tail, 4);
}

/* An 8-bit RGB PNG (filter 0 rows, zlib), written atomically. */
static vla_status write_png(const char *path, const uint8_t *rgb, int w, int h) {
    size_t raw_n = (size_t)h * ((size_t)w * 3 + 1);
    uint8_t *raw = malloc(raw_n);
    uLongf zn = compressBound((uLong)raw_n);
    uint8_t *z = malloc(zn);
    if (!raw || !z) {
        free(raw);
        free(z);
        return vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    for (int y = 0; y < h; y++) {
        raw[(size_t)y * (w * 3 + 1)] = 0;
        memcpy(raw + (size_t)y * (w * 3 + 1) + 1, rgb + (size_t)y * w * 3, (size_t)w * 3);
    }
    vla_status st = compress2(z, &zn, raw, (uLong)raw_n, 6) == Z_OK ? VLA_OK : vla_error(VLA_ERR_INTERNAL, "%s: zlib failed", path);
    free(raw);
    vla_atomic_file af;
    if (st == VLA_OK) st = vla_atomic_open(&af, path);
    if (st == VLA_OK) {
        static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        uint8_t ihdr[13];
        be32(ihdr, (uint32_t)w);
        be32(ihdr + 4, (uint32_t)h);
        ihdr[8] = 8, ihdr[9] = 2, ihdr[10] = 0, ihdr[11] = 0, ihdr[12] = 0;
        st = vla_atomic_write(&af, sig, 8);
        if (st == VLA_OK) st = png_chunk(&af, "IHDR", ihdr, 13);
        if (st == VLA_OK) st = png_chunk(&af, "IDAT", z, (uint32_t)zn);
        if (st == VLA_OK) st = png_chunk(&af, "IEND", NULL, 0);
        if (st == VLA_OK) st = vla_atomic_commit(&af);
        else vla_atomic_abort(&af);
    }
    free(z);
    return st;
}

static json_t *shape_json(const vla_lr_feature *f) {
    json_t *a = json_array();
    for (int d = 0; d < f->ndim; d++) json_array_append_new(a, json_integer(f->shape[d]));
    return a;
}

/* What the first video file of a camera actually holds (NULL fields when absent). */
static json_t *camera_probe(const vla_lerobot *ds, int cam) {
    const vla_lr_feature *f = &ds->features[ds->camera_feature[cam]];
    json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:s,s:s}", "key", f->key, "dtype", f->dtype_name, "height", f->height, "width",
                          f->width_px, "codec", f->codec[0] ? f->codec : (f->dtype == VLA_LR_IMAGE ? "png" : "?"), "pix_fmt",
                          f->pix_fmt[0] ? f->pix_fmt : "?");
    if (ds->shards) { /* decoded once into the shards: no video to probe */
        json_object_set_new(o, "stored", json_string("shards"));
        return o;
    }
    if (f->dtype != VLA_LR_VIDEO || ds->n_episodes == 0) return o;
    char path[2048];
    vla_video_decoder *d;
    int64_t ep = 0; /* the first episode whose video is there (a partial download may lack the first) */
    while (ep + 1 < ds->n_episodes && !(vla_lerobot_video_file(ds, cam, ep, path, sizeof path) == VLA_OK && vla_path_exists(path))) ep++;
    if (vla_lerobot_video_file(ds, cam, ep, path, sizeof path) == VLA_OK && vla_video_decoder_open(path, NULL, &d) == VLA_OK) {
        const vla_video_info *vi = vla_video_decoder_info(d);
        json_object_set_new(o, "file", json_pack("{s:s,s:s,s:s,s:i,s:i,s:f,s:f}", "path", path, "codec", vi->codec, "decoder",
                                                 vi->decoder, "width", vi->width, "height", vi->height, "fps", vi->fps,
                                                 "duration", vi->duration));
        vla_video_decoder_close(d);
    } else {
        json_object_set_new(o, "file_error", json_string(vla_error_message()));
    }
    return o;
}

#define EPISODES_FLAG(var)                                                                                       \
    {"dataset.episodes", VLA_FLAG_STRING, &var, "LIST",                                                              \
     "only these episodes (LeRobot's name): 0,3,7 or 2-5 or [1, 2]; for partial downloads"}

/* The dataset, as ROOT or LeRobot's --dataset.root=DIR or --dataset.repo_id=ORG/NAME (the LeRobot cache). */
#define ROOT_FLAGS(root, repo)                                                                                   \
    {"dataset.root", VLA_FLAG_STRING, &root, "DIR", "the dataset's directory (instead of ROOT)"},                 \
        {"dataset.repo_id", VLA_FLAG_STRING, &repo, "ORG/NAME",                                                  \
         "the dataset by its Hugging Face name, read from the LeRobot cache ($HF_LEROBOT_HOME, else "           \
         "~/.cache/huggingface/lerobot); vla.c does not download"}
typedef struct {
    const char *root, *repo;
    char buf[4096];
} root_src;
/* The command's dataset root from the positional or the flags; -1 to go on, else the exit code. */
static int dataset_root(const char *cmd, const vla_flags_result *res, int first_pos, root_src *rs, const char **out) {
    const char *pos = res->n_positional > first_pos ? res->positional[first_pos] : NULL;
    return vla_cli_dataset_source(cmd, pos, rs->root, rs->repo, rs->buf, sizeof rs->buf, out);
}

/* Open with an optional episode selection (--dataset.episodes). */
static vla_status open_selected(const char *root, const char *episodes, bool meta_only, vla_lerobot **ds) {
    vla_lr_open_opts o = {0};
    int64_t *eps = NULL;
    if (episodes) VLA_TRY(vla_lerobot_parse_episodes(episodes, &eps, &o.n_episodes));
    o.episodes = eps;
    o.meta_only = meta_only;
    vla_status st = vla_lerobot_open_opts(root, &o, ds);
    free(eps);
    return st;
}

static int cmd_info(int argc, char **argv) {
    bool as_json = false;
    const char *episodes = NULL, *root = NULL;
    root_src src = {0};
    const vla_flag flags[] = {{"json", VLA_FLAG_BOOL, &as_json, NULL, "machine-readable output"}, EPISODES_FLAG(episodes),
                              ROOT_FLAGS(src.root, src.repo)};
    const vla_command_spec spec = {"vla dataset info", "[ROOT]", "Print a LeRobot dataset's metadata.",
                                   "Version, fps, robot type, episodes (and how many have their data files: a partial "
                                   "download), frames, tasks, features (shape, dtype) and cameras (codec, size, and what "
                                   "the first present video file holds). Reads meta/ only.",
                                   flags, 4, 0, 1};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if ((rc = dataset_root(spec.command, &res, 0, &src, &root)) >= 0) return rc;
    vla_lerobot *ds;
    vla_status st = open_selected(root, episodes, true, &ds);
    if (st != VLA_OK) return vla_cli_fail(st);
    int64_t frames = 0, first_missing;
    for (int64_t e = 0; e < ds->n_episodes; e++) frames += ds->episodes[e].length;
    char present_list[256];
    int64_t present = ds->shards ? ds->n_episodes : vla_lerobot_presence(ds, &first_missing, present_list, sizeof present_list);
    if (ds->shards) present_list[0] = 0;
    json_t *feats = json_array(), *cams = json_array(), *tasks = json_array();
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        json_array_append_new(feats, json_pack("{s:s,s:s,s:o}", "key", f->key, "dtype", f->dtype_name, "shape", shape_json(f)));
    }
    for (int c = 0; c < ds->n_cameras; c++) json_array_append_new(cams, camera_probe(ds, c));
    for (int64_t t = 0; t < ds->n_tasks; t++) json_array_append_new(tasks, json_string(ds->tasks[t]));
    json_t *j = json_pack("{s:s,s:s,s:f,s:s,s:I,s:I,s:I,s:s,s:I,s:I,s:o,s:o,s:o}", "root", ds->root, "codebase_version",
                          ds->codebase_version, "fps", ds->fps, "robot_type", ds->robot_type, "total_episodes",
                          (json_int_t)ds->n_episodes_listed, "episodes", (json_int_t)ds->n_episodes, "episodes_present",
                          (json_int_t)present, "present_list", present_list, "total_frames", (json_int_t)frames,
                          "total_tasks", (json_int_t)ds->n_tasks, "tasks", tasks, "features", feats, "cameras", cams);
    if (as_json) {
        print_json(j);
    } else {
        printf("%s\n  version     %s\n  fps         %g\n  robot_type  %s\n  episodes    %lld", ds->root,
               ds->codebase_version, ds->fps, ds->robot_type, (long long)ds->n_episodes);
        if (ds->selected) printf(" selected of %lld", (long long)ds->n_episodes_listed);
        if (ds->shards) printf(" (a shard set of %lld shards from `vla data prepare`)", (long long)vla_shards_count(ds->shards));
        if (present < ds->n_episodes)
            printf(" (%lld with data files: a partial download; use --dataset.episodes=%s)", (long long)present,
                   present ? present_list : "...");
        printf("\n  frames      %lld\n  tasks       %lld\n", (long long)frames, (long long)ds->n_tasks);
        for (int64_t t = 0; t < ds->n_tasks && t < 10; t++) printf("    [%lld] %s\n", (long long)t, ds->tasks[t]);
        printf("  features\n");
        for (int i = 0; i < ds->n_features; i++) {
            const vla_lr_feature *f = &ds->features[i];
            char shape[128] = "";
            for (int d = 0; d < f->ndim; d++)
                snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? "," : "", (long long)f->shape[d]);
            printf("    %-36s %-8s [%s]\n", f->key, f->dtype_name, shape);
        }
        if (ds->n_cameras) printf("  cameras\n");
        for (size_t c = 0; c < json_array_size(cams); c++) {
            json_t *o = json_array_get(cams, c), *file = json_object_get(o, "file");
            printf("    %-36s %s %dx%d %s", json_string_value(json_object_get(o, "key")), json_string_value(json_object_get(o, "codec")),
                   (int)json_integer_value(json_object_get(o, "width")), (int)json_integer_value(json_object_get(o, "height")),
                   json_string_value(json_object_get(o, "pix_fmt")));
            if (file)
                printf("  (file: %s %dx%d, %.2f s)\n", json_string_value(json_object_get(file, "codec")),
                       (int)json_integer_value(json_object_get(file, "width")), (int)json_integer_value(json_object_get(file, "height")),
                       json_real_value(json_object_get(file, "duration")));
            else if (json_object_get(o, "stored"))
                printf("  (stored decoded in the shards)\n");
            else if (json_object_get(o, "file_error"))
                printf("  (video: %s)\n", json_string_value(json_object_get(o, "file_error")));
            else
                printf("\n");
        }
    }
    json_decref(j);
    vla_lerobot_close(ds);
    return 0;
}

static int cmd_validate(int argc, char **argv) {
    bool as_json = false;
    const char *episodes = NULL, *frames = "ends", *root = NULL;
    root_src src = {0};
    const vla_flag flags[] = {{"json", VLA_FLAG_BOOL, &as_json, NULL, "print {\"root\",\"clean\",\"problems\":[{\"file\",\"reason\"}]}"},
                              EPISODES_FLAG(episodes),
                              {"frames", VLA_FLAG_STRING, &frames, "ends|all",
                               "decode each episode's first and last frames (ends, quick) or every frame of every "
                               "video, reporting each decode error with file, episode and time (all)"},
                              ROOT_FLAGS(src.root, src.repo)};
    const vla_command_spec spec = {"vla dataset validate", "[ROOT]", "Read every file of a dataset and list every problem.",
                                   "Checks row counts against info.json and the episodes metadata, contiguous index, "
                                   "episode ranges and frame_index, timestamps against fps, finite numeric values, task "
                                   "indices, and that every episode's first and last video frames decode. Exit 0 only "
                                   "when clean.",
                                   flags, 5, 0, 1};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if ((rc = dataset_root(spec.command, &res, 0, &src, &root)) >= 0) return rc;
    json_t *problems = json_array();
    vla_log_level lvl = vla_log_get_level();
    if (lvl < VLA_LOG_ERROR) vla_log_set_level(VLA_LOG_ERROR); /* problems are listed below, not logged */
    vla_lr_open_opts o = {0};
    int64_t *eps = NULL;
    if (episodes) {
        vla_status st = vla_lerobot_parse_episodes(episodes, &eps, &o.n_episodes);
        if (st != VLA_OK) {
            json_decref(problems);
            vla_log_set_level(lvl);
            return vla_cli_fail(st);
        }
        o.episodes = eps;
    }
    if (strcmp(frames, "ends") && strcmp(frames, "all")) {
        fprintf(stderr, "vla: error: vla dataset validate: --frames=%s: give ends or all\n", frames);
        json_decref(problems);
        free(eps);
        vla_log_set_level(lvl);
        return 2;
    }
    vla_lr_validate_opts vo = {!strcmp(frames, "all"), isatty(STDERR_FILENO) != 0}; /* a progress line for people, not logs */
    vla_lerobot_validate_opts(root, &o, &vo, problems);
    free(eps);
    vla_log_set_level(lvl);
    size_t n = json_array_size(problems);
    if (as_json) {
        json_t *j = json_pack("{s:s,s:b,s:O}", "root", root, "clean", n == 0, "problems", problems);
        print_json(j);
        json_decref(j);
    } else {
        for (size_t i = 0; i < n; i++) {
            json_t *p = json_array_get(problems, i);
            printf("%s: %s\n", json_string_value(json_object_get(p, "file")), json_string_value(json_object_get(p, "reason")));
        }
        printf("%s: %s (%zu problem%s)\n", root, n ? "PROBLEMS" : "clean", n, n == 1 ? "" : "s");
    }
    json_decref(problems);
    return n ? 1 : 0;
}

static int cmd_frame(int argc, char **argv) {
    bool as_json = false;
    int64_t index = -1, width = 0, height = 0;
    const char *camera = NULL, *png = NULL, *episodes = NULL, *root = NULL;
    root_src src = {0};
    const vla_flag flags[] = {
        {"index", VLA_FLAG_INT, &index, "N", "the row's global `index` (required); only its episode is read"},
        EPISODES_FLAG(episodes),
        {"camera", VLA_FLAG_STRING, &camera, "KEY", "camera whose frame to decode (default: the first)"},
        {"png", VLA_FLAG_STRING, &png, "OUT", "write the frame as a PNG file"},
        {"width", VLA_FLAG_INT, &width, "W", "scale the frame to W pixels wide (0: native)"},
        {"height", VLA_FLAG_INT, &height, "H", "scale the frame to H pixels high (0: native)"},
        {"json", VLA_FLAG_BOOL, &as_json, NULL, "print the row's columns and values as JSON"},
        ROOT_FLAGS(src.root, src.repo),
    };
    const vla_command_spec spec = {"vla dataset frame", "[ROOT]", "Print one row of a dataset and decode its camera frame.", NULL,
                                   flags, 9, 0, 1};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if ((rc = dataset_root(spec.command, &res, 0, &src, &root)) >= 0) return rc;
    if (!vla_cli_int_in(spec.command, "width", width, 0, 8192) || !vla_cli_int_in(spec.command, "height", height, 0, 8192))
        return 2;
    if (index < 0) {
        fprintf(stderr, "vla dataset frame: --index N is required\n");
        return 2;
    }
    vla_lerobot *ds;
    char one[32] = "";
    if (!episodes) { /* read only the episode that holds the row: a partial download serves its present rows */
        vla_status st = open_selected(root, NULL, true, &ds);
        if (st != VLA_OK) return vla_cli_fail(st);
        for (int64_t e = 0; e < ds->n_episodes; e++)
            if (index >= ds->episodes[e].index_from && index < ds->episodes[e].index_from + ds->episodes[e].length)
                snprintf(one, sizeof one, "%lld", (long long)ds->episodes[e].episode_index);
        int64_t total = ds->n_episodes ? ds->episodes[ds->n_episodes - 1].index_from + ds->episodes[ds->n_episodes - 1].length : 0;
        vla_lerobot_close(ds);
        if (!one[0]) {
            fprintf(stderr, "vla: error: %s: --index=%lld: out of range [0, %lld)\n", root, (long long)index,
                    (long long)total);
            return 2;
        }
        episodes = one;
    }
    vla_status st = open_selected(root, episodes, false, &ds);
    if (st != VLA_OK) return vla_cli_fail(st);
    int64_t stored_index = index;
    index = vla_lerobot_row_of_index(ds, stored_index);
    if (index < 0) {
        fprintf(stderr, "vla: error: %s: --index %lld is in none of the selected episodes\n", ds->root, (long long)stored_index);
        vla_lerobot_close(ds);
        return 2;
    }
    json_t *row = json_object();
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        if (!f->values) continue;
        const float *v = f->values + index * f->width;
        int integral = f->dtype == VLA_LR_INT64 || f->dtype == VLA_LR_INT32;
        json_t *val;
        if (f->dtype == VLA_LR_BOOL && f->width == 1) val = json_boolean(v[0] != 0);
        else if (f->width == 1 && f->ndim <= 1) val = integral ? json_integer((json_int_t)v[0]) : isfinite(v[0]) ? json_real(v[0]) : json_null();
        else {
            val = json_array();
            for (int64_t k = 0; k < f->width; k++)
                json_array_append_new(val, integral ? json_integer((json_int_t)v[k]) : isfinite(v[k]) ? json_real(v[k]) : json_null());
        }
        json_object_set_new(row, f->key, val);
    }
    /* the exact integer columns */
    json_object_set_new(row, "index", json_integer(ds->index[index]));
    json_object_set_new(row, "frame_index", json_integer(ds->frame_index[index]));
    json_object_set_new(row, "episode_index", json_integer(ds->episode_index[index]));
    json_object_set_new(row, "task_index", json_integer(ds->task_index[index]));
    int64_t t = ds->task_index[index];
    json_t *out = json_pack("{s:I,s:o,s:s?}", "index", (json_int_t)stored_index, "row", row, "task",
                            t >= 0 && t < ds->n_tasks ? ds->tasks[t] : NULL);
    int exit_code = 0;
    int cam = camera ? vla_lerobot_camera(ds, camera) : (ds->n_cameras ? 0 : -1);
    if (camera && cam < 0) {
        char names[1024] = "";
        for (int c = 0; c < ds->n_cameras; c++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", c ? ", " : "",
                     ds->features[ds->camera_feature[c]].key);
        fprintf(stderr, "vla: error: %s: no camera '%s'; its cameras are: %s\n", ds->root, camera,
                ds->n_cameras ? names : "none");
        exit_code = 2;
    } else if (cam >= 0) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[cam]];
        int ow = width ? (int)width : f->width_px, oh = height ? (int)height : f->height;
        uint8_t *rgb = malloc((size_t)ow * oh * 3);
        vla_lr_reader *r = NULL;
        st = rgb ? vla_lr_reader_open(ds, &r) : VLA_ERR_NOMEM;
        if (st == VLA_OK) st = vla_lr_reader_frame(r, cam, index, ow, oh, 0, rgb);
        json_t *fr = json_pack("{s:s,s:i,s:i}", "camera", f->key, "width", ow, "height", oh);
        if (st == VLA_OK) {
            double mean = 0;
            for (size_t k = 0; k < (size_t)ow * oh * 3; k++) mean += rgb[k];
            json_object_set_new(fr, "mean", json_real(mean / ((double)ow * oh * 3)));
            if (png) {
                st = write_png(png, rgb, ow, oh);
                if (st == VLA_OK) json_object_set_new(fr, "png", json_string(png));
            }
        }
        if (st != VLA_OK) {
            json_object_set_new(fr, "error", json_string(vla_error_message()));
            fprintf(stderr, "vla: error: %s\n", vla_error_message());
            exit_code = 1;
        }
        json_object_set_new(out, "frame", fr);
        vla_lr_reader_close(r);
        free(rgb);
    }
    if (as_json) print_json(out);
    else {
        printf("row %lld (episode %lld, frame %lld, task %lld: %s)\n", (long long)index, (long long)ds->episode_index[index],
               (long long)ds->frame_index[index], (long long)t, json_string_value(json_object_get(out, "task")));
        const char *k;
        json_t *v;
        json_object_foreach(row, k, v) {
            char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(7));
            printf("  %-36s %s\n", k, s ? s : "?");
            free(s);
        }
        json_t *fr = json_object_get(out, "frame");
        if (fr && !json_object_get(fr, "error"))
            printf("  frame %s %dx%d mean %.2f%s%s\n", json_string_value(json_object_get(fr, "camera")),
                   (int)json_integer_value(json_object_get(fr, "width")), (int)json_integer_value(json_object_get(fr, "height")),
                   json_real_value(json_object_get(fr, "mean")), png ? " → " : "", png ? png : "");
    }
    json_decref(out);
    vla_lerobot_close(ds);
    return exit_code;
}

/* A stats.json-style value (a number, or nested arrays: an image's [[v]] per channel) flattened. */
static int stats_flat(const json_t *v, double *o, int cap, int n) {
    if (json_is_number(v)) {
        if (n < cap) o[n] = json_number_value(v);
        return n + 1;
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) n = stats_flat(json_array_get(v, i), o, cap, n);
    return n;
}

/* The recomputed statistics themselves: one row per feature and dimension (a camera: per channel). */
static void print_stats_table(const json_t *computed) {
    printf("  %-34s %12s %12s %12s %12s %9s\n", "feature", "mean", "std", "min", "max", "count");
    const char *key;
    json_t *obj;
    json_object_foreach((json_t *)computed, key, obj) {
        enum { CAP = 4096 };
        static double mean[CAP], sd[CAP], mn[CAP], mx[CAP];
        double cnt[1] = {0};
        int n = stats_flat(json_object_get(obj, "mean"), mean, CAP, 0);
        stats_flat(json_object_get(obj, "std"), sd, CAP, 0), stats_flat(json_object_get(obj, "min"), mn, CAP, 0);
        stats_flat(json_object_get(obj, "max"), mx, CAP, 0), stats_flat(json_object_get(obj, "count"), cnt, 1, 0);
        if (n > CAP) n = CAP;
        for (int c = 0; c < n; c++) {
            char name[300];
            if (n == 1) snprintf(name, sizeof name, "%s", key);
            else snprintf(name, sizeof name, "%s[%d]", c == 0 ? key : "", c);
            printf("  %-34s %12.5g %12.5g %12.5g %12.5g %9.0f\n", name, mean[c], sd[c], mn[c], mx[c], cnt[0]);
        }
    }
}

static int cmd_stats(int argc, char **argv) {
    bool as_json = false, images = true;
    const char *episodes = NULL, *root = NULL;
    root_src src = {0};
    const vla_flag flags[] = {{"json", VLA_FLAG_BOOL, &as_json, NULL, "print the comparison as JSON"},
                              {"images", VLA_FLAG_BOOL, &images, NULL,
                               "recompute the cameras' statistics too (decodes the sampled frames; false: numeric "
                               "features only)"},
                              EPISODES_FLAG(episodes), ROOT_FLAGS(src.root, src.repo)};
    const vla_command_spec spec = {"vla dataset stats", "[ROOT]", "Recompute a dataset's stats and compare them with the stored ones.",
                                   "Numeric features: min/max/mean/std/count must agree to f32 rounding. Cameras: the "
                                   "frames and pixels LeRobot's compute_stats samples (per episode about L^0.75 frames, "
                                   "all of a short one; every s-th pixel, about 150 px on the long side), as vla.c's "
                                   "writer samples them: count must agree exactly; for a video camera mean and std "
                                   "within 0.05 and min/max are shown but not judged (the writer saw the frames before "
                                   "lossy encoding); a lossless image camera must agree exactly. Quantiles are shown "
                                   "but not judged (LeRobot stores per-episode envelopes). Exit 1 when a judged "
                                   "statistic differs. Over a selection of episodes the stored (whole-dataset) stats "
                                   "are not expected to agree. docs/dataset.md, \"Statistics\".",
                                   flags, 5, 0, 1};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if ((rc = dataset_root(spec.command, &res, 0, &src, &root)) >= 0) return rc;
    vla_lerobot *ds;
    vla_status st = open_selected(root, episodes, false, &ds);
    if (st != VLA_OK) return vla_cli_fail(st);
    json_t *computed = NULL;
    const char *image_note = NULL;
    char note[1024];
    st = vla_lerobot_compute_stats(ds, images, &computed);
    if (st != VLA_OK && images) {
        snprintf(note, sizeof note, "image stats skipped: %s", vla_error_message());
        image_note = note;
        st = vla_lerobot_compute_stats(ds, false, &computed);
    }
    if (st != VLA_OK) {
        vla_lerobot_close(ds);
        return vla_cli_fail(st);
    }
    json_t *report = json_array();
    int bad = 0;
    vla_lerobot_compare_stats(ds, computed, report, &bad);
    if (as_json) {
        json_t *j = json_pack("{s:s,s:b,s:I,s:O,s:O,s:s?}", "root", ds->root, "ok", bad == 0, "mismatches", (json_int_t)bad, "report",
                              report, "computed", computed, "note", image_note);
        print_json(j);
        json_decref(j);
    } else {
        if (image_note) printf("note: %s\n", image_note);
        print_stats_table(computed);
        /* the verdict: how many judged values agree; only the ones that do not, listed */
        int judged = 0, unjudged = 0, unstored = 0;
        for (size_t i = 0; i < json_array_size(report); i++) {
            json_t *e = json_array_get(report, i);
            if (!json_is_true(json_object_get(e, "judged"))) {
                unjudged++;
                unstored += !strcmp(json_string_value(json_object_get(e, "stat")), "all");
                continue;
            }
            judged++;
            if (json_is_true(json_object_get(e, "ok"))) continue;
            json_t *why = json_object_get(e, "note");
            printf("  DIFFERS %s %s: max |diff| %.6g, tolerance %.3g%s%s\n", json_string_value(json_object_get(e, "feature")),
                   json_string_value(json_object_get(e, "stat")), json_number_value(json_object_get(e, "max_abs_diff")),
                   json_number_value(json_object_get(e, "tolerance")), why ? "; " : "", why ? json_string_value(why) : "");
        }
        printf("%s: %s with meta/stats.json: %d of %d judged statistics within tolerance (%d mismatch%s); %d shown "
               "but not judged (quantiles, a video's min/max%s)\n",
               ds->root, bad ? "stats DIFFER" : "stats agree", judged - bad, judged, bad, bad == 1 ? "" : "es", unjudged,
               unstored ? ", features with no stored stats" : "");
    }
    json_decref(report);
    json_decref(computed);
    vla_lerobot_close(ds);
    return bad ? 1 : 0;
}

static int cmd_convert(int argc, char **argv) {
    const char *codec = NULL, *episodes = NULL, *root = NULL;
    root_src src = {0};
    const vla_flag flags[] = {ROOT_FLAGS(src.root, src.repo), {"vcodec", VLA_FLAG_STRING, &codec, "NAME",
                               "re-encode the videos with this encoder (e.g. libsvtav1, libx264); default: copy the "
                               "compressed packets where they can be cut by episode, else re-encode with libsvtav1"},
                              EPISODES_FLAG(episodes)};
    const vla_command_spec spec = {"vla dataset convert", "[SRC] DST", "Write a LeRobot dataset (v2.1 or v3.0) as v3.0.",
                                   "DST must not exist; it appears complete or not at all. Videos are remuxed (packets "
                                   "copied, as LeRobot's converter does) unless an episode does not start on a keyframe, "
                                   "the stream has B-frames, or --vcodec asks for a re-encode; data and video files roll "
                                   "over at LeRobot's default sizes.",
                                   flags, 4, 1, 2};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    /* SRC DST, or --dataset.root=SRC / --dataset.repo_id=ORG/NAME and DST */
    const char *dst = res.positional[res.n_positional - 1];
    if (res.n_positional == 1 && !src.root && !src.repo) {
        fprintf(stderr, "vla: error: vla dataset convert: give SRC and DST (or --dataset.root=SRC DST)\n");
        return 2;
    }
    vla_flags_result one = res;
    one.n_positional = res.n_positional - 1;
    if ((rc = dataset_root(spec.command, &one, 0, &src, &root)) >= 0) return rc;
    vla_lr_open_opts o = {0};
    int64_t *eps = NULL;
    vla_status st = episodes ? vla_lerobot_parse_episodes(episodes, &eps, &o.n_episodes) : VLA_OK;
    o.episodes = eps;
    if (st == VLA_OK) st = vla_lerobot_convert_opts(root, &o, dst, codec);
    free(eps);
    if (st != VLA_OK) return vla_cli_fail(st);
    printf("%s → %s (v3.0)\n", root, dst);
    return 0;
}

static const vla_cli_command subs[] = {
    {"info", "version, fps, robot, episodes, frames, tasks, features, cameras", cmd_info},
    {"validate", "read every file and list every problem (exit 0 only when clean)", cmd_validate},
    {"frame", "print a row and decode its frame (--png OUT)", cmd_frame},
    {"stats", "recompute stats and compare with the stored ones", cmd_stats},
    {"convert", "convert a v2.1 dataset to v3.0", cmd_convert},
};

int vla_cmd_dataset(int argc, char **argv) {
    return vla_cli_dispatch("vla dataset", subs, (int)(sizeof subs / sizeof subs[0]), argc, argv);
}
