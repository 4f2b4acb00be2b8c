/* test_checkpoint.c — checkpoints: layout and round trip, refusal of
 * corrupted/truncated/incomplete checkpoints with a message naming the file
 * (every prefix and sampled bit flips of each of its files),
 * fallback when `last` is broken, write faults injected at many byte budgets,
 * and a writer SIGKILLed at random moments that always leaves a loadable
 * last checkpoint and no half-written one. */
#include "test_util.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "base/rng.h"
#include "base/timer.h"
#include "io/safetensors.h"
#include "checkpoint/checkpoint.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MODEL_N = 16384 };

static float model_value(int64_t step, int i) { return (float)step + (float)i * 1e-3f; }

/* One checkpoint as the trainer will write it: config, model, optimizer. */
static vla_status write_ckpt(const char *out, int64_t step, int64_t total) {
    static float model[MODEL_N], opt_m[MODEL_N / 4];
    for (int i = 0; i < MODEL_N; i++) model[i] = model_value(step, i);
    for (int i = 0; i < MODEL_N / 4; i++) opt_m[i] = (float)(step * 7 + i);
    vla_ckpt_writer *w;
    VLA_TRY(vla_ckpt_begin(out, step, total, &w));
    json_t *cfg = json_pack("{s:s, s:I}", "type", "test_policy", "chunk_size", (json_int_t)50);
    vla_status st = vla_ckpt_write_json(w, "pretrained_model/config.json", cfg);
    json_decref(cfg);
    vla_safetensors_writer *sw = NULL;
    int64_t shape[2] = {MODEL_N / 64, 64}, oshape[1] = {MODEL_N / 4};
    if (st == VLA_OK) st = vla_safetensors_writer_new(&sw);
    if (st == VLA_OK) st = vla_safetensors_writer_add(sw, "model.weight", VLA_F32, 2, shape, model);
    if (st == VLA_OK) st = vla_ckpt_write_safetensors(w, "pretrained_model/model.safetensors", sw);
    vla_safetensors_writer_free(sw);
    sw = NULL;
    if (st == VLA_OK) st = vla_safetensors_writer_new(&sw);
    if (st == VLA_OK) st = vla_safetensors_writer_add(sw, "state.model.weight.exp_avg", VLA_F32, 1, oshape, opt_m);
    if (st == VLA_OK) st = vla_ckpt_write_safetensors(w, "training_state/optimizer_state.safetensors", sw);
    vla_safetensors_writer_free(sw);
    const char rng[] = "{\"seed\": 7, \"sampler_cursor\": 123}";
    if (st == VLA_OK) st = vla_ckpt_write_file(w, "training_state/rng_state.json", rng, sizeof rng - 1);
    if (st != VLA_OK) {
        vla_ckpt_abort(w);
        return st;
    }
    return vla_ckpt_commit(w, NULL);
}

/* The model in a checkpoint directory holds the values written for `step`. */
static void check_model(const char *dir, int64_t step) {
    char path[4200];
    snprintf(path, sizeof path, "%s/pretrained_model/model.safetensors", dir);
    vla_safetensors st;
    assert_int_equal(vla_safetensors_open(path, &st), VLA_OK);
    static float got[MODEL_N];
    assert_int_equal(vla_safetensors_load_f32(&st, "model.weight", got, MODEL_N), VLA_OK);
    vla_safetensors_close(&st);
    for (int i = 0; i < MODEL_N; i += 97) assert_true(got[i] == model_value(step, i));
}

static void fresh_dir(const char *path) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(vla_mkdirs(path), VLA_OK);
}

/* Names in OUTPUT/checkpoints, sorted, joined by spaces. */
static void list_ckdir(const char *out, char *buf, size_t cap) {
    char ck[1100];
    snprintf(ck, sizeof ck, "%s/checkpoints", out);
    struct dirent **names;
    int n = scandir(ck, &names, NULL, alphasort);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.' || strncmp(names[i]->d_name, ".tmp", 4) == 0 ||
            strncmp(names[i]->d_name, ".last", 5) == 0) {
            if (buf[0]) strncat(buf, " ", cap - strlen(buf) - 1);
            strncat(buf, names[i]->d_name, cap - strlen(buf) - 1);
        }
        free(names[i]);
    }
    if (n >= 0) free(names);
}

static void test_layout_roundtrip(void **state) {
    const char *out = test_tmp_path("rt");
    fresh_dir(out);
    char name[32];
    vla_ckpt_step_name(6000, 30000, name, sizeof name);
    assert_string_equal(name, "006000");
    vla_ckpt_step_name(12, 12345678, name, sizeof name);
    assert_string_equal(name, "00000012");
    vla_ckpt_info info;
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "no checkpoint"));

    assert_int_equal(write_ckpt(out, 6000, 30000), VLA_OK);
    char buf[512], link[1100], target[64] = {0};
    list_ckdir(out, buf, sizeof buf);
    assert_string_equal(buf, "006000 last");
    snprintf(link, sizeof link, "%s/checkpoints/last", out);
    assert_true(readlink(link, target, sizeof target - 1) > 0);
    assert_string_equal(target, "006000");
    const char *files[] = {"pretrained_model/config.json", "pretrained_model/model.safetensors",
                           "training_state/optimizer_state.safetensors", "training_state/rng_state.json",
                           "training_state/training_step.json", "training_state/manifest.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/checkpoints/006000/%s", out, files[i]);
        assert_true(vla_path_exists(p));
    }
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK);
    assert_int_equal(info.step, 6000);
    check_model(info.dir, 6000);

    assert_int_equal(write_ckpt(out, 7000, 30000), VLA_OK);
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK);
    assert_int_equal(info.step, 7000);
    /* saving the same step again swaps the directory atomically */
    assert_int_equal(write_ckpt(out, 7000, 30000), VLA_OK);
    assert_int_equal(vla_ckpt_verify(info.dir, NULL), VLA_OK);
    list_ckdir(out, buf, sizeof buf);
    assert_string_equal(buf, "006000 007000 last");
    assert_int_equal(write_ckpt(out, 8000, 30000), VLA_OK);
    assert_int_equal(vla_ckpt_prune(out, 2), VLA_OK);
    list_ckdir(out, buf, sizeof buf);
    assert_string_equal(buf, "007000 008000 last");

    /* bad relative names are refused */
    vla_ckpt_writer *w;
    assert_int_equal(vla_ckpt_begin(out, 9000, 30000, &w), VLA_OK);
    assert_int_equal(vla_ckpt_write_file(w, "../escape", "x", 1), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_ckpt_write_file(w, "/abs", "x", 1), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_ckpt_write_file(w, "training_state/sub/deep.bin", "xyz", 3), VLA_OK);
    vla_ckpt_abort(w);
    list_ckdir(out, buf, sizeof buf);
    assert_string_equal(buf, "007000 008000 last");
}

static void flip_byte(const char *path, long off) {
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void test_corruption_refused(void **state) {
    vla_log_set_level(VLA_LOG_ERROR); /* the fallbacks warn; keep the output short */
    const char *out = test_tmp_path("corrupt");
    fresh_dir(out);
    assert_int_equal(write_ckpt(out, 100, 1000), VLA_OK);
    assert_int_equal(write_ckpt(out, 200, 1000), VLA_OK);
    char dir[1100], model[1200], manifest[1200];
    snprintf(dir, sizeof dir, "%s/checkpoints/000200", out);
    snprintf(model, sizeof model, "%s/pretrained_model/model.safetensors", dir);
    snprintf(manifest, sizeof manifest, "%s/training_state/manifest.json", dir);
    assert_int_equal(vla_ckpt_verify(dir, NULL), VLA_OK);

    /* a flipped byte deep in the tensor data */
    flip_byte(model, 40000);
    assert_int_equal(vla_ckpt_verify(dir, NULL), VLA_ERR_FORMAT);
    const char *msg = vla_error_message();
    print_message("flipped byte: %s\n", msg);
    assert_non_null(strstr(msg, "pretrained_model/model.safetensors"));
    assert_non_null(strstr(msg, "checksum"));
    vla_ckpt_info info;
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK); /* falls back to the intact one */
    assert_int_equal(info.step, 100);
    flip_byte(model, 40000);
    assert_int_equal(vla_ckpt_verify(dir, NULL), VLA_OK);

    /* truncated */
    assert_int_equal(truncate(model, 1000), 0);
    assert_int_equal(vla_ckpt_verify(dir, NULL), VLA_ERR_FORMAT);
    print_message("truncated: %s\n", vla_error_message());
    assert_non_null(strstr(vla_error_message(), "model.safetensors is 1000 bytes"));

    /* the manifest itself damaged, or missing */
    flip_byte(manifest, 3);
    assert_int_not_equal(vla_ckpt_verify(dir, NULL), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "manifest.json"));
    assert_int_equal(unlink(manifest), 0);
    assert_int_equal(vla_ckpt_verify(dir, NULL), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "not a complete checkpoint"));

    /* a missing file */
    char step2[1100], opt[1200];
    snprintf(step2, sizeof step2, "%s/checkpoints/000100", out);
    snprintf(opt, sizeof opt, "%s/training_state/optimizer_state.safetensors", step2);
    char *saved;
    size_t saved_n;
    assert_int_equal(vla_read_file(opt, &saved, &saved_n), VLA_OK);
    assert_int_equal(unlink(opt), 0);
    assert_int_equal(vla_ckpt_verify(step2, NULL), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "optimizer_state.safetensors is missing"));
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_ERR_NOT_FOUND);
    print_message("none valid: %s\n", vla_error_message());
    assert_int_equal(vla_write_file_atomic(opt, saved, saved_n), VLA_OK);
    free(saved);

    /* dangling `last` */
    char link[1200];
    snprintf(link, sizeof link, "%s/checkpoints/last", out);
    unlink(link);
    assert_int_equal(symlink("000999", link), 0);
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK);
    assert_int_equal(info.step, 100);
    vla_log_set_level(VLA_LOG_INFO);
}

static void test_fault_injection(void **state) {
    vla_log_set_level(VLA_LOG_ERROR);
    const char *out = test_tmp_path("fault");
    fresh_dir(out);
    assert_int_equal(write_ckpt(out, 1, 10), VLA_OK);
    /* bytes written by one checkpoint: the sum of its files (temp files are
     * written once each, then renamed) */
    int64_t total = 0;
    {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/checkpoints/000001", out);
        char cmd[1300], res[64];
        snprintf(cmd, sizeof cmd, "find '%s' -type f -printf '%%s\\n' | awk '{s+=$1} END {print s}'", dir);
        assert_int_equal(test_run(cmd, res, sizeof res), 0);
        total = atoll(res);
    }
    assert_true(total > MODEL_N * 4);
    int tried = 0;
    for (int64_t budget = 0; budget <= total + 64; budget += (budget < 64 ? 9 : total / 24 + 1)) {
        vla_fault_inject_write(budget);
        vla_status st = write_ckpt(out, 2, 10);
        vla_fault_inject_write(-1);
        tried++;
        char buf[256];
        list_ckdir(out, buf, sizeof buf);
        if (st == VLA_OK) {
            /* enough budget: the whole checkpoint made it */
            assert_true(budget >= total - 64);
            vla_ckpt_info info;
            assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK);
            assert_int_equal(info.step, 2);
            check_model(info.dir, 2);
            break;
        }
        assert_string_equal(buf, "000001 last"); /* no half checkpoint, no temp dir */
        vla_ckpt_info info;
        assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK);
        assert_int_equal(info.step, 1);
        check_model(info.dir, 1);
    }
    print_message("fault budgets tried: %d over %lld bytes\n", tried, (long long)total);
    assert_true(tried > 25);
    vla_log_set_level(VLA_LOG_INFO);
}

/* Every step directory visible must be a complete checkpoint. */
static void assert_all_step_dirs_valid(const char *out) {
    char ck[1100];
    snprintf(ck, sizeof ck, "%s/checkpoints", out);
    DIR *d = opendir(ck);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", ck, e->d_name);
        int64_t step;
        if (vla_ckpt_verify(p, &step) != VLA_OK) fail_msg("half-written checkpoint visible: %s", vla_error_message());
        check_model(p, step);
    }
    closedir(d);
}

static void test_sigkill_during_writes(void **state) {
    vla_log_set_level(VLA_LOG_ERROR);
    const char *out = test_tmp_path("kill");
    fresh_dir(out);
    /* kill within about two checkpoint-write times, so kills land in every
     * phase: file writes, manifest, rename, the `last` update, pruning */
    double tw = vla_now_s();
    assert_int_equal(write_ckpt(out, 0, 1000000), VLA_OK);
    long write_us = (long)((vla_now_s() - tw) * 1e6) + 1;
    /* The window grows while rounds end with no new checkpoint (a disk that
     * got slower than the first write suggested), so the run always moves on. */
    long window_us = 2 * write_us;
    vla_rng rng = vla_rng_stream(20261129, (uint64_t)getpid());
    int64_t prev = 0;
    double t0 = (double)clock();
    int rounds = 0;
    for (; rounds < 16; rounds++) {
        int64_t start = prev + 1;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            for (int64_t s = start;; s++) {
                vla_status st = write_ckpt(out, s, 1000000);
                if (st == VLA_OK && s % 3 == 0) st = vla_ckpt_prune(out, 2);
                if (st != VLA_OK) {
                    fprintf(stderr, "writer: step %lld: %s\n", (long long)s, vla_error_message());
                    _exit(3);
                }
            }
        }
        long us = (long)vla_rng_int(&rng, 0, window_us);
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status)) /* killed, not failed */
            fail_msg("round %d: the writer exited with status %d instead of being killed", rounds,
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        assert_all_step_dirs_valid(out);
        vla_ckpt_info info;
        if (vla_ckpt_find_last(out, &info) != VLA_OK) fail_msg("round %d: %s", rounds, vla_error_message());
        if (info.step < prev) fail_msg("round %d: last step went back from %lld to %lld", rounds, (long long)prev,
                                       (long long)info.step);
        check_model(info.dir, info.step);
        assert_int_equal(vla_ckpt_cleanup(out), VLA_OK);
        char buf[512];
        list_ckdir(out, buf, sizeof buf);
        if (strstr(buf, ".tmp")) fail_msg("round %d: left after cleanup: %s", rounds, buf);
        if (info.step == prev && window_us < 1000000) window_us += window_us / 2;
        prev = info.step;
    }
    print_message("%d kills, last complete step %lld (one write %ld us, %.2f s cpu)\n", rounds, (long long)prev,
                  write_us, ((double)clock() - t0) / CLOCKS_PER_SEC);
    assert_true(prev > 0);
    vla_log_set_level(VLA_LOG_INFO);
}

/* For the sweeps: `bytes` become the file `rel` of checkpoint `dir`, which is
 * then verified. */
typedef struct {
    const char *dir;
    char path[VLA_CKPT_PATH_MAX + 64];
} ckpt_file;

static vla_status verify_with(const uint8_t *bytes, size_t n, void *user) {
    ckpt_file *f = user;
    FILE *fp = fopen(f->path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, n, fp), n);
    fclose(fp);
    vla_status st = vla_ckpt_verify(f->dir, NULL);
    /* a damaged manifest shows as a listed file that disagrees with it */
    const char *base = strrchr(f->path, '/') + 1, *name = strcmp(base, "manifest.json") ? base : "manifest";
    if (st != VLA_OK && !strstr(vla_error_message(), name))
        fail_msg("damaged %s refused without naming it: %s", base, vla_error_message());
    return st;
}

/* Every file of a checkpoint, cut short (every prefix; for the model a
 * dense sample plus every prefix near its header and end) or with one of
 * 300 sampled bits flipped, is refused with a message naming it: the
 * manifest's sizes and CRC-32s catch all of them. */
static void test_damage_sweeps(void **state) {
    vla_log_set_level(VLA_LOG_ERROR);
    const char *out = test_tmp_path("sweep");
    fresh_dir(out);
    assert_int_equal(write_ckpt(out, 3, 10), VLA_OK);
    vla_ckpt_info info;
    assert_int_equal(vla_ckpt_find_last(out, &info), VLA_OK);
    const char *files[] = {"training_state/manifest.json", "training_state/training_step.json",
                           "pretrained_model/config.json", "training_state/rng_state.json",
                           "pretrained_model/model.safetensors", "training_state/optimizer_state.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        ckpt_file f = {.dir = info.dir};
        snprintf(f.path, sizeof f.path, "%s/%s", info.dir, files[i]);
        size_t n;
        uint8_t *d = (uint8_t *)test_slurp(f.path, &n);
        uint64_t header = 0;
        if (n >= 8 && strstr(files[i], ".safetensors")) memcpy(&header, d, 8);
        size_t marks[] = {8 + (size_t)header};
        test_sweep_prefixes(files[i], d, n, n > 4096 ? 61 : 1, marks, header ? 1 : 0, verify_with, &f);
        assert_int_equal(test_sweep_bit_flips(files[i], d, n, 0, 300, 40 + i, verify_with, &f), 300);
        assert_int_equal(verify_with(d, n, &f), VLA_OK); /* put back */
        free(d);
    }
    vla_log_set_level(VLA_LOG_INFO);
}

static void test_cleanup_stale(void **state) {
    const char *out = test_tmp_path("stale");
    fresh_dir(out);
    assert_int_equal(write_ckpt(out, 5, 10), VLA_OK);
    char p[1200];
    /* a dead writer's directory (pid that cannot exist) and our own */
    snprintf(p, sizeof p, "%s/checkpoints/.tmp-000006-999999999/pretrained_model", out);
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    snprintf(p, sizeof p, "%s/checkpoints/.tmp-000007-%ld", out, (long)getpid());
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    /* a live other process's is kept */
    snprintf(p, sizeof p, "%s/checkpoints/.tmp-000008-%ld", out, (long)getppid());
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    assert_int_equal(vla_ckpt_cleanup(out), VLA_OK);
    char buf[512], want[512];
    list_ckdir(out, buf, sizeof buf);
    snprintf(want, sizeof want, ".tmp-000008-%ld 000005 last", (long)getppid());
    assert_string_equal(buf, want);
    assert_int_equal(vla_ckpt_cleanup(test_tmp_path("does-not-exist")), VLA_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_roundtrip),      cmocka_unit_test(test_corruption_refused),
        cmocka_unit_test(test_fault_injection),       cmocka_unit_test(test_sigkill_during_writes),
        cmocka_unit_test(test_cleanup_stale),         cmocka_unit_test(test_damage_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
