/* test_flags_ux.c — flags, help, `vla plan` and `vla policy info` as a user
 * meets them (issue 44, items 5 and 8), on the built `vla` binary: unknown
 * flags that say what was meant, help that states a default once for every
 * command and subcommand (found by walking the help itself, so a new
 * command is covered without editing this file), `vla help CMD`, `vla
 * --version`, `vla plan` reading a policy preset and `policy info --json`,
 * and `policy info` on a run directory of a state-only checkpoint whose
 * parameter count is checked against the tensors in its safetensors file. */
#include "cli/cli_test.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* ---- unknown flags ---------------------------------------------------------- */

static void test_unknown_flags_say_what_was_meant(void **state) {
    (void)state;
    EXPECT(vla("train --stpes=3"), 2);
    SAYS("unknown flag --stpes; did you mean --steps?");
    EXPECT(vla("train --setps=3"), 2); /* a transposition is one edit */
    SAYS("unknown flag --setps; did you mean --steps?");
    EXPECT(vla("eval --env=pusht"), 2); /* the group's bare name: its type flag, with the value */
    SAYS("unknown flag --env; did you mean --env.type=pusht?");
    SAYS("--env.task");
    EXPECT(vla("eval --foo"), 2); /* nothing close: the command's flag groups */
    SAYS("the flags of vla eval: --policy.*, --env.*, --eval.*");
    if (strstr(out, "did you mean")) fail_msg("a suggestion for --foo:\n%s", out);
}

/* ---- help ------------------------------------------------------------------- */

/* The command names listed under "commands:" in out (a dispatcher's help). */
static int command_names(char names[][32], int cap) {
    int n = 0;
    const char *p = strstr(out, "\ncommands:\n");
    if (!p) return 0;
    p += strlen("\ncommands:\n");
    while (*p == ' ' && n < cap) {
        while (*p == ' ') p++;
        int k = 0;
        while (p[k] && !isspace((unsigned char)p[k]) && k < 31) k++;
        snprintf(names[n++], 32, "%.*s", k, p);
        p = strchr(p, '\n');
        if (!p) break;
        p++;
    }
    return n;
}

/* out is one command's help: no flag line states its default twice. A
 * statement of a default is "(default …" or "default: …" (either case);
 * prose that refers to a default ("lists … the default") is not one. */
static void check_defaults_once(const char *what) {
    for (const char *line = out; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 4 && !strncmp(line, "  --", 4)) {
            int count = 0;
            for (size_t i = 0; i + 8 <= len; i++)
                if (!strncasecmp(line + i, "default", 7) && ((i > 0 && line[i - 1] == '(') || line[i + 7] == ':'))
                    count++;
            if (count > 1) fail_msg("`vla %s --help` states a default twice:\n%.*s", what, (int)len, line);
        }
        line = end ? end + 1 : NULL;
    }
}

/* `vla help WHAT` prints exactly `vla WHAT --help`. */
static void check_help_command(const char *what) {
    static char want[1 << 17];
    EXPECT(vla("%s --help", what), 0);
    snprintf(want, sizeof want, "%s", out);
    EXPECT(vla("help %s", what), 0);
    if (strcmp(want, out)) fail_msg("`vla help %s` differs from `vla %s --help`:\n%s\n---\n%s", what, what, out, want);
}

static void test_help_every_command(void **state) {
    (void)state;
    EXPECT(vla("--help"), 0);
    char top[32][32];
    int n_top = command_names(top, 32), n_checked = 0;
    assert_true(n_top >= 10);
    for (int i = 0; i < n_top; i++) {
        EXPECT(vla("%s --help", top[i]), 0);
        char sub[48][32];
        int n_sub = strstr(out, "<command>") ? command_names(sub, 48) : 0;
        if (!n_sub) {
            check_defaults_once(top[i]);
            check_help_command(top[i]);
            n_checked++;
        }
        for (int k = 0; k < n_sub; k++) {
            char what[1100];
            snprintf(what, sizeof what, "%.31s %.31s", top[i], sub[k]);
            EXPECT(vla("%s --help", what), 0);
            SAYS("usage: vla ");
            check_defaults_once(what);
            check_help_command(what);
            n_checked++;
        }
    }
    assert_true(n_checked >= 30); /* the walk found the subcommands too */
    EXPECT(vla("help train"), 0);
    SAYS("usage: vla train");
}

static void test_version_and_top_level(void **state) {
    (void)state;
    static char want[1 << 17];
    EXPECT(vla("version"), 0);
    snprintf(want, sizeof want, "%s", out);
    EXPECT(vla("--version"), 0);
    assert_string_equal(out, want);
    EXPECT(vla("-V"), 0);
    assert_string_equal(out, want);
    /* the simulators the registry has, ALOHA included */
    EXPECT(vla("--help"), 0);
    const char *sim = strstr(out, "\n  sim ");
    assert_non_null(sim);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(sim + 1, "\n"), sim + 1);
    for (char *c = line; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (!strstr(line, "aloha") || !strstr(line, "pusht") || !strstr(line, "reach"))
        fail_msg("the sim line does not name every simulator: %s", line);
}

/* ---- vla plan reads a policy ------------------------------------------------- */

static json_t *out_json(void) {
    json_error_t err;
    const char *brace = strchr(out, '{');
    json_t *j = brace ? json_loads(brace, JSON_DISABLE_EOF_CHECK, &err) : NULL;
    if (!j) fail_msg("no JSON in:\n%s", out);
    return j;
}

static void test_plan_reads_a_policy(void **state) {
    (void)state;
    EXPECT(vla("policy info --config=pi05-tiny --json"), 0);
    json_t *info = out_json();
    double trainable = (double)json_integer_value(json_object_get(info, "trainable_params"));
    double flops = json_number_value(json_object_get(json_object_get(info, "flops"), "train_per_sample"));
    assert_true(trainable > 0 && flops > 0);
    FILE *f = fopen(test_tmp_path("info.json"), "w");
    assert_non_null(f);
    fputs(out, f);
    fclose(f);
    json_decref(info);
    json_t *plan;
    /* a preset, and policy info's own output, give the same model */
    const char *configs[] = {"pi05-tiny", test_tmp_path("info.json")};
    for (int i = 0; i < 2; i++) {
        EXPECT(vla("plan --config=%s --gpus=16 --json", configs[i]), 0);
        plan = out_json();
        assert_true(json_number_value(json_object_get(plan, "params")) == trainable);
        assert_true(fabs(json_number_value(json_object_get(plan, "flops_per_sample")) / flops - 1) < 1e-5);
        assert_string_equal(json_string_value(json_object_get(plan, "policy")), "pi05-tiny");
        json_decref(plan);
    }
    /* memory per GPU measured as policy info measures it (both at batch 32, the step on the meta backend as
     * cuda): f32 weights, AdamW split over 16 ranks by ZeRO-1, the activations kept and checkpointed — in bf16
     * (the default: the blocks' copies kept alone), fp8 and fp32 (f32 activations; FP8's arena is f32's) — the
     * copies (weight casts, cast buffers, headroom) more in bf16 and fp8 than in fp32, which casts nothing; the
     * total their sum; and a verdict against --gpu-gib */
    EXPECT(vla("policy info --config=pi05-tiny --json"), 0);
    info = out_json();
    json_t *im = json_object_get(info, "memory_bytes");
    double P = (double)json_integer_value(json_object_get(info, "total_params")), G = 1073741824.0;
    static const char *const precisions[3] = {"", " --precision=fp8", " --precision=fp32"};
    json_t *pm = NULL;
    double copies[3];
    for (int i = 0; i < 3; i++) {
        EXPECT(vla("plan --config=pi05-tiny --gpus=16 --json%s", precisions[i]), 0);
        pm = json_object_get(plan = out_json(), "memory_gib");
        assert_non_null(pm);
        const char *act = i == 0 ? "activations_bf16" : "activations_f32";
        const char *remat = i == 0 ? "activations_gradient_checkpointing_bf16" : "activations_gradient_checkpointing_f32";
#define NUM(key) json_number_value(json_object_get(pm, key))
#define NEAR(key, want) assert_true(fabs(NUM(key) - (want)) <= 1e-5 * (want))
        static const char *const names[3] = {"bf16", "fp8", "fp32"};
        assert_string_equal(json_string_value(json_object_get(pm, "precision")), names[i]);
        NEAR("weights", 4 * P / G);
        NEAR("grads", 4 * trainable / G); /* every parameter of pi05-tiny trains */
        NEAR("adamw", 8 * trainable / 16 / G);
        NEAR("grad_shard", 4 * trainable / 16 / G); /* the shard AdamW's update scales the gradient into */
        NEAR("activations", json_number_value(json_object_get(im, act)) / G);
        NEAR("activations_gradient_checkpointing", json_number_value(json_object_get(im, remat)) / G);
        if (i != 1) NEAR("copies", json_number_value(json_object_get(im, i == 0 ? "copies_bf16" : "copies_f32")) / G);
        NEAR("total", NUM("weights") + NUM("grads") + NUM("adamw") + NUM("grad_shard") + NUM("activations") +
                          NUM("copies"));
        copies[i] = NUM("copies");
#undef NEAR
#undef NUM
        assert_true(json_is_true(json_object_get(pm, "fits")));
        if (i < 2) json_decref(plan);
    }
    assert_true(copies[0] > copies[2] && copies[1] > copies[2]);
    json_decref(plan), json_decref(info);
    /* the largest batch per GPU that fits --gpu-gib: plan at that batch fits, at one more it does not */
    EXPECT(vla("plan --config=pi05-tiny --gpus=1 --gpu-gib=0.05 --json"), 0);
    pm = json_object_get(plan = out_json(), "memory_gib");
    long long lb = (long long)json_integer_value(json_object_get(pm, "largest_batch"));
    assert_true(lb >= 1 && json_integer_value(json_object_get(pm, "largest_batch_gradient_checkpointing")) >= lb);
    json_decref(plan);
    for (int extra = 0; extra < 2; extra++) {
        EXPECT(vla("plan --config=pi05-tiny --gpus=1 --gpu-gib=0.05 --batch=%lld --json", lb + extra), 0);
        pm = json_object_get(plan = out_json(), "memory_gib");
        assert_true(json_is_true(json_object_get(pm, "fits")) == (extra == 0));
        json_decref(plan);
    }
    /* --precision budgets a policy's memory: with --params alone it has nothing to budget */
    EXPECT(vla("plan --params=1e9 --precision=fp32"), 2);
    SAYS("--precision");
    EXPECT(vla("plan --config=pi05-tiny --precision=fp16"), 2);
    SAYS("give fp32, bf16 or fp8");
    EXPECT(vla("plan --config=pi05-tiny --gpus=16 --gpu-gib=0.001 --json"), 0);
    pm = json_object_get(plan = out_json(), "memory_gib");
    assert_true(json_is_false(json_object_get(pm, "fits")));
    json_decref(plan);
    /* --params overrides the count; the text names the policy */
    EXPECT(vla("plan --config=pi05-tiny --params=1e9 --json"), 0);
    plan = out_json();
    assert_true(json_number_value(json_object_get(plan, "params")) == 1e9);
    json_decref(plan);
    EXPECT(vla("plan --config=pi05-tiny"), 0);
    SAYS("policy              pi05-tiny:");
    /* no model: the error says both ways to give one; an unknown name lists the presets */
    EXPECT(vla("plan"), 2);
    SAYS("--config=NAME|FILE");
    SAYS("--params=P");
    EXPECT(vla("plan --config=no-such-policy"), 1);
    SAYS("pi05-tiny");
}

/* ---- policy info on a state-only run ----------------------------------------- */

/* Elements of every tensor in a safetensors file (its JSON header). */
static int64_t safetensors_elements(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char h[8];
    assert_int_equal(fread(h, 1, 8, f), 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | h[i];
    char *text = calloc(1, n + 1);
    assert_int_equal(fread(text, 1, n, f), n);
    fclose(f);
    json_t *hdr = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(hdr);
    int64_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach(hdr, k, v) {
        if (!strcmp(k, "__metadata__")) continue;
        int64_t e = 1;
        size_t i;
        json_t *d;
        json_array_foreach(json_object_get(v, "shape"), i, d) e *= json_integer_value(d);
        total += e;
    }
    json_decref(hdr);
    return total;
}

static void test_policy_info_state_only_run(void **state) {
    (void)state;
    EXPECT(vla("sim record --env=pusht --episodes=2 --seed=0 --out=pusht"), 0);
    EXPECT(vla("train --dataset.root=pusht --policy.config=groot-nano --batch_size=4 --num_workers=1 --steps=2 "
               "--quiet --dataset.image_keys= --output_dir=run"),
           0);
    /* the run directory, as eval takes it: resolved to its newest checkpoint, the path printed */
    EXPECT(vla("policy info --policy.pretrained_path=run"), 0);
    SAYS("policy groot-nano (groot, run/checkpoints/000002/pretrained_model)");
    SAYS("image 0 (0 cameras: a state-only policy)");
    SAYS("not run"); /* vision is allocated (and saved) but never run */
    EXPECT(vla("policy info --policy.pretrained_path=run --json"), 0);
    json_t *j = out_json();
    int64_t total = json_integer_value(json_object_get(j, "total_params"));
    json_t *vision = json_object_get(json_object_get(j, "groups"), "vision");
    assert_false(json_is_true(json_object_get(vision, "runs")));
    assert_true(json_integer_value(json_object_get(vision, "tokens_per_sample")) == 0);
    assert_true(json_number_value(json_object_get(vision, "train_flops_per_sample")) == 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "tokens_per_sample"), "image")), 0);
    json_decref(j);
    /* the count is what the policy allocated: every tensor of the checkpoint it saved */
    assert_int_equal(total, safetensors_elements(test_tmp_path("run/checkpoints/last/pretrained_model/model.safetensors")));
    /* a checkpoint step directory works the same way */
    EXPECT(vla("policy info --policy.pretrained_path=run/checkpoints/000002"), 0);
    SAYS("run/checkpoints/000002/pretrained_model");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_flags_say_what_was_meant),
        cmocka_unit_test(test_help_every_command),
        cmocka_unit_test(test_version_and_top_level),
        cmocka_unit_test(test_plan_reads_a_policy),
        cmocka_unit_test(test_policy_info_state_only_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
