// The per-element work of the PQN loop that is not the network's or the on-policy family's
// (rollout_kernels.h): the Q(lambda) targets computed backwards over each env's column, and each
// lane's next observations staged for valuing. Written once as CUGYM_HD functions;
// agent_ops_cpu.cpp and agent_ops_cuda.cu run them.
#pragma once

#include <cstdint>

#include "agents/on_policy/rollout_kernels.h"
#include "core/macros.h"

namespace cugym::agent {

// Env i's Q(lambda) targets (Peng's Q(lambda), as CleanRL's pqn.py), backwards from the last step:
//   G_t = r_t                                           where the episode terminated at t,
//   G_t = r_t + gamma * V_t                             where it was truncated, and at t = T - 1,
//   G_t = r_t + gamma * (lambda * G_{t+1} + (1 - lambda) * V_t)  otherwise,
// with r_t the reward times reward_scale and V_t = max_a Q(next_obs_t, a). Truncation bootstraps
// from the final observation's value (the reference implementations treat it as termination).
// In double, with FMA contraction off (cugym_strict_fp): the same bits on every back end.
CUGYM_HD inline void QLambdaColumn(const RolloutArrays& r, double gamma, double lambda, double reward_scale,
                                   int64_t i) {
  double g = 0.0;
  for (int64_t t = r.steps - 1; t >= 0; --t) {
    const int64_t at = t * r.envs + i;
    const double reward = static_cast<double>(r.rewards[at]) * reward_scale;
    const double value = r.next_values[at];
    if (r.terminated[at]) {
      g = reward;
    } else if (r.truncated[at] || t == r.steps - 1) {
      g = reward + gamma * value;
    } else {
      g = reward + gamma * (lambda * g + (1.0 - lambda) * value);
    }
    r.targets[at] = static_cast<float>(g);
  }
}

// Element e of the lanes' next observations staged for valuing: rows first.. first + count - 1
// of each lane's own rollout, lane l's at l count.. (the replicated network's layout).
CUGYM_HD inline void StageNextObsRow(const RolloutArrays& r, int64_t first, int64_t count, float* staged, int64_t e) {
  const int64_t row = LaneRolloutRow(r, e / count, first + e % count);
  const float* src = r.next_obs + row * r.obs_dim;
  float* dst = staged + e * r.obs_dim;
  for (int64_t k = 0; k < r.obs_dim; ++k) dst[k] = src[k];
}

// The value of staged row e back to its rollout row.
CUGYM_HD inline void UnstageValue(const RolloutArrays& r, int64_t first, int64_t count, const float* values,
                                  int64_t e) {
  r.next_values[LaneRolloutRow(r, e / count, first + e % count)] = values[e];
}

}  // namespace cugym::agent
