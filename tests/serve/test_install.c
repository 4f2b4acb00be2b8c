/* test_install.c — `make install` as a user meets it: the build's install
 * step (cmake --install, what `make install PREFIX=…` runs) into a fresh
 * prefix, then
 *  - the tree: libvla.so → libvla.so.0 → libvla.so.0.1.0 with SONAME
 *    libvla.so.0, include/vla.h, lib/pkgconfig/vla.pc, bin/vla;
 *  - portability: the installed library and CLI hold no AVX/AVX-512
 *    instruction (objdump; the same check finds them in this machine's
 *    -march=native libvla.a, so it can fail);
 *  - examples/robot_loop.c compiled from the installed tree with
 *    `pkg-config --cflags --libs vla` alone drives the PushT simulator
 *    through the installed libvla.so, episode for episode the same as the
 *    example linked to the native build and as `vla eval` on the same seed;
 *  - a missing checkpoint: exit 1 and a message naming it. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_fixture.h"

static char g_prefix[2048], g_ckpt[2048];

static void sh(const char *cmd, char *out, size_t cap, int want_rc) {
    int rc = test_run(cmd, out, cap);
    if (rc != want_rc) fail_msg("`%s` exited %d (wanted %d):\n%s", cmd, rc, want_rc, out);
}

static void test_tree(void **state) {
    (void)state;
    char cmd[8192], out[16384];
    snprintf(cmd, sizeof cmd, "readlink %s/lib/libvla.so; readlink %s/lib/libvla.so.0; readelf -d %s/lib/libvla.so.0.1.0 | grep SONAME",
             g_prefix, g_prefix, g_prefix);
    sh(cmd, out, sizeof out, 0);
    printf("%s", out);
    assert_non_null(strstr(out, "libvla.so.0\nlibvla.so.0.1.0\n"));
    assert_non_null(strstr(out, "[libvla.so.0]"));
    snprintf(cmd, sizeof cmd, "test -f %s/include/vla.h && PKG_CONFIG_PATH=%s/lib/pkgconfig pkg-config --modversion vla && PKG_CONFIG_PATH=%s/lib/pkgconfig pkg-config --cflags --libs vla",
             g_prefix, g_prefix, g_prefix);
    sh(cmd, out, sizeof out, 0);
    printf("%s", out);
    assert_non_null(strstr(out, "0.1.0"));
    assert_non_null(strstr(out, "-lvla"));
    /* the installed CLI finds its library through its RUNPATH */
    snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH %s/bin/vla version", g_prefix);
    sh(cmd, out, sizeof out, 0);
    assert_non_null(strstr(out, "vla 0.1.0"));
}

/* AVX registers or VEX-only mnemonics in a disassembly. */
static long avx_count(const char *file) {
    char cmd[8192], out[256];
    snprintf(cmd, sizeof cmd, "objdump -d --no-show-raw-insn %s | grep -cE '%%[yz]mm[0-9]|\\bv(fmadd|fmsub|fnmadd|broadcast|perm|insert|extract)'",
             file);
    test_run(cmd, out, sizeof out);
    return atol(out);
}

static void test_portable(void **state) {
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/lib/libvla.so.0.1.0", g_prefix);
    long lib = avx_count(path);
    snprintf(path, sizeof path, "%s/bin/vla", g_prefix);
    long cli = avx_count(path);
    snprintf(path, sizeof path, "%s/libvla.a", getenv("VLA_BINARY_DIR"));
    long native = avx_count(path);
    char flags[256];
    test_run("grep -cE 'avx2' /proc/cpuinfo", flags, sizeof flags);
    printf("AVX instructions: installed libvla.so %ld, installed vla %ld; this machine's -march=native libvla.a %ld\n",
           lib, cli, native);
    assert_int_equal(lib, 0);
    assert_int_equal(cli, 0);
    if (atol(flags) > 0 && native == 0) printf("note: the native build used no AVX here (a build with VLA_NATIVE=OFF?)\n");
}

static void test_robot_loop(void **state) {
    (void)state;
    char cmd[16384], out[16384], native[16384], ev[16384];
    const char *exe = test_tmp_path("robot_loop");
    snprintf(cmd, sizeof cmd,
             "export PKG_CONFIG_PATH=%s/lib/pkgconfig; cc -std=c11 -Wall -Wextra -Werror %s/share/vla/examples/robot_loop.c "
             "-o %s $(pkg-config --cflags --libs vla) -Wl,-rpath,$(pkg-config --variable=libdir vla) 2>&1",
             g_prefix, g_prefix, exe);
    sh(cmd, out, sizeof out, 0);
    snprintf(cmd, sizeof cmd, "ldd %s | grep libvla", exe);
    sh(cmd, out, sizeof out, 0);
    printf("%s", out);
    assert_non_null(strstr(out, g_prefix)); /* the installed library, not the build tree's */
    snprintf(cmd, sizeof cmd, "%s %s 2 100000", exe, g_ckpt); /* the checkpoint's n_action_steps */
    sh(cmd, out, sizeof out, 0);
    printf("installed: %s", out);
    snprintf(cmd, sizeof cmd, "%s/examples/robot_loop %s 2 100000", getenv("VLA_BINARY_DIR"), g_ckpt);
    sh(cmd, native, sizeof native, 0);
    printf("native:    %s", native);
    assert_string_equal(out, native);
    /* `vla eval` on the same seeds, one episode per run so each policy call
     * holds one episode as the robot loop's do (a batch of two would round
     * differently): the same steps and best coverage on average */
    double esteps = 0, ecov = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s eval --policy.path=%s --env.type=pusht --eval.n_episodes=1 --seed=%d "
                 "--eval.n_videos=0 --output_dir=%s --json 2>/dev/null",
                 test_cli_path(), g_ckpt, 100000 + k, test_tmp_path(k ? "eval1" : "eval0"));
        sh(cmd, ev, sizeof ev, 0);
        printf("vla eval:  %s\n", ev);
        esteps += atof(strstr(ev, "\"mean_steps\":") + 13) / 2;
        ecov += atof(strstr(ev, "\"mean_max_coverage\":") + 20) / 2;
    }
    double steps = 0, cov = 0;
    for (const char *p = out; (p = strstr(p, "\"steps\":")); p++) steps += atof(p + 8) / 2;
    for (const char *p = out; (p = strstr(p, "\"max_coverage\":")); p++) cov += atof(p + 15) / 2;
    printf("robot_loop: mean steps %.1f, mean max coverage %.4f; vla eval: %.1f, %.4f\n", steps, cov, esteps, ecov);
    assert_true(steps == esteps);
    assert_true(fabs(cov - ecov) < 1e-4);
    /* a checkpoint that is not there */
    snprintf(cmd, sizeof cmd, "%s /nonexistent/ckpt 2>&1", exe);
    sh(cmd, out, sizeof out, 1);
    printf("%s", out);
    assert_non_null(strstr(out, "/nonexistent/ckpt"));
}

static int setup(void **state) {
    (void)state;
    snprintf(g_prefix, sizeof g_prefix, "%s", test_tmp_path("prefix"));
    snprintf(g_ckpt, sizeof g_ckpt, "%s", fixture_checkpoint(test_tmp_path("ckpt"), false));
    char cmd[8192], out[16384];
    snprintf(cmd, sizeof cmd, "cmake --install %s --prefix %s 2>&1", getenv("VLA_BINARY_DIR"), g_prefix);
    if (test_run(cmd, out, sizeof out) != 0) {
        printf("%s", out);
        return -1;
    }
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_portable),
        cmocka_unit_test(test_robot_loop),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
