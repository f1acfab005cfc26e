// SAC's device work (device_ops.h, sac_kernels.h): sampling the squashed Gaussian, the critics'
// inputs, and the losses of the critics, the actor and the temperature.
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/off_policy/sac_kernels.h"

namespace cugym::agent {

class SacOps {
 public:
  virtual ~SacOps() = default;
  // A draw for every row of `lanes` lanes of `rows` rows from the actor's outputs (SacSampleRow;
  // `random`: uniform in the Box).
  virtual void SacSamplePolicy(const SacHead& head, const float* outputs, int64_t lanes, int64_t rows,
                               const SacKey& key, bool random, const SacSample& out) = 0;
  // The critics' input rows [observation, action] (SacJoinRow).
  virtual void SacJoin(const float* obs, int obs_dim, const float* actions, int dims, int64_t rows, float* out) = 0;
  // The twin critics' loss gradients and statistics (SacCriticRow, then SacCriticReduce per lane).
  virtual void SacCriticLoss(const SacCriticBatch& batch) = 0;
  // Which critic each row's actor loss reads (SacActorPickRow), before the critics' backward.
  virtual void SacActorPick(const SacActorBatch& batch) = 0;
  // The actor's output gradients (SacActorGradRow), then each lane's statistics and the
  // temperature's gradient (SacActorReduce), after the critics' backward.
  virtual void SacActorGrads(const SacHead& head, const SacActorBatch& batch) = 0;
};

}  // namespace cugym::agent
