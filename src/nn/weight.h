/* weight.h — a weight and its gradient: the one type every layer binding
 * uses (policies point these at their parameter store by checkpoint name). */
#ifndef VLA_NN_WEIGHT_H
#define VLA_NN_WEIGHT_H

/* w: the parameter's values; g: its gradient, NULL when the parameter is
 * frozen (every backward skips a NULL gradient, so freezing needs no
 * special case). Both NULL: the parameter does not exist in this model. */
typedef struct {
    const float *w;
    float *g;
} vla_wg;

#endif
