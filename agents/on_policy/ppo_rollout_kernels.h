// The PPO agent's rollout work: GAE(lambda) over it and the joint gradient clipping, written once
// as CUGYM_HD functions (RolloutOps::GaeAdvantages and PpoOps::ClipJointGradNorm run them; the minibatch
// gather is the on-policy family's, rollout_kernels.h). Lanes as in policy_math.h: a rollout step of E = lanes x n
// envs, lane l owning envs l n
// .. l n + n - 1, and minibatches of lanes x b rows, lane l's rows l b .. l b + b - 1; each lane reads only its own.
#pragma once

#include <cmath>
#include <cstdint>

#include "agents/common/exploration_kernels.h"
#include "agents/on_policy/rollout_kernels.h"
#include "core/macros.h"

namespace cugym::agent {

// ---------------------------------------------------------------------------------------------
// GAE(lambda) (Schulman, Moritz, Levine, Jordan and Abbeel, "High-Dimensional Continuous Control
// Using Generalized Advantage Estimation", ICLR 2016).

// A PPO rollout's columns for GAE: `steps` vector steps of `envs` envs, step-major (element
// (t, e) at t envs + e), as RolloutArrays.
struct GaeArrays {
  const float* rewards = nullptr;       // [steps][envs] (scaled, where the rewards are normalized)
  const uint8_t* terminated = nullptr;  // [steps][envs]
  const uint8_t* truncated = nullptr;   // [steps][envs]
  const float* values = nullptr;        // [steps][envs] V(s_t), the observation the action was taken at
  const float* next_values = nullptr;   // [steps][envs] V of the step's next observation: the final one where done
  float* advantages = nullptr;          // [steps][envs] A_t
  float* returns = nullptr;             // [steps][envs] A_t + V(s_t), the critic's targets
  int64_t steps = 0, envs = 0;
};

// Env e's advantages, backwards from the last step (A_T = 0):
//   delta_t = r_t + gamma (1 - terminated_t) V(next_t) - V(s_t),
//   A_t     = delta_t + gamma lambda (1 - done_t) A_{t+1},   done = terminated or truncated,
//   R_t     = A_t + V(s_t).
// V(next_t) is the value of the episode's final observation where it ended, so a truncation (a
// time limit) bootstraps from it and a termination does not; either way the sum stops there,
// as the next step belongs to a new episode. The last step bootstraps from its next
// observation's value. A is carried in double, as QLambdaColumn carries G.
CUGYM_HD inline void GaeColumn(const GaeArrays& r, double gamma, double lambda, int64_t e) {
  double advantage = 0.0;
  for (int64_t t = r.steps - 1; t >= 0; --t) {
    const int64_t at = t * r.envs + e;
    const double value = r.values[at];
    const double bootstrap = r.terminated[at] ? 0.0 : gamma * static_cast<double>(r.next_values[at]);
    const double delta = static_cast<double>(r.rewards[at]) + bootstrap - value;
    const bool done = (r.terminated[at] | r.truncated[at]) != 0;
    advantage = done ? delta : delta + gamma * lambda * advantage;
    r.advantages[at] = static_cast<float>(advantage);
    r.returns[at] = static_cast<float>(advantage + value);
  }
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

// The joint norm's sum of squares runs in an order 32 threads can share: element e of a replica's
// spans joined end to end goes to partial e mod 32 (each partial summed in element order, in
// double), and the 32 partials are added as a tree (p[j] += p[j + w] for w = 16, 8, 4, 2, 1). The
// CPU runs the same two functions, so both back ends give the same bits; on CUDA a replica is 32
// threads, not one (at 1,024 replicas of ~9.2k gradients, 32 warps were the whole GPU's work).
inline constexpr int kGradNormPartials = 32;

// Partial j of replica r (t = r 32 + j) into partials[t].
CUGYM_HD inline void JointGradPartial(const GradSpans& s, double* partials, int64_t t) {
  const int64_t r = t / kGradNormPartials, j = t % kGradNormPartials;
  double sum_sq = 0.0;
  int64_t base = 0;  // elements of the spans before span k
  for (int k = 0; k < s.num; ++k) {
    const float* g = s.grads[k] + r * s.stride[k];
    for (int64_t i = (j - base % kGradNormPartials + kGradNormPartials) % kGradNormPartials; i < s.count[k];
         i += kGradNormPartials)
      sum_sq += static_cast<double>(g[i]) * g[i];
    base += s.count[k];
  }
  partials[t] = sum_sq;
}

// Replica r's joint norm from its partials into norms[r], and the factor its gradients are scaled
// by into scale[r]: max_norm / (norm + 1e-6) where that is below 1 (PyTorch's clip_coef), else 1.
CUGYM_HD inline void JointGradNorm(const double* partials, double max_norm, float* norms, float* scale, int64_t r) {
  double p[kGradNormPartials];
  for (int j = 0; j < kGradNormPartials; ++j) p[j] = partials[r * kGradNormPartials + j];
  for (int w = kGradNormPartials / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) p[j] += p[j + w];
  const double norm = sqrt(p[0]);
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
