/* test_base.c — status messages with context, arenas, atomic files (with
 * injected write faults), named fault points, flags with suggestions, JSON
 * with located errors. */
#include "test_util.h"
#include "base/arena.h"
#include "base/fault.h"
#include "base/flags.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "base/status.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_status_context(void **state) {
    vla_error_clear();
    assert_string_equal(vla_error_message(), "");
    vla_status st = vla_error(VLA_ERR_FORMAT, "bad magic at byte %d", 4);
    assert_int_equal(st, VLA_ERR_FORMAT);
    st = vla_error_context(st, "data/file-000.parquet");
    assert_string_equal(vla_error_message(), "data/file-000.parquet: bad magic at byte 4");
    assert_string_equal(vla_status_name(VLA_ERR_IO), "i/o error");
    assert_int_equal(vla_status_exit_code(VLA_ERR_INVALID_ARG), 2);
    assert_int_equal(vla_status_exit_code(VLA_ERR_FORMAT), 1);
}

static void test_arena(void **state) {
    vla_arena a;
    vla_arena_init(&a, 1000);
    char *p1 = vla_arena_alloc(&a, 10, 1);
    double *p2 = vla_arena_alloc(&a, sizeof(double) * 3, 8);
    assert_true(((uintptr_t)p2 & 7) == 0);
    void *p3 = vla_arena_alloc(&a, 100, 256);
    assert_true(((uintptr_t)p3 & 255) == 0);
    memset(p1, 1, 10);
    vla_arena_mark m = vla_arena_get_mark(&a);
    void *big = vla_arena_alloc(&a, 5000, 64); /* larger than a chunk */
    assert_non_null(big);
    memset(big, 2, 5000);
    assert_true(a.used_total >= 5000);
    vla_arena_rewind(&a, m);
    assert_int_equal(a.used_total, m.used_total);
    void *again = vla_arena_alloc(&a, 8, 8);
    assert_non_null(again);
    assert_true(p1[9] == 1); /* earlier blocks untouched */
    char *s = vla_arena_strdup(&a, "hello");
    assert_string_equal(s, "hello");
    float *z = vla_arena_calloc(&a, 64 * sizeof(float), 64);
    for (int i = 0; i < 64; i++) assert_true(z[i] == 0.0f);
    assert_null(vla_arena_alloc(&a, 8, 3)); /* alignment must be a power of two */
    vla_arena_mark before_room = vla_arena_get_mark(&a);
    size_t room = vla_arena_room(&a);
    assert_non_null(vla_arena_alloc(&a, room, 1)); /* exactly the room: no new chunk */
    assert_int_equal(vla_arena_room(&a), 0);
    assert_ptr_equal(vla_arena_get_mark(&a).chunk, before_room.chunk);
    vla_arena_rewind(&a, before_room);
    /* advance: the same allocations again from a mark, without making them */
    vla_arena_mark from = vla_arena_get_mark(&a);
    void *q1 = vla_arena_alloc(&a, 24, 64), *q2 = vla_arena_alloc(&a, 40, 16);
    vla_arena_mark to = vla_arena_get_mark(&a);
    assert_false(vla_arena_advance(&a, to, from)); /* backwards: that is rewind's job */
    vla_arena_rewind(&a, from);
    assert_true(vla_arena_advance(&a, from, to));
    assert_int_equal(a.used_total, to.used_total);
    void *q3 = vla_arena_alloc(&a, 8, 8);
    assert_true((char *)q3 >= (char *)q2 + 40 && q1 != q3); /* after the blocks the advance stands for */
    vla_arena_rewind(&a, from);
    (void)vla_arena_alloc(&a, 8, 1); /* not at `from` any more: refused, nothing moves */
    size_t used = a.used_total;
    assert_false(vla_arena_advance(&a, from, to));
    assert_int_equal(a.used_total, used);
    vla_arena_rewind(&a, from);
    (void)vla_arena_alloc(&a, 5000, 64); /* a new chunk: `to` is not in the current one */
    vla_arena_mark far = vla_arena_get_mark(&a);
    vla_arena_rewind(&a, from);
    assert_false(vla_arena_advance(&a, from, far));
    assert_true(a.peak >= 5000);
    vla_arena_reset(&a);
    assert_int_equal(a.used_total, 0);
    vla_arena_free(&a);
}

/* vla_arena_begin_call: a call that needed several chunks makes the next
 * one a single chunk of its peak plus an eighth; the same call then fits
 * in that chunk, and the next one reuses it. */
static void one_call(vla_arena *a, char **first, char **last) {
    for (int i = 0; i < 10; i++) {
        char *p = vla_arena_alloc(a, 3000, 64);
        assert_non_null(p);
        if (i == 0) *first = p;
        *last = p;
    }
}

static void test_arena_begin_call(void **state) {
    (void)state;
    vla_arena a;
    vla_arena_init(&a, 4096);
    char *f0, *l0, *f1, *l1, *f2, *l2;
    one_call(&a, &f0, &l0);
    size_t peak = a.peak;
    assert_true(peak >= 30000);
    vla_arena_begin_call(&a);
    assert_int_equal(a.used_total, 0);
    assert_int_equal(a.chunk_size, peak + peak / 8 + 4096);
    one_call(&a, &f1, &l1);
    assert_true(l1 > f1 && (size_t)(l1 - f1) < a.chunk_size); /* one chunk holds the call */
    vla_arena_begin_call(&a);                                 /* within the chunk: reset, the chunk kept */
    one_call(&a, &f2, &l2);
    assert_ptr_equal(f1, f2);
    assert_ptr_equal(l1, l2);
    assert_int_equal(a.chunk_size, peak + peak / 8 + 4096);
    vla_arena_free(&a);
}

static int count_tmp_files(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) n++;
    closedir(d);
    return n;
}

static void test_atomic_write_and_faults(void **state) {
    const char *path = test_tmp_path("state.bin");
    assert_int_equal(vla_write_file_atomic(path, "first version", 13), VLA_OK);
    char *data;
    size_t n;
    assert_int_equal(vla_read_file(path, &data, &n), VLA_OK);
    assert_int_equal(n, 13);
    assert_memory_equal(data, "first version", 13);
    free(data);

    /* a write that fails part-way leaves the old file and no temp file */
    static char big[100000];
    memset(big, 'x', sizeof big);
    for (int64_t budget = 0; budget < (int64_t)sizeof big; budget += 33333) {
        vla_fault_inject_write(budget);
        vla_status st = vla_write_file_atomic(path, big, sizeof big);
        vla_fault_inject_write(-1);
        assert_int_equal(st, VLA_ERR_IO);
        assert_non_null(strstr(vla_error_message(), "write failed"));
        assert_int_equal(vla_read_file(path, &data, &n), VLA_OK);
        assert_int_equal(n, 13);
        free(data);
        assert_int_equal(count_tmp_files(test_tmp_dir()), 0);
    }
    /* streaming API, then abort: nothing changes */
    vla_atomic_file af;
    assert_int_equal(vla_atomic_open(&af, path), VLA_OK);
    assert_int_equal(vla_atomic_write(&af, "zz", 2), VLA_OK);
    vla_atomic_abort(&af);
    assert_int_equal(vla_read_file(path, &data, &n), VLA_OK);
    assert_int_equal(n, 13);
    free(data);
    assert_int_equal(count_tmp_files(test_tmp_dir()), 0);

    assert_int_equal(vla_read_file(test_tmp_path("missing"), &data, &n), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "missing"));
    assert_int_equal(vla_write_file_atomic(test_tmp_path("no/such/dir/x"), "a", 1), VLA_ERR_IO);
    assert_int_equal(vla_mkdirs(test_tmp_path("a/b/c")), VLA_OK);
    assert_true(vla_is_dir(test_tmp_path("a/b/c")));
    assert_int_equal(vla_mkdirs(path), VLA_ERR_IO); /* a file is in the way */
}

/* Fault points fire only where and when armed; the first armed wins. (KILL
 * is covered by tests/train/test_train_mpi.c's restart test.) */
static void test_fault_points(void **state) {
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_STEP_END, 1), VLA_FAULT_NONE);
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 3, 3);
    vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_STOP, 5, VLA_FAULT_FOREVER);
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_STOP, 2, 4);
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 9, 8); /* empty range: never armed */
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_GRADS, 1), VLA_FAULT_NONE);
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_GRADS, 2), VLA_FAULT_STOP);
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_GRADS, 3), VLA_FAULT_POISON);
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_GRADS, 8), VLA_FAULT_NONE);
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_STEP_END, 4), VLA_FAULT_NONE);
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_STEP_END, 5), VLA_FAULT_STOP);
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_STEP_END, INT64_MAX), VLA_FAULT_STOP);
    vla_fault_clear();
    assert_int_equal(vla_fault_at(VLA_FAULT_TRAIN_STEP_END, 5), VLA_FAULT_NONE);
}

static void test_flags(void **state) {
    const char *root = NULL, *type = "pi05";
    int64_t steps = 10;
    double lr = 1e-4;
    bool json = false, resume = true;
    const vla_flag flags[] = {
        {"dataset.root", VLA_FLAG_STRING, &root, "DIR", "dataset root"},
        {"policy.type", VLA_FLAG_STRING, &type, "NAME", "policy"},
        {"steps", VLA_FLAG_INT, &steps, "N", "steps"},
        {"optimizer.lr", VLA_FLAG_FLOAT, &lr, "LR", "learning rate"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "json"},
        {"resume", VLA_FLAG_BOOL, &resume, NULL, "resume"},
        {"batch_size", VLA_FLAG_INT, &steps, "N", "batch"},
    };
    vla_command_spec spec = {"vla train", "[EXTRA]", "Train.", NULL, flags, 7, 0, 1};
    vla_flags_result res;
    char *argv1[] = {"--dataset.root=/data/x", "--policy.type", "groot", "--steps=500", "--optimizer.lr", "3e-4",
                     "--json", "--resume=false", "extra"};
    assert_int_equal(vla_flags_parse(&spec, 9, argv1, &res), VLA_OK);
    assert_string_equal(root, "/data/x");
    assert_string_equal(type, "groot");
    assert_int_equal(steps, 500);
    assert_true(lr == 3e-4 && json && !resume);
    assert_int_equal(res.n_positional, 1);
    assert_string_equal(res.positional[0], "extra");

    char *argv2[] = {"--dataset.rot=/x"};
    assert_int_equal(vla_flags_parse(&spec, 1, argv2, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "did you mean --dataset.root?"));
    char *argv3[] = {"--batch-size=4"}; /* dash and underscore are the same */
    assert_int_equal(vla_flags_parse(&spec, 1, argv3, &res), VLA_OK);
    assert_int_equal(steps, 4);
    char *argv4[] = {"--steps=ten"};
    assert_int_equal(vla_flags_parse(&spec, 1, argv4, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "expects an integer"));
    char *argv5[] = {"--optimizer.lr=nan"};
    assert_int_equal(vla_flags_parse(&spec, 1, argv5, &res), VLA_ERR_INVALID_ARG);
    char *argv6[] = {"--steps"};
    assert_int_equal(vla_flags_parse(&spec, 1, argv6, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "needs a value"));
    char *argv6b[] = {"--dataset.root=/a", "--dataset.root", "/b"}; /* one value per flag: the first is not dropped */
    assert_int_equal(vla_flags_parse(&spec, 3, argv6b, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "--dataset.root is given twice"));
    char *argv7[] = {"a", "b"};
    assert_int_equal(vla_flags_parse(&spec, 2, argv7, &res), VLA_ERR_INVALID_ARG);
    char *argv8[] = {"--help", "--bogus-but-help-wins"};
    vla_flags_parse(&spec, 1, argv8, &res);
    assert_true(res.help);
    char *argv9[] = {"--zzzzzzzz"};
    assert_int_equal(vla_flags_parse(&spec, 1, argv9, &res), VLA_ERR_INVALID_ARG);
    assert_null(strstr(vla_error_message(), "did you mean"));
    assert_int_equal(vla_flags_distance("batch-size", "batch_size"), 0);
}

/* An unknown flag says what was meant (issue 44, item 5): a transposition is
 * one edit (Damerau–Levenshtein), a group's bare name points at its flag
 * with the value, and a name close to nothing lists the command's flag
 * groups rather than only "see --help". */
static void test_flags_suggestions(void **state) {
    (void)state;
    const char *env = NULL, *task = NULL, *path = NULL;
    int64_t steps = 10, n = 1;
    bool json = false;
    const vla_flag flags[] = {
        {"policy.path", VLA_FLAG_STRING, &path, "DIR", "checkpoint"},
        {"env.type", VLA_FLAG_STRING, &env, "NAME", "env"},
        {"env.task", VLA_FLAG_STRING, &task, "NAME", "task"},
        {"eval.n_episodes", VLA_FLAG_INT, &n, "N", "episodes"},
        {"steps", VLA_FLAG_INT, &steps, "N", "steps"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "json"},
    };
    vla_command_spec spec = {"vla eval", NULL, "Eval.", NULL, flags, 6, 0, 0};
    vla_flags_result res;
    /* one transposition, one edit: plain Levenshtein counts two */
    assert_int_equal(vla_flags_distance("stpes", "steps"), 1);
    assert_int_equal(vla_flags_distance("setps", "steps"), 1);
    assert_int_equal(vla_flags_distance("ab", "ba"), 1);
    assert_int_equal(vla_flags_distance("abc", "ca"), 3); /* optimal string alignment: no edit of a swapped pair */
    assert_int_equal(vla_flags_distance("kitten", "sitting"), 3);
    assert_int_equal(vla_flags_distance("", "abc"), 3);
    char *a1[] = {"--stpes=5"};
    assert_int_equal(vla_flags_parse(&spec, 1, a1, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "unknown flag --stpes; did you mean --steps?"));
    char *a2[] = {"--setps", "5"};
    assert_int_equal(vla_flags_parse(&spec, 2, a2, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "did you mean --steps?"));
    /* far from every name: no suggestion, and not too eager on short names */
    assert_false(vla_flags_close("sx", "steps"));
    assert_false(vla_flags_close("json", "steps"));
    /* a group's name alone: its .type flag, with the value, and the group's flags */
    char *a3[] = {"--env=pusht"};
    assert_int_equal(vla_flags_parse(&spec, 1, a3, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "unknown flag --env; did you mean --env.type=pusht?"));
    assert_non_null(strstr(vla_error_message(), "--env.type, --env.task"));
    char *a4[] = {"--policy", "x"}; /* a one-flag group: that flag */
    assert_int_equal(vla_flags_parse(&spec, 1, a4, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "did you mean --policy.path?"));
    /* nothing close: the command's flags, a group as one entry */
    char *a5[] = {"--foo"};
    assert_int_equal(vla_flags_parse(&spec, 1, a5, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "the flags of vla eval: --policy.*, --env.*, --eval.*, --steps, --json"));
    assert_null(strstr(vla_error_message(), "did you mean"));
    /* a dotted name in a known group: that group's flags */
    char *a6[] = {"--env.zzzzzz=1"};
    assert_int_equal(vla_flags_parse(&spec, 1, a6, &res), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "its --env.* flags are: --env.type, --env.task"));
}

/* Help states a default once: the flag's initial value, unless its help
 * text already speaks of the default. */
static void test_flags_help_default_once(void **state) {
    (void)state;
    int64_t steps = 1000, workers = 2;
    const char *device = "cpu";
    const vla_flag flags[] = {
        {"steps", VLA_FLAG_INT, &steps, "N", "optimizer steps"},
        {"num_workers", VLA_FLAG_INT, &workers, "N", "loader threads (default 2)"},
        {"device", VLA_FLAG_STRING, &device, "NAME", "backend (default: $VLA_DEVICE, else cpu)"},
    };
    vla_command_spec spec = {"vla x", NULL, "X.", NULL, flags, 3, 0, 0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vla_flags_print_help(&spec, f);
    fclose(f);
    assert_non_null(strstr(buf, "optimizer steps (default: 1000)\n"));
    assert_non_null(strstr(buf, "loader threads (default 2)\n"));
    assert_non_null(strstr(buf, "backend (default: $VLA_DEVICE, else cpu)\n"));
    free(buf);
}

static void test_json(void **state) {
    json_t *v = NULL;
    const char *bad = "{\n  \"fps\": 30,\n  \"x\": [1, 2,, 3]\n}";
    assert_int_equal(vla_json_parse("info.json", bad, strlen(bad), &v), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "info.json: invalid JSON at line 3"));
    const char invalid_utf8[] = "{\"k\": \"\xff\xfe\"}";
    assert_int_equal(vla_json_parse("h", invalid_utf8, sizeof invalid_utf8 - 1, &v), VLA_ERR_FORMAT);
    const char *dup = "{\"a\": 1, \"a\": 2}";
    assert_int_equal(vla_json_parse("h", dup, strlen(dup), &v), VLA_ERR_FORMAT);

    const char *good = "{\"fps\": 30, \"name\": \"pusht\", \"ratio\": 0.5, \"f\": {\"a\": [1]}}";
    assert_int_equal(vla_json_parse("info.json", good, strlen(good), &v), VLA_OK);
    int64_t fps;
    double ratio;
    const char *name;
    json_t *obj, *arr;
    assert_int_equal(vla_json_get_int("info.json", v, "fps", &fps), VLA_OK);
    assert_int_equal(fps, 30);
    assert_int_equal(vla_json_get_number("info.json", v, "fps", &ratio), VLA_OK); /* ints are numbers */
    assert_int_equal(vla_json_get_number("info.json", v, "ratio", &ratio), VLA_OK);
    assert_int_equal(vla_json_get_string("info.json", v, "name", &name), VLA_OK);
    assert_int_equal(vla_json_get_object("info.json", v, "f", &obj), VLA_OK);
    assert_int_equal(vla_json_get_array("info.json", obj, "a", &arr), VLA_OK);
    assert_int_equal(vla_json_get_int("info.json", v, "name", &fps), VLA_ERR_FORMAT);
    assert_string_equal(vla_error_message(), "info.json: key 'name' must be an integer");
    assert_int_equal(vla_json_get_int("info.json", v, "total_frames", &fps), VLA_ERR_FORMAT);
    assert_string_equal(vla_error_message(), "info.json: key 'total_frames' is missing");

    const char *path = test_tmp_path("out.json");
    assert_int_equal(vla_json_write_file(path, v), VLA_OK);
    json_t *back = NULL;
    assert_int_equal(vla_json_load_file(path, &back), VLA_OK);
    assert_true(json_equal(v, back));
    json_decref(back);
    json_decref(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_context), cmocka_unit_test(test_arena), cmocka_unit_test(test_arena_begin_call),
        cmocka_unit_test(test_atomic_write_and_faults), cmocka_unit_test(test_fault_points), cmocka_unit_test(test_flags), cmocka_unit_test(test_flags_suggestions),
        cmocka_unit_test(test_flags_help_default_once),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
