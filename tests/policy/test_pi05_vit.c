/* test_pi05_vit.c — the shared SigLIP-style ViT (src/policy/vit.c): central
 * finite differences of every ViT parameter group and of the input images,
 * along random directions and single coordinates, on the ViT of a pi05-nano
 * policy (bound by the family's inventory), and a 2-image batch so images
 * stay separate segments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "policy/pi05.h"
#include "policy/policy.h"
#include "policy/vit.h"
#include "tensor/ops.h"
#include "test_util.h"

typedef struct {
    vla_policy *pol;
    vla_vit *vit;
    int64_t n_img, n_out, n_pix;
    float *images, *out, *acts, *scratch, *r, *d_images;
} fixture;

static void setup_fixture(fixture *f, int64_t n_img) {
    memset(f, 0, sizeof *f);
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("pi05-nano", &cfg), VLA_OK);
    assert_int_equal(vla_policy_create(&cfg, vla_ops_cpu(), &f->pol), VLA_OK);
    vla_policy_default_init(f->pol, 7);
    f->vit = vla_pi05_vit(f->pol);
    assert_non_null(f->vit);
    /* make the norms and biases non-trivial so their gradients are tested */
    vla_rng r = vla_rng_stream(99, 1);
    for (int64_t i = 0; i < f->pol->specs.n; i++) {
        const vla_param_spec *s = f->pol->params[i].spec;
        if (s->group != VLA_GROUP_VISION) continue;
        for (int64_t k = 0; k < s->numel; k++) f->pol->params[i].data[k] += (float)(0.1 * vla_rng_normal(&r));
    }
    const vla_vit_config *c = &f->pol->cfg.vision;
    f->n_img = n_img;
    f->n_pix = n_img * c->channels * c->image_size * c->image_size;
    f->n_out = n_img * f->vit->tokens * c->width;
    f->images = calloc((size_t)f->n_pix, sizeof(float));
    f->d_images = calloc((size_t)f->n_pix, sizeof(float));
    f->out = calloc((size_t)f->n_out, sizeof(float));
    f->r = calloc((size_t)f->n_out, sizeof(float));
    f->acts = calloc((size_t)vla_vit_acts_floats(f->vit, n_img), sizeof(float));
    f->scratch = calloc((size_t)vla_vit_scratch_floats(f->vit, n_img, true), sizeof(float));
    for (int64_t i = 0; i < f->n_pix; i++) f->images[i] = vla_rng_uniform(&r);
    for (int64_t i = 0; i < f->n_out; i++) f->r[i] = (float)vla_rng_normal(&r);
}

static void teardown_fixture(fixture *f) {
    vla_policy_free(f->pol);
    free(f->images), free(f->d_images), free(f->out), free(f->r), free(f->acts), free(f->scratch);
}

/* L = Σ out·r */
static double objective(fixture *f) {
    assert_int_equal(vla_vit_forward(f->vit, f->out, f->acts, f->images, f->n_img), VLA_OK);
    double s = 0;
    for (int64_t i = 0; i < f->n_out; i++) s += (double)f->out[i] * f->r[i];
    return s;
}

static void grads(fixture *f) {
    vla_policy_zero_grad(f->pol);
    memset(f->d_images, 0, (size_t)f->n_pix * sizeof(float));
    objective(f);
    assert_int_equal(vla_vit_backward(f->vit, f->d_images, f->r, f->acts, f->scratch, f->n_img), VLA_OK);
}

/* Directional derivative along a random direction over the buffer x (n
 * floats, gradient g), by central differences with step h. */
static void check_direction(fixture *f, const char *what, float *x, const float *g, int64_t n, uint64_t seed) {
    vla_rng r = vla_rng_stream(seed, 5);
    float *d = malloc((size_t)n * sizeof(float)), *x0 = malloc((size_t)n * sizeof(float));
    double norm = 0;
    for (int64_t i = 0; i < n; i++) d[i] = (float)vla_rng_normal(&r), norm += (double)d[i] * d[i];
    norm = sqrt(norm);
    memcpy(x0, x, (size_t)n * sizeof(float));
    double an = 0;
    for (int64_t i = 0; i < n; i++) d[i] = (float)(d[i] / norm), an += (double)g[i] * d[i];
    const double h = 1e-2;
    for (int64_t i = 0; i < n; i++) x[i] = x0[i] + (float)h * d[i];
    double fp = objective(f);
    for (int64_t i = 0; i < n; i++) x[i] = x0[i] - (float)h * d[i];
    double fm = objective(f);
    memcpy(x, x0, (size_t)n * sizeof(float));
    double fd = (fp - fm) / (2 * h);
    double err = fabs(fd - an), tol = 1e-2 * fmax(fabs(fd), fabs(an)) + 1e-3;
    if (!(err <= tol)) fail_msg("%s: analytic %.8g vs finite difference %.8g", what, an, fd);
    free(d), free(x0);
}

static void test_vit_finite_differences(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, 2);
    grads(&f);
    int checked = 0;
    for (int64_t i = 0; i < f.pol->specs.n; i++) {
        vla_param *p = &f.pol->params[i];
        if (p->spec->group != VLA_GROUP_VISION) continue;
        assert_non_null(p->grad);
        check_direction(&f, p->spec->name, p->data, p->grad, p->spec->numel, 1000 + (uint64_t)i);
        checked++;
    }
    assert_true(checked >= 20);
    check_direction(&f, "images", f.images, f.d_images, f.n_pix, 4242);
    teardown_fixture(&f);
}

/* Two images at once give each image's output alone (segments do not mix). */
static void test_vit_images_independent(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, 2);
    objective(&f);
    int64_t half = f.n_out / 2, pix = f.n_pix / 2;
    float *both = malloc((size_t)f.n_out * sizeof(float));
    memcpy(both, f.out, (size_t)f.n_out * sizeof(float));
    float *one = malloc((size_t)half * sizeof(float));
    assert_int_equal(vla_vit_forward(f.vit, one, f.acts, f.images + pix, 1), VLA_OK);
    for (int64_t i = 0; i < half; i++) assert_true(fabsf(one[i] - both[half + i]) <= 1e-5f * (1 + fabsf(one[i])));
    free(both), free(one);
    teardown_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vit_finite_differences),
        cmocka_unit_test(test_vit_images_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
