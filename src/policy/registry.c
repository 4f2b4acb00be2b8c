/* registry.c — the policy families this build knows: the only file that
 * names them (family.h). */
#include "policy/family.h"

#include <stdio.h>
#include <string.h>

extern const vla_policy_family vla_pi05_family;  /* pi05_family.c */
extern const vla_policy_family vla_groot_family; /* groot_family.c */

static const vla_policy_family *const FAMILIES[] = {&vla_pi05_family, &vla_groot_family};
#define N_FAMILIES ((int)(sizeof FAMILIES / sizeof FAMILIES[0]))

const vla_policy_family *vla_policy_family_at(int i) { return i >= 0 && i < N_FAMILIES ? FAMILIES[i] : NULL; }

const vla_policy_family *vla_policy_family_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_FAMILIES; i++)
        if (!strcmp(FAMILIES[i]->name, name)) return FAMILIES[i];
    return NULL;
}

const char *vla_policy_family_names(void) {
    static _Thread_local char buf[256];
    size_t k = 0;
    for (int i = 0; i < N_FAMILIES && k < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", i ? ", " : "", FAMILIES[i]->name);
    return buf;
}
