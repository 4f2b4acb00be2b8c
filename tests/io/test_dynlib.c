/* test_dynlib.c — libraries loaded at their first use (base/dynlib.h): a
 * missing library or symbol is an error naming what to install; a present
 * one resolves to the addresses the dynamic loader itself gives; FFmpeg,
 * cairo, MuJoCo and Open MPI are absent from a process until it uses them,
 * in this program and in `vla --help`. */
#include "test_util.h"

#include "base/dynlib.h"
#include "io/cairo_api.h"
#include "io/ffmpeg_api.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether this process has a shared object whose path contains `name` mapped. */
static bool mapped(const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

static void test_missing_library_says_what_to_install(void **state) {
    static const char *const sonames[] = {"libvla-no-such-library.so.7", NULL};
    static const char *const names[] = {"nothing"};
    static void *slot;
    static vla_dynlib lib = VLA_DYNLIB_INIT("Nosuch", "libnosuch7", sonames, names, &slot);
    assert_int_equal(vla_dynlib_require(&lib), VLA_ERR_UNSUPPORTED);
    const char *m = vla_error_message();
    assert_non_null(strstr(m, "Nosuch could not be loaded"));
    assert_non_null(strstr(m, "libvla-no-such-library.so.7")); /* dlerror's reason names the file */
    assert_non_null(strstr(m, "install libnosuch7"));
    assert_false(vla_dynlib_loaded(&lib));
    /* asked again: the same answer, not a crash or a half-filled table */
    assert_int_equal(vla_dynlib_require(&lib), VLA_ERR_UNSUPPORTED);
    assert_null(slot);
}

static void test_missing_symbol_is_named(void **state) {
    static const char *const sonames[] = {"libm.so.6", NULL};
    static const char *const names[] = {"cos", "vla_not_in_libm"};
    static void *slots[2];
    static vla_dynlib lib = VLA_DYNLIB_INIT("libm", "libc6", sonames, names, slots);
    assert_int_equal(vla_dynlib_require(&lib), VLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(vla_error_message(), "lacks vla_not_in_libm"));
    assert_false(vla_dynlib_loaded(&lib));
}

/* The table holds what dlsym gives for the same name, and calling through it works. */
static struct {
    __typeof__(cos) *cos;
    __typeof__(ldexp) *ldexp;
} m_api;
static const char *const m_sonames[] = {"libm.so.6", NULL};
static const char *const m_names[] = {"cos", "ldexp"};
static vla_dynlib m_lib = VLA_DYNLIB_INIT("libm", "libc6", m_sonames, m_names, &m_api);

static void *require_m(void *arg) {
    (void)arg;
    return (void *)(intptr_t)vla_dynlib_require(&m_lib);
}

static void test_present_library_resolves_once_from_many_threads(void **state) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, require_m, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *rc;
        assert_int_equal(pthread_join(t[i], &rc), 0);
        assert_int_equal((int)(intptr_t)rc, VLA_OK);
    }
    assert_true(vla_dynlib_loaded(&m_lib));
    void *h = dlopen("libm.so.6", RTLD_LAZY | RTLD_NOLOAD);
    assert_non_null(h);
    assert_ptr_equal((void *)m_api.cos, dlsym(h, "cos"));
    assert_ptr_equal((void *)m_api.ldexp, dlsym(h, "ldexp"));
    dlclose(h);
    volatile double x = 0.0;
    assert_true(m_api.cos(x) == 1.0);
    assert_true(m_api.ldexp(3.0, 4) == 48.0);
}

/* This program links libvla like the CLI: FFmpeg and cairo arrive at the first use only. */
static void test_media_libraries_arrive_at_first_use(void **state) {
    assert_false(vla_dynlib_loaded(&vla_ffmpeg_lib));
    assert_false(mapped("libavcodec.so"));
    assert_false(mapped("libcairo.so"));
    assert_false(mapped("libmujoco.so"));
    assert_false(mapped("libmpi.so"));
    /* a redirected call loads its library on the way (cairo first: FFmpeg's
     * SVG decoder brings cairo with it) */
    assert_int_equal(cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, 10), 40);
    assert_true(vla_dynlib_loaded(&vla_cairo_lib));
    assert_true(mapped("libcairo.so"));
    assert_false(mapped("libavcodec.so"));
    assert_int_equal(vla_ffmpeg_require(), VLA_OK);
    assert_true(mapped("libavcodec.so"));
    assert_true(mapped("libswscale.so"));
    /* through the redirect: the same function FFmpeg's own export gives */
    assert_int_equal(avcodec_version(), ((unsigned (*)(void))dlsym(RTLD_DEFAULT, "avcodec_version"))());
}

/* `vla --help` maps none of them: the loader's own list of what it opened. */
static void test_cli_help_loads_no_media_library(void **state) {
    static char out[1 << 18];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files %s --help 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "file=libjansson.so")); /* LD_DEBUG worked: a linked library is listed */
    const char *absent[] = {"libavcodec", "libavformat", "libcairo", "libmujoco", "libmpi"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        if (strstr(out, absent[i])) fail_msg("`vla --help` loaded %s:\n%s", absent[i], out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_library_says_what_to_install),
        cmocka_unit_test(test_missing_symbol_is_named),
        cmocka_unit_test(test_present_library_resolves_once_from_many_threads),
        cmocka_unit_test(test_media_libraries_arrive_at_first_use),
        cmocka_unit_test(test_cli_help_loads_no_media_library),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches();
    return rc;
}
