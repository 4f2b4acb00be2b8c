/* fp8_state.c — the FP8 scaling state across ranks and in checkpoints (see fp8_state.h). */
#include "train/fp8_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "io/safetensors.h"
#include "policy/precision.h"

/* The all-reduce before each update makes the ranks' states equal; a
 * checkpoint of state that differs across ranks would resume into something
 * no rank ran. */
vla_status vla_fp8_state_agree(vla_comm *comm, const vla_policy *p, int64_t step) {
    if (vla_comm_world(comm) == 1 || vla_policy_precision_mode(p) != VLA_PREC_FP8) return VLA_OK;
    int64_t count;
    float *mine = vla_policy_fp8_state_to_host(p, &count);
    float *root = mine ? malloc((size_t)count * sizeof *root) : NULL;
    vla_status st = root ? VLA_OK : vla_error(VLA_ERR_NOMEM, "checkpoint: out of memory for the FP8 state");
    st = vla_comm_agree(comm, st, "checkpoint: FP8 scaling state"); /* all ranks bcast, or none */
    if (st == VLA_OK) {
        memcpy(root, mine, (size_t)count * sizeof *root);
        st = vla_comm_bcast(comm, root, count, VLA_COMM_F32, 0);
    }
    if (st == VLA_OK && memcmp(root, mine, (size_t)count * sizeof *root)) {
        int64_t i = 0, n = p->prec->n;
        while (i < count && !memcmp(&root[i], &mine[i], sizeof *root)) i++;
        st = vla_error(VLA_ERR_INTERNAL, "step %lld: rank %d's FP8 %s of tensor %lld (%s, role %lld) is %.9g, rank 0's "
                       "%.9g: the ranks' scaling state diverged; not writing a checkpoint", (long long)step,
                       vla_comm_rank(comm), i < n ? "scale" : "amax history", (long long)(i % n),
                       vla_policy_fp8_tensor_linear(p, i % n), (long long)(i % n % 3), mine[i], root[i]);
    }
    free(mine), free(root);
    return vla_comm_agree(comm, st, "checkpoint: FP8 scaling state");
}

vla_status vla_fp8_state_write(const vla_policy *p, vla_ckpt_writer *w) {
    vla_safetensors_writer *sw = NULL;
    float *keep = NULL;
    vla_status st = vla_safetensors_writer_new(&sw);
    if (st == VLA_OK) st = vla_policy_fp8_export(p, sw, &keep);
    if (st == VLA_OK) st = vla_ckpt_write_safetensors(w, VLA_FP8_STATE_FILE, sw);
    vla_safetensors_writer_free(sw);
    free(keep);
    return st;
}

vla_status vla_fp8_state_load(vla_policy *p, const char *ck_dir, int rank) {
    char path[VLA_CKPT_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", ck_dir, VLA_FP8_STATE_FILE);
    bool have = vla_path_exists(path), fp8 = vla_policy_precision_mode(p) == VLA_PREC_FP8;
    if (fp8 && have) return vla_error_context(vla_policy_fp8_import(p, path), "resuming the FP8 scaling state");
    if (rank == 0 && fp8)
        VLA_WARN("%s has no FP8 scaling state (it trained in another precision): FP8 starts from scale 1, as a new "
                 "run does", ck_dir);
    if (rank == 0 && have && !fp8)
        VLA_INFO("%s: FP8 scaling state left unused (this run is %s)", ck_dir,
                 vla_precision_name(vla_policy_precision_mode(p)));
    return VLA_OK;
}
