// The PPO agent's rollout minibatches and its joint gradient clipping, written once as CUGYM_HD
// functions (AgentOps::GatherPpoMinibatch and ClipJointGradNorm run them). Lanes as in
// ppo_kernels.h: a rollout step of E = lanes x n envs, lane l owning envs l n .. l n + n - 1, and
// minibatches of lanes x b rows, lane l's rows l b .. l b + b - 1; each lane reads only its own.
#pragma once

#include <cmath>
#include <cstdint>

#include "agents/exploration_kernels.h"
#include "agents/pqn_kernels.h"
#include "core/macros.h"

namespace cugym::agent {

// A PPO rollout: `steps` vector steps of `envs` envs, step-major (element (t, e) at t envs + e).
struct PpoRollout {
  const float* obs = nullptr;         // [steps][envs][obs_dim] what the actor saw (normalized where it is)
  const int32_t* actions = nullptr;   // categorical: [steps][envs]
  const float* samples = nullptr;     // Gaussian: [steps][envs][action_dim] the samples u
  const float* log_probs = nullptr;   // [steps][envs] log pi_old(action)
  const float* values = nullptr;      // [steps][envs] V(s_t) in the rollout
  const float* advantages = nullptr;  // [steps][envs] GAE's
  const float* returns = nullptr;     // [steps][envs] the critic's targets
  int64_t steps = 0, envs = 0, obs_dim = 0, action_dim = 0, lanes = 1;  // action_dim 0: categorical
};

// One minibatch of every lane, gathered contiguous for the networks and the loss (PpoBatch).
struct PpoMinibatch {
  float* obs = nullptr;        // [lanes b][obs_dim]
  int32_t* actions = nullptr;  // categorical: [lanes b]
  float* samples = nullptr;    // Gaussian: [lanes b][action_dim]
  float* log_probs = nullptr;  // [lanes b]
  float* values = nullptr;     // [lanes b]
  float* advantages = nullptr;
  float* returns = nullptr;
};

// Element e of the lanes' minibatches, `size` rows per lane: row e % size of lane l's minibatch
// that starts at position `first` of its epoch's permutation of its own rollout (keyed by seeds[l],
// as PQN's GatherRolloutRow), so that each lane gathers what its solo run gathers.
CUGYM_HD inline void GatherPpoRow(const PpoRollout& r, const PpoMinibatch& b, int64_t first, int64_t size,
                                  const StepCounters* counters, const uint64_t* seeds, int64_t epoch, int64_t e) {
  const int64_t lane = e / size, j = e % size, n = r.envs / r.lanes;
  const uint32_t rows = static_cast<uint32_t>(r.steps * n);
  const uint32_t key = EpochKey(seeds[lane], counters, epoch);
  const int64_t q = ShuffledIndex(static_cast<uint32_t>(first + j), rows, key);
  const int64_t row = (q / n) * r.envs + lane * n + q % n;
  for (int64_t k = 0; k < r.obs_dim; ++k) b.obs[e * r.obs_dim + k] = r.obs[row * r.obs_dim + k];
  if (r.action_dim > 0) {
    for (int64_t k = 0; k < r.action_dim; ++k) b.samples[e * r.action_dim + k] = r.samples[row * r.action_dim + k];
  } else {
    b.actions[e] = r.actions[row];
  }
  b.log_probs[e] = r.log_probs[row];
  b.values[e] = r.values[row];
  b.advantages[e] = r.advantages[row];
  b.returns[e] = r.returns[row];
}

// Up to three gradient buffers clipped together, as torch.nn.utils.clip_grad_norm_ over the
// actor's, the critic's and log_std's parameters: replica r's part of span s is count[s] floats at
// grads[s] + r stride[s].
struct GradSpans {
  static constexpr int kMax = 3;
  float* grads[kMax] = {nullptr, nullptr, nullptr};
  int64_t stride[kMax] = {0, 0, 0};
  int64_t count[kMax] = {0, 0, 0};
  int num = 0;
};

// Replica r's joint norm over every span (squares summed in order, in double) into norms[r], and
// the factor its gradients are scaled by into scale[r]: max_norm / (norm + 1e-6) where that is
// below 1 (PyTorch's clip_coef), else 1.
CUGYM_HD inline void JointGradNorm(const GradSpans& s, double max_norm, float* norms, float* scale, int64_t r) {
  double sum_sq = 0.0;
  for (int k = 0; k < s.num; ++k) {
    const float* g = s.grads[k] + r * s.stride[k];
    for (int64_t i = 0; i < s.count[k]; ++i) sum_sq += static_cast<double>(g[i]) * g[i];
  }
  const double norm = sqrt(sum_sq);
  const double coef = max_norm / (norm + 1e-6);
  norms[r] = static_cast<float>(norm);
  scale[r] = coef < 1.0 ? static_cast<float>(coef) : 1.0f;
}

// Element e of span k's replicas (e = r count[k] + i) times its replica's scale.
CUGYM_HD inline void ScaleGradElement(const GradSpans& s, int k, const float* scale, int64_t e) {
  const int64_t r = e / s.count[k], i = e % s.count[k];
  s.grads[k][r * s.stride[k] + i] *= scale[r];
}

}  // namespace cugym::agent
