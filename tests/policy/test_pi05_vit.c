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

/* Host copies (images, out, r, d_images) and their backend buffers (the
 * ViT runs on the policy's backend: checked_ runs prove it touches nothing
 * else). */
typedef struct {
    vla_policy *pol;
    const vla_ops *ops;
    vla_vit *vit;
    int64_t n_img, n_out, n_pix;
    float *images, *out, *r, *d_images;               /* host */
    float *dev_images, *dev_out, *dev_r, *dev_d_images; /* backend */
    float *acts, *scratch;                            /* backend */
} fixture;

static void setup_fixture(fixture *f, int64_t n_img) {
    memset(f, 0, sizeof *f);
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("pi05-nano", &cfg), VLA_OK);
    assert_int_equal(vla_policy_create(&cfg, test_backend(), &f->pol), VLA_OK);
    f->ops = f->pol->tops;
    vla_policy_default_init(f->pol, 7);
    f->vit = vla_pi05_vit(f->pol);
    assert_non_null(f->vit);
    /* make the norms and biases non-trivial so their gradients are tested */
    vla_rng r = vla_rng_stream(99, 1);
    float *hw = test_weights_get(f->pol);
    for (int64_t i = 0; i < f->pol->specs.n; i++) {
        const vla_param_spec *s = f->pol->params[i].spec;
        if (s->group != VLA_GROUP_VISION) continue;
        float *w = hw + (f->pol->params[i].data - f->pol->weights);
        for (int64_t k = 0; k < s->numel; k++) w[k] += (float)(0.1 * vla_rng_normal(&r));
    }
    test_weights_set(f->pol, hw);
    free(hw);
    const vla_vit_config *c = &f->pol->cfg.vision;
    f->n_img = n_img;
    f->n_pix = n_img * c->channels * c->image_size * c->image_size;
    f->n_out = n_img * f->vit->tokens * c->width;
    f->images = calloc((size_t)f->n_pix, sizeof(float));
    f->d_images = calloc((size_t)f->n_pix, sizeof(float));
    f->out = calloc((size_t)f->n_out, sizeof(float));
    f->r = calloc((size_t)f->n_out, sizeof(float));
    for (int64_t i = 0; i < f->n_pix; i++) f->images[i] = vla_rng_uniform(&r);
    for (int64_t i = 0; i < f->n_out; i++) f->r[i] = (float)vla_rng_normal(&r);
    f->dev_images = test_dev_copy(f->ops, f->images, f->n_pix);
    f->dev_d_images = test_dev_copy(f->ops, f->d_images, f->n_pix);
    f->dev_out = test_dev_copy(f->ops, f->out, f->n_out);
    f->dev_r = test_dev_copy(f->ops, f->r, f->n_out);
    f->acts = f->ops->alloc((size_t)vla_vit_acts_floats(f->vit, n_img) * sizeof(float));
    f->scratch = f->ops->alloc((size_t)vla_vit_scratch_floats(f->vit, n_img, true) * sizeof(float));
    assert_non_null(f->acts), assert_non_null(f->scratch);
}

static void teardown_fixture(fixture *f) {
    const vla_ops *ops = f->ops;
    ops->free(f->dev_images), ops->free(f->dev_d_images), ops->free(f->dev_out), ops->free(f->dev_r);
    ops->free(f->acts), ops->free(f->scratch);
    vla_policy_free(f->pol);
    free(f->images), free(f->d_images), free(f->out), free(f->r);
}

/* L = Σ out·r (the host's images uploaded first) */
static double objective(fixture *f) {
    f->ops->to_device(f->dev_images, f->images, (size_t)f->n_pix * sizeof(float));
    assert_int_equal(vla_vit_forward(f->vit, f->dev_out, f->acts, f->dev_images, f->n_img), VLA_OK);
    test_dev_read(f->ops, f->out, f->dev_out, f->n_out);
    double s = 0;
    for (int64_t i = 0; i < f->n_out; i++) s += (double)f->out[i] * f->r[i];
    return s;
}

static void grads(fixture *f) {
    vla_policy_zero_grad(f->pol);
    f->ops->fill(f->dev_d_images, 0.0f, f->n_pix);
    objective(f);
    assert_int_equal(vla_vit_backward(f->vit, f->dev_d_images, f->dev_r, f->acts, f->scratch, f->n_img), VLA_OK);
    test_dev_read(f->ops, f->d_images, f->dev_d_images, f->n_pix);
}

/* Directional derivative along a random direction over n floats (gradient
 * g): the weights at offset `woff` (woff >= 0), or the host images (woff < 0),
 * by central differences with step h. */
static void check_direction(fixture *f, const char *what, int64_t woff, const float *g, int64_t n, uint64_t seed) {
    vla_rng r = vla_rng_stream(seed, 5);
    float *d = malloc((size_t)n * sizeof(float)), *x0 = malloc((size_t)n * sizeof(float));
    float *x = woff >= 0 ? malloc((size_t)n * sizeof(float)) : f->images;
    double norm = 0;
    for (int64_t i = 0; i < n; i++) d[i] = (float)vla_rng_normal(&r), norm += (double)d[i] * d[i];
    norm = sqrt(norm);
    if (woff >= 0) test_dev_read(f->ops, x0, f->pol->weights + woff, n);
    else memcpy(x0, x, (size_t)n * sizeof(float));
    double an = 0;
    for (int64_t i = 0; i < n; i++) d[i] = (float)(d[i] / norm), an += (double)g[i] * d[i];
    const double h = 1e-2;
    double fpm[2];
    for (int side = 0; side < 2; side++) {
        for (int64_t i = 0; i < n; i++) x[i] = x0[i] + (float)(side ? -h : h) * d[i];
        if (woff >= 0) f->ops->to_device(f->pol->weights + woff, x, (size_t)n * sizeof(float));
        fpm[side] = objective(f);
    }
    if (woff >= 0) f->ops->to_device(f->pol->weights + woff, x0, (size_t)n * sizeof(float));
    else memcpy(x, x0, (size_t)n * sizeof(float));
    double fd = (fpm[0] - fpm[1]) / (2 * h);
    double err = fabs(fd - an), tol = 1e-2 * fmax(fabs(fd), fabs(an)) + 1e-3;
    if (!(err <= tol)) fail_msg("%s: analytic %.8g vs finite difference %.8g", what, an, fd);
    free(d), free(x0);
    if (woff >= 0) free(x);
}

static void test_vit_finite_differences(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, 2);
    grads(&f);
    float *hg = test_grads_get(f.pol);
    int checked = 0;
    for (int64_t i = 0; i < f.pol->specs.n; i++) {
        vla_param *p = &f.pol->params[i];
        if (p->spec->group != VLA_GROUP_VISION) continue;
        assert_non_null(p->grad);
        check_direction(&f, p->spec->name, p->data - f.pol->weights, hg + (p->grad - f.pol->grads), p->spec->numel,
                        1000 + (uint64_t)i);
        checked++;
    }
    assert_true(checked >= 20);
    check_direction(&f, "images", -1, f.d_images, f.n_pix, 4242);
    free(hg);
    teardown_fixture(&f);
}

/* Two images at once give each image's output alone (segments do not mix). */
static void test_vit_images_independent(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, 2);
    objective(&f);
    int64_t half = f.n_out / 2, pix = f.n_pix / 2;
    float *one = malloc((size_t)half * sizeof(float));
    assert_int_equal(vla_vit_forward(f.vit, f.dev_out, f.acts, f.dev_images + pix, 1), VLA_OK);
    test_dev_read(f.ops, one, f.dev_out, half);
    for (int64_t i = 0; i < half; i++)
        assert_true(fabsf(one[i] - f.out[half + i]) <= 1e-5f * (1 + fabsf(one[i])));
    free(one);
    teardown_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vit_finite_differences),
        cmocka_unit_test(test_vit_images_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
