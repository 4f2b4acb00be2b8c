/* fp8_state.h — the FP8 scaling state (policy/precision.h) across ranks and
 * in checkpoints: before a checkpoint every rank must hold rank 0's, byte
 * for byte; rank 0 writes it into the checkpoint; a resumed run reads it
 * back (docs/precision.md). */
#ifndef VLA_TRAIN_FP8_STATE_H
#define VLA_TRAIN_FP8_STATE_H

#include <stdint.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "policy/policy.h"
#include "checkpoint/checkpoint.h"

/* Collective: VLA_OK when p is not FP8, the world is one rank, or every
 * rank's state equals rank 0's; else an error naming the first tensor that
 * differs (step: the step being checkpointed, for the message). */
vla_status vla_fp8_state_agree(vla_comm *comm, const vla_policy *p, int64_t step);
/* Rank 0: the state into the checkpoint being written. */
vla_status vla_fp8_state_write(const vla_policy *p, vla_ckpt_writer *w);
/* Resuming from checkpoint directory ck_dir: its state when this run is
 * FP8 and it has one; else a note (rank 0) of why none is used. */
vla_status vla_fp8_state_load(vla_policy *p, const char *ck_dir, int rank);

#endif
