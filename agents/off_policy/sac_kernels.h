// The per-row work of SAC's loop that is not the networks' (Haarnoja, Zhou, Abbeel and Levine, "Soft
// Actor-Critic", ICML 2018; Haarnoja et al., "Soft Actor-Critic Algorithms and Applications", 2018,
// for the learned temperature; as CleanRL's sac_continuous_action.py trains it): the squashed
// Gaussian policy's draws and log-probabilities, the critics' inputs, the soft Bellman targets of the
// twin critics, and the reparameterized actor loss with the temperature's gradient. Written once as
// CUGYM_HD functions; agent_ops_cpu.cpp and agent_ops_cuda.cu run them (docs/sac.md, "Kernels").
//
// Lanes as policy_math.h keeps them: lane l's rows are l rows .. l rows + rows - 1, its draws are
// keyed by its own seed, and its sums run in row order in double, so a lane gets its solo run's bits.
#pragma once

#include <cstdint>

#include "agents/common/policy_math.h"

namespace cugym::agent {

// CleanRL's bounds of the actor's log standard deviation: the network's second half of outputs x
// goes through log_std = kSacLogStdMin + (kSacLogStdMax - kSacLogStdMin) (tanh(x) + 1) / 2.
inline constexpr double kSacLogStdMin = -5.0, kSacLogStdMax = 2.0;

// The squashed Gaussian policy: the actor's row holds `dims` means m then `dims` raw log-stds x;
// u = m + exp(log_std(x)) z with z ~ N(0, I), and the env gets a = scale tanh(u) + bias, scale and
// bias the Box's half-width and middle. Its log-probability (of a, the change of variables from u):
//   log pi(a) = sum_k -z_k^2 / 2 - log_std_k - ln(2 pi) / 2 - log(scale_k (1 - tanh(u_k)^2) + 1e-6),
// the 1e-6 CleanRL's (and the original implementation's) guard against log 0.
struct SacHead {
  int dims = 0;
  const float* low = nullptr;  // [dims] the Box's bounds, device arrays
  const float* high = nullptr;
};

CUGYM_HD inline double SacLogStd(float raw) {
  return kSacLogStdMin + 0.5 * (kSacLogStdMax - kSacLogStdMin) * (PolicyTanh(raw) + 1.0);
}

// What a draw writes per row.
struct SacSample {
  float* actions = nullptr;    // [rows][dims] a, in the Box
  float* log_probs = nullptr;  // [rows] log pi(a); nullptr: not written
  float* noise = nullptr;      // [rows][dims] z, for the actor's backward; nullptr: not written
  // Acting with temporally correlated noise (noise_correlation rho > 0): each env's z is an AR(1)
  // process, z_t = rho z_{t-1} + sqrt(1 - rho^2) eps_t (an Ornstein-Uhlenbeck process sampled at
  // unit steps, N(0, 1) at every step as white noise is), kept here between steps; the random
  // actions before learning_starts are then scale tanh(z_t) + bias. nullptr: white noise.
  float* noise_state = nullptr;  // [rows][dims]
  double rho = 0.0;
};

// z_t of row e's dimension m from the white draw eps (SacSample::noise_state), or eps itself.
CUGYM_HD inline double SacActingNoise(const SacSample& out, int dims, int64_t e, int m, double eps) {
  if (out.noise_state == nullptr) return eps;
  float* state = out.noise_state + e * dims + m;
  const double z = out.rho * static_cast<double>(*state) + sqrt(1.0 - out.rho * out.rho) * eps;
  *state = static_cast<float>(z);
  return z;
}

// How a draw is keyed: Philox blocks (PolicyBlock's counter with SAC's own tag) of lane l's seed, at
// a step read on the device (the vector step for acting, the replay memory's draw count for an
// update), the row within the lane, and the pair of dimensions; `tag` tells apart the draws made at
// one step (acting, the targets' next actions, each of the actor's updates).
struct SacKey {
  const uint64_t* seeds = nullptr;         // [lanes]
  const StepCounters* counters = nullptr;  // step = counters->vector_steps, or ...
  const uint32_t* draws = nullptr;         // ... step = *draws
  uint32_t tag = 0;
};

CUGYM_HD inline int64_t SacStep(const SacKey& key) {
  return key.counters != nullptr ? key.counters->vector_steps : static_cast<int64_t>(*key.draws);
}

// Standard normals 2 pair and 2 pair + 1 of (seed, step, row, tag), by Box-Muller as NormalPair.
CUGYM_HD inline void SacNormalPair(uint64_t seed, int64_t step, int64_t row, uint32_t pair, uint32_t tag, double* z0,
                                   double* z1) {
  const uint64_t s = static_cast<uint64_t>(step);
  const U32x4 counter{{pair, static_cast<uint32_t>(row), static_cast<uint32_t>(s),
                       static_cast<uint32_t>(s >> 32) ^ (0x53414300u + tag) /* "SAC" and the tag */}};
  BoxMuller(Philox4x32(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)), z0, z1);
}

// Row e of `lanes` lanes of `rows` rows: a draw from the policy of the actor's outputs row e
// (`random`: uniform in the Box, the actions before learning_starts, with log-probability 0; with
// a noise state, scale tanh(z) + bias).
CUGYM_HD inline void SacSampleRow(const SacHead& head, const float* outputs, int64_t rows, const SacKey& key,
                                  bool random, const SacSample& out, int64_t e) {
  const int64_t lane = e / rows, row = e - lane * rows;
  const uint64_t seed = key.seeds[lane];
  const int64_t step = SacStep(key);
  const int dims = head.dims;
  if (random && out.noise_state != nullptr) {
    for (int k = 0; k < dims; k += 2) {
      double z[2] = {0.0, 0.0};
      SacNormalPair(seed, step, row, static_cast<uint32_t>(k / 2), key.tag, &z[0], &z[1]);
      for (int m = k; m < k + 2 && m < dims; ++m) {
        const double low = head.low[m], high = head.high[m];
        const double zm = SacActingNoise(out, dims, e, m, z[m - k]);
        out.actions[e * dims + m] = static_cast<float>(0.5 * (high - low) * PolicyTanh(zm) + 0.5 * (high + low));
      }
    }
    if (out.log_probs != nullptr) out.log_probs[e] = 0.0f;
    return;
  }
  if (random) {
    for (int m = 0; m < dims; ++m) {
      const U32x4 bits = Philox4x32(U32x4{{static_cast<uint32_t>(m), static_cast<uint32_t>(row),
                                           static_cast<uint32_t>(static_cast<uint64_t>(step)),
                                           static_cast<uint32_t>(static_cast<uint64_t>(step) >> 32) ^ 0x52414e44u}},
                                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));  // "RAND"
      const double low = head.low[m], high = head.high[m];
      out.actions[e * dims + m] = static_cast<float>(low + UnitFromBits(bits.v[0]) * (high - low));
    }
    if (out.log_probs != nullptr) out.log_probs[e] = 0.0f;
    return;
  }
  const float* mean = outputs + e * 2 * dims;
  const float* raw = mean + dims;
  double log_prob = 0.0;
  for (int k = 0; k < dims; k += 2) {
    double z[2] = {0.0, 0.0};
    SacNormalPair(seed, step, row, static_cast<uint32_t>(k / 2), key.tag, &z[0], &z[1]);
    for (int m = k; m < k + 2 && m < dims; ++m) {
      const double low = head.low[m], high = head.high[m];
      const double scale = 0.5 * (high - low), bias = 0.5 * (high + low);
      // z as the noise array keeps it, so the actor's backward sees this very u.
      const double zm = static_cast<float>(SacActingNoise(out, dims, e, m, z[m - k]));
      const double log_std = SacLogStd(raw[m]);
      const double u = static_cast<double>(mean[m]) + PolicyExp(log_std) * zm;
      const double t = PolicyTanh(u);
      out.actions[e * dims + m] = static_cast<float>(scale * t + bias);
      if (out.noise != nullptr) out.noise[e * dims + m] = static_cast<float>(zm);
      log_prob += -0.5 * zm * zm - log_std - kHalfLogTwoPi - PolicyLog(scale * (1.0 - t * t) + 1e-6);
    }
  }
  if (out.log_probs != nullptr) out.log_probs[e] = static_cast<float>(log_prob);
}

// Row r of the critics' input: the observation's obs_dim floats, then the action's dims.
CUGYM_HD inline void SacJoinRow(const float* obs, int obs_dim, const float* actions, int dims, float* out, int64_t r) {
  float* to = out + r * (obs_dim + dims);
  for (int k = 0; k < obs_dim; ++k) to[k] = obs[r * obs_dim + k];
  for (int k = 0; k < dims; ++k) to[obs_dim + k] = actions[r * dims + k];
}

// The per-lane statistics, in this order in the stats arrays ([lanes][kSacStats]).
enum SacStat : int {
  kSacQf1Loss = 0,  // mean (Q1 - y)^2
  kSacQf2Loss,      // mean (Q2 - y)^2
  kSacQf1Values,    // mean Q1
  kSacActorLoss,    // mean (alpha log pi - min Q)
  kSacAlpha,        // exp(log_alpha) the update used
  kSacAlphaLoss,    // -alpha mean(log pi + target_entropy)
  kSacEntropy,      // -mean log pi
  kSacStats
};

// One critic update's minibatch of `lanes` lanes of `rows` rows (the replay memory's), with the
// twin critics' values and the target critics' values at the next observation and action.
struct SacCriticBatch {
  const float* rewards = nullptr;         // [lanes rows]
  const float* bootstrap = nullptr;       // [lanes rows] gamma, or 0 after a termination
  const float* next_log_probs = nullptr;  // [lanes rows] log pi(a' | s')
  const float* target_q1 = nullptr;       // [lanes rows] Q1'(s', a')
  const float* target_q2 = nullptr;
  const float* q1 = nullptr;  // [lanes rows] Q1(s, a)
  const float* q2 = nullptr;
  const float* log_alpha = nullptr;  // [lanes]
  float* grad_q1 = nullptr;          // [lanes rows] dL/dQ1
  float* grad_q2 = nullptr;
  float* stats = nullptr;       // [lanes][kSacStats]: the critic's entries
  double* row_terms = nullptr;  // scratch [lanes rows][3]
  int64_t lanes = 1, rows = 0;
};

// Row j: y = r + bootstrap (min(Q1', Q2') - alpha log pi(a' | s')), L = mean (Q1 - y)^2 + mean (Q2 - y)^2
// (CleanRL's qf1_loss + qf2_loss), so dL/dQi = 2 (Qi - y) / rows.
CUGYM_HD inline void SacCriticRow(const SacCriticBatch& b, int64_t j) {
  const int64_t lane = j / b.rows;
  const double alpha = PolicyExp(b.log_alpha[lane]);
  const double q1t = b.target_q1[j], q2t = b.target_q2[j];
  const double soft = (q1t < q2t ? q1t : q2t) - alpha * static_cast<double>(b.next_log_probs[j]);
  const double y = static_cast<double>(b.rewards[j]) + static_cast<double>(b.bootstrap[j]) * soft;
  const double d1 = static_cast<double>(b.q1[j]) - y, d2 = static_cast<double>(b.q2[j]) - y;
  const double inv = 1.0 / static_cast<double>(b.rows);
  b.grad_q1[j] = static_cast<float>(2.0 * d1 * inv);
  b.grad_q2[j] = static_cast<float>(2.0 * d2 * inv);
  double* terms = b.row_terms + j * 3;
  terms[0] = d1 * d1;
  terms[1] = d2 * d2;
  terms[2] = b.q1[j];
}

// Lane l: the means of its rows' terms, in row order.
CUGYM_HD inline void SacCriticReduce(const SacCriticBatch& b, int64_t lane) {
  double sums[3] = {0.0, 0.0, 0.0};
  for (int64_t j = lane * b.rows; j < (lane + 1) * b.rows; ++j)
    for (int s = 0; s < 3; ++s) sums[s] += b.row_terms[j * 3 + s];
  float* stats = b.stats + lane * kSacStats;
  for (int s = 0; s < 3; ++s) stats[kSacQf1Loss + s] = static_cast<float>(sums[s] / static_cast<double>(b.rows));
}

// One actor update's minibatch: the actor's outputs at the observations, the reparameterized draw
// taken from them (SacSampleRow with noise), the twin critics at (s, a) and their gradients with
// respect to a.
struct SacActorBatch {
  const float* outputs = nullptr;    // [lanes rows][2 dims] the actor's means and raw log-stds
  const float* noise = nullptr;      // [lanes rows][dims] z
  const float* log_probs = nullptr;  // [lanes rows] log pi(a)
  const float* q1 = nullptr;         // [lanes rows] Q1(s, a)
  const float* q2 = nullptr;
  const float* q1_input_grad = nullptr;  // [lanes rows][obs_dim + dims] dQ1-term/d(s, a) from the backward
  const float* q2_input_grad = nullptr;
  const float* log_alpha = nullptr;  // [lanes]
  float* grad_q1 = nullptr;          // [lanes rows] what the critics' backward starts from
  float* grad_q2 = nullptr;
  float* grad_outputs = nullptr;    // [lanes rows][2 dims] dL/d(actor outputs)
  float* grad_log_alpha = nullptr;  // [lanes] d(alpha loss)/dlog_alpha
  float* stats = nullptr;           // [lanes][kSacStats]: the actor's entries
  double* row_terms = nullptr;      // scratch [lanes rows][2]
  int obs_dim = 0;
  double target_entropy = 0.0;
  int64_t lanes = 1, rows = 0;
};

// Pass 1, row j: L_pi = mean(alpha log pi(a) - min(Q1, Q2)(s, a)); the smaller critic's output
// gradient is -1 / rows (the first on a tie), the other's 0, so their backward gives d(-min Q)/da.
CUGYM_HD inline void SacActorPickRow(const SacActorBatch& b, int64_t j) {
  const double q1 = b.q1[j], q2 = b.q2[j];
  const float g = static_cast<float>(-1.0 / static_cast<double>(b.rows));
  b.grad_q1[j] = q1 <= q2 ? g : 0.0f;
  b.grad_q2[j] = q1 <= q2 ? 0.0f : g;
  const double alpha = PolicyExp(b.log_alpha[j / b.rows]);
  b.row_terms[j * 2] = alpha * static_cast<double>(b.log_probs[j]) - (q1 <= q2 ? q1 : q2);
  b.row_terms[j * 2 + 1] = b.log_probs[j];
}

// Pass 2, row j: the actor's output gradients through the reparameterization. With t = tanh(u),
// s the Box's half-width, sigma = exp(log_std) and G = dL/da (the critics' input gradient's action
// part, the 1 / rows in it):
//   dlog pi/du   = 2 t s (1 - t^2) / (s (1 - t^2) + 1e-6)      (only the squashing term moves with u)
//   dL/dm        = alpha / rows dlog pi/du + G s (1 - t^2)
//   dL/dlog_std  = alpha / rows (dlog pi/du sigma z - 1) + G s (1 - t^2) sigma z
//   dL/draw      = dL/dlog_std (kSacLogStdMax - kSacLogStdMin) (1 - tanh(raw)^2) / 2
// (z is the draw's noise: u - m = sigma z, so -z^2 / 2 does not move).
CUGYM_HD inline void SacActorGradRow(const SacHead& head, const SacActorBatch& b, int64_t j) {
  const int dims = head.dims, in = b.obs_dim + dims;
  const double alpha = PolicyExp(b.log_alpha[j / b.rows]), inv = 1.0 / static_cast<double>(b.rows);
  const float* mean = b.outputs + j * 2 * dims;
  const float* raw = mean + dims;
  float* grad = b.grad_outputs + j * 2 * dims;
  for (int k = 0; k < dims; ++k) {
    const double scale = 0.5 * (static_cast<double>(head.high[k]) - static_cast<double>(head.low[k]));
    const double log_std = SacLogStd(raw[k]), sigma = PolicyExp(log_std), z = b.noise[j * dims + k];
    const double t = PolicyTanh(static_cast<double>(mean[k]) + sigma * z);
    const double squash = scale * (1.0 - t * t);
    const double dlogp_du = 2.0 * t * squash / (squash + 1e-6);
    const double g = static_cast<double>(b.q1_input_grad[j * in + b.obs_dim + k]) +
                     static_cast<double>(b.q2_input_grad[j * in + b.obs_dim + k]);
    grad[k] = static_cast<float>(alpha * inv * dlogp_du + g * squash);
    const double d_log_std = alpha * inv * (dlogp_du * sigma * z - 1.0) + g * squash * sigma * z;
    const double tr = PolicyTanh(raw[k]);
    grad[dims + k] = static_cast<float>(d_log_std * 0.5 * (kSacLogStdMax - kSacLogStdMin) * (1.0 - tr * tr));
  }
}

// Pass 3, lane l: the actor loss, the temperature's loss -alpha mean(log pi + target_entropy)
// (CleanRL's, on the actor update's draws) and its gradient with respect to log_alpha, which is that
// loss itself; the entropy estimate -mean log pi.
CUGYM_HD inline void SacActorReduce(const SacActorBatch& b, int64_t lane) {
  double loss = 0.0, log_prob = 0.0;
  for (int64_t j = lane * b.rows; j < (lane + 1) * b.rows; ++j) {
    loss += b.row_terms[j * 2];
    log_prob += b.row_terms[j * 2 + 1];
  }
  const double inv = 1.0 / static_cast<double>(b.rows), alpha = PolicyExp(b.log_alpha[lane]);
  const double alpha_loss = -alpha * (log_prob * inv + b.target_entropy);
  float* stats = b.stats + lane * kSacStats;
  stats[kSacActorLoss] = static_cast<float>(loss * inv);
  stats[kSacAlpha] = static_cast<float>(alpha);
  stats[kSacAlphaLoss] = static_cast<float>(alpha_loss);
  stats[kSacEntropy] = static_cast<float>(-log_prob * inv);
  if (b.grad_log_alpha != nullptr) b.grad_log_alpha[lane] = static_cast<float>(alpha_loss);
}

}  // namespace cugym::agent
