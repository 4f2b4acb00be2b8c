/* pi05_internal.h — what the π0.5 family's two files share: the weight
 * struct the inventory (pi05_family.c) binds and the network (pi05.c) reads. */
#ifndef VLA_POLICY_PI05_INTERNAL_H
#define VLA_POLICY_PI05_INTERNAL_H

#include "nn/block.h"
#include "policy/family.h"
#include "policy/pi05.h"
#include "policy/vit.h"

typedef struct {
    vla_vit vit;                    /* vision_tower */
    vla_wg proj_w, proj_b;          /* multi_modal_projector */
    vla_wg embed;                   /* the LM's token embedding */
    vla_block_weights *lm, *ex;     /* [depth]: Gemma layers (prefix), expert layers (actions) */
    vla_wg lm_norm;                 /* in the checkpoints, unused: the expert's output is the result */
    vla_wg fin_w, fin_b;            /* the expert's final AdaRMS modulation */
    vla_wg ain_w, ain_b, aout_w, aout_b, tin_w, tin_b, tout_w, tout_b;
} pi05_weights;

/* this family's table (its *_family.c) */
extern const vla_policy_family vla_pi05_family;

#endif
