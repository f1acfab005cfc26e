// PPO's own device work (device_ops.h): its loss (ppo_loss_kernels.h) and the joint gradient
// clipping of its actor and critic (ppo_rollout_kernels.h).
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/common/policy_math.h"
#include "agents/on_policy/ppo_loss_kernels.h"
#include "agents/on_policy/ppo_rollout_kernels.h"

namespace cugym::agent {

class PpoOps {
 public:
  virtual ~PpoOps() = default;
  // Each of `replicas` replicas' gradients in `spans` clipped by their joint norm (JointGradPartial
  // into partials [replicas 32], JointGradNorm into norms [replicas], then ScaleGradElement);
  // `scale` is scratch [replicas].
  virtual void ClipJointGradNorm(const GradSpans& spans, int64_t replicas, double max_norm, double* partials,
                                 float* norms, float* scale) = 0;
  // The loss of every lane's minibatch, its gradients and statistics (PpoBatch): the advantages'
  // moments per lane (PpoAdvantageMoments), each row's terms and gradients (PpoRowLoss), then the
  // per-lane sums in row order (PpoLaneReduce).
  virtual void PpoLoss(const PolicyHead& head, const PpoBatch& batch, const PpoLossConfig& config) = 0;
};

}  // namespace cugym::agent
