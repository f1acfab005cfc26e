// The per-element work of the PPO loop that is not the network's: GAE(lambda) over each env's
// column of a rollout, the categorical and diagonal Gaussian policy heads (sampling, log-
// probabilities, entropies), the clipped PPO loss with its gradients with respect to the
// network's outputs, and the running observation and reward normalizers. Written once as
// CUGYM_HD functions; agent_ops_cpu.cpp and agent_ops_cuda.cu run them (docs/ppo.md, "Kernels").
//
// Lanes (agent.h): a rollout step of E = lanes x n envs, lane l owning envs l n .. l n + n - 1,
// and minibatches of lanes x b rows, lane l's rows l b .. l b + b - 1. Nothing of lane l reads
// another lane's data, its random draws are keyed by its own seed and its envs' indices within
// the lane, and every sum over a lane's rows runs in row order in double: each lane gets the bits
// its solo run gets, on every back end.
//
// exp, log and tanh are cugym's own (PpoExp, PpoLog through core's Log2, PpoTanh), built of +, -,
// *, / and bit operations, not the libraries' (glibc's and CUDA's differ in the last bits), and
// sqrt and division are correctly rounded on both: with FMA contraction off (cugym_strict_fp) the
// CPU and the GPU agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "agents/exploration_kernels.h"
#include "core/fastmath.h"
#include "core/macros.h"
#include "core/rng.h"

namespace cugym::agent {

// ---------------------------------------------------------------------------------------------
// Elementary functions with the same bits on every back end.

// e^x to a few ulps: x = k ln 2 + r with |r| <= ln(2) / 2 (Cody and Waite: ln 2 in two parts, the
// first exact in 32 bits, so k times it is exact), e^r by its Taylor series to r^16 / 16! (the
// first term left out is below 1e-22), times 2^k built from its bits. Exp2 would take y = x log2(e)
// whose rounding grows with |x| (3e-14 at |x| = 700); this reduction does not. Results below the
// smallest normal double (x < -708) are 0, and x above 709 saturates at e^709: no subnormals, no
// infinity. NaN stays NaN.
CUGYM_HD inline double PpoExp(double x) {
  if (x != x) return x;
  if (x < -708.0) return 0.0;
  if (x > 709.0) x = 709.0;
  const double kf = x * 1.4426950408889634;  // log2(e)
  const int k = static_cast<int>(kf + (kf >= 0.0 ? 0.5 : -0.5));
  const double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  double e = 1.0;
  for (int j = 16; j >= 1; --j) e = 1.0 + r * e / static_cast<double>(j);
  const uint64_t scale_bits = static_cast<uint64_t>(k + 1023) << 52;  // k in [-1021, 1023]
  double scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return e * scale;
}

// ln x for a positive normal x, through Log2.
CUGYM_HD inline double PpoLog(double x) { return Log2(x) * 0.6931471805599453; }

// tanh x: (1 - e) / (1 + e) with e = e^(-2|x|), which loses relative precision as x nears 0
// (1 - e cancels); below |x| = 0.02 its Taylor series to x^11 (the first term left out is below
// 1e-22 of x there).
CUGYM_HD inline double PpoTanh(double x) {
  const double ax = x < 0.0 ? -x : x;
  double t;
  if (ax < 0.02) {
    const double x2 = ax * ax;
    t = ax * (1.0 + x2 * (-1.0 / 3.0 +
                          x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0 + x2 * (-1382.0 / 155925.0))))));
  } else if (ax > 20.0) {
    t = 1.0;  // 1 - tanh(20) is 8e-18, below half an ulp of 1
  } else {
    const double e = PpoExp(-2.0 * ax);
    t = (1.0 - e) / (1.0 + e);
  }
  return x < 0.0 ? -t : t;
}

// Clip (core/fastmath.h) in double.
CUGYM_HD inline double ClipDouble(double x, double low, double high) {
  x = x < low ? low : x;
  return x > high ? high : x;
}

constexpr double kHalfLogTwoPi = 0.91893853320467274178;  // 0.5 ln(2 pi)

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

// ---------------------------------------------------------------------------------------------
// Policy heads.

// What the actor's outputs are. Categorical: `out` logits per row, over the discrete actions.
// Diagonal Gaussian: `out` means per row and a state-independent log standard deviation per lane
// (a parameter, not an output of the network), u = mean + exp(log_std) z with z ~ N(0, I).
//
// PPO's default (CleanRL's ppo_continuous_action.py, "The 37 Implementation Details of PPO") is
// no squashing: the env gets u clipped to the Box (low, high), while the log-probability, and so
// the ratio, is of the unclipped u. With `squash` the env gets a = tanh(u), rescaled to the Box
// when low and high are given, and the log-probability is a's: u's minus sum_k log(1 - tanh(u_k)^2
// + 1e-6) (the constant log-determinant of the rescaling is left out: it cancels in the ratio).
// Either way the rollout keeps u, which the loss needs; the correction does not depend on the
// network, so it adds nothing to the gradients, and the entropy stays u's (a's has no closed form).
struct PolicyHead {
  int out = 0;  // the number of actions (categorical) or the action's dimensions (Gaussian)
  bool gaussian = false;
  const float* log_std = nullptr;  // Gaussian: [lanes][out], lane l's
  bool squash = false;             // Gaussian: a = tanh(u)
  const float* low = nullptr;      // Gaussian: [out] the Box's bounds, or nullptr for none
  const float* high = nullptr;
};

// The log-partition of a row of logits, computed stably: log p_j = x_j - max - log_sum, with
// log_sum = log sum_j exp(x_j - max) >= 0 (the largest term is 1).
struct LogSoftmaxRow {
  double max, log_sum;
};

CUGYM_HD inline LogSoftmaxRow CategoricalPartition(const float* logits, int num_actions) {
  double max = logits[0];
  for (int j = 1; j < num_actions; ++j) max = logits[j] > max ? static_cast<double>(logits[j]) : max;
  double sum = 0.0;
  for (int j = 0; j < num_actions; ++j) sum += PpoExp(static_cast<double>(logits[j]) - max);
  return LogSoftmaxRow{max, PpoLog(sum)};
}

CUGYM_HD inline double CategoricalLogProb(const float* logits, int num_actions, int32_t action) {
  const LogSoftmaxRow z = CategoricalPartition(logits, num_actions);
  return static_cast<double>(logits[action]) - z.max - z.log_sum;
}

// H = -sum_j p_j log p_j, given the row's partition.
CUGYM_HD inline double CategoricalEntropy(const float* logits, int num_actions, const LogSoftmaxRow& z) {
  double h = 0.0;
  for (int j = 0; j < num_actions; ++j) {
    const double log_p = static_cast<double>(logits[j]) - z.max - z.log_sum;
    h -= PpoExp(log_p) * log_p;
  }
  return h;
}

CUGYM_HD inline double CategoricalEntropy(const float* logits, int num_actions) {
  return CategoricalEntropy(logits, num_actions, CategoricalPartition(logits, num_actions));
}

// The action whose cumulative probability first exceeds u in [0, 1) (inverse CDF), summing
// exp(x_j - max) in order and comparing with u times their total: no division, and an action of
// probability 0 is never drawn.
CUGYM_HD inline int32_t CategoricalSample(const float* logits, int num_actions, double u) {
  double max = logits[0];
  for (int j = 1; j < num_actions; ++j) max = logits[j] > max ? static_cast<double>(logits[j]) : max;
  double total = 0.0;
  for (int j = 0; j < num_actions; ++j) total += PpoExp(static_cast<double>(logits[j]) - max);
  const double target = u * total;
  double cumulative = 0.0;
  for (int j = 0; j < num_actions; ++j) {
    cumulative += PpoExp(static_cast<double>(logits[j]) - max);
    if (target < cumulative) return j;
  }
  return num_actions - 1;  // not reached: u < 1 keeps the target below the total
}

// The first largest logit (evaluation's greedy action).
CUGYM_HD inline int32_t CategoricalArgmax(const float* logits, int num_actions) {
  int32_t best = 0;
  for (int j = 1; j < num_actions; ++j) best = logits[j] > logits[best] ? j : best;
  return best;
}

// grad_j = d(g_logp log p_a + g_entropy H) / dx_j = g_logp (1[j = a] - p_j) - g_entropy p_j (log p_j + H),
// given the row's partition and entropy.
CUGYM_HD inline void CategoricalBackward(const float* logits, int num_actions, int32_t action, const LogSoftmaxRow& z,
                                         double entropy, double g_logp, double g_entropy, float* grad) {
  for (int j = 0; j < num_actions; ++j) {
    const double log_p = static_cast<double>(logits[j]) - z.max - z.log_sum;
    const double p = PpoExp(log_p);
    const double own = j == action ? 1.0 : 0.0;
    grad[j] = static_cast<float>(g_logp * (own - p) - g_entropy * p * (log_p + entropy));
  }
}

// z = (u - mean) / exp(log_std): the standard normal behind sample u.
CUGYM_HD inline double GaussianZ(float u, float mean, float log_std) {
  return (static_cast<double>(u) - static_cast<double>(mean)) / PpoExp(log_std);
}

// -sum_k log(1 - tanh(u_k)^2 + 1e-6): what tanh squashing adds to u's log-probability.
CUGYM_HD inline double TanhCorrection(const float* u, int dims) {
  double c = 0.0;
  for (int k = 0; k < dims; ++k) {
    const double t = PpoTanh(u[k]);
    c -= PpoLog(1.0 - t * t + 1e-6);
  }
  return c;
}

// log N(u; mean, exp(log_std)^2 I) = sum_k -z_k^2 / 2 - log_std_k - ln(2 pi) / 2, plus
// TanhCorrection with `squash`.
CUGYM_HD inline double GaussianLogProb(const float* mean, const float* log_std, const float* u, int dims, bool squash) {
  double lp = 0.0;
  for (int k = 0; k < dims; ++k) {
    const double z = GaussianZ(u[k], mean[k], log_std[k]);
    lp += -0.5 * z * z - static_cast<double>(log_std[k]) - kHalfLogTwoPi;
  }
  return squash ? lp + TanhCorrection(u, dims) : lp;
}

// sum_k log_std_k + (1 + ln(2 pi)) / 2: the entropy of u (it does not depend on the mean).
CUGYM_HD inline double GaussianEntropy(const float* log_std, int dims) {
  double h = 0.0;
  for (int k = 0; k < dims; ++k) h += static_cast<double>(log_std[k]) + 0.5 + kHalfLogTwoPi;
  return h;
}

// Dimension k of the env's action for sample u (PolicyHead): clip(u, low, high), or with
// squashing tanh(u), rescaled to [low, high] when the Box is given.
CUGYM_HD inline float GaussianEnvAction(const PolicyHead& head, double u, int k) {
  if (head.squash) {
    const double a = PpoTanh(u);
    if (head.low == nullptr) return static_cast<float>(a);
    const double low = head.low[k], high = head.high[k];
    return static_cast<float>(low + (a + 1.0) * 0.5 * (high - low));
  }
  if (head.low == nullptr) return static_cast<float>(u);
  return static_cast<float>(ClipDouble(u, head.low[k], head.high[k]));
}

// ---------------------------------------------------------------------------------------------
// The policy's random draws: Philox4x32-10 (core/rng.h) keyed by the lane's seed, over the
// counter (block, env within the lane, vector step, a tag of PPO's own where the envs' Rng has
// "cugy"): every (seed, step, env, block) its own 128 bits, the same on every back end and for any
// number of envs or lanes. (A 32-bit StepKey per step, as exploration has, would likely give two
// of a run's first 2^16 steps the same draws; the step in the counter never repeats.)
CUGYM_HD inline U32x4 PolicyBlock(uint64_t seed, int64_t step, int64_t env, uint32_t block) {
  const uint64_t s = static_cast<uint64_t>(step);
  const U32x4 counter{{block, static_cast<uint32_t>(env), static_cast<uint32_t>(s),
                       static_cast<uint32_t>(s >> 32) ^ 0x50504f31u /* "PPO1" */}};
  return Philox4x32(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform in [0, 1) with 32 random bits.
CUGYM_HD inline double UnitFromBits(uint32_t bits) { return static_cast<double>(bits) * (1.0 / 4294967296.0); }

// The categorical draw of (seed, step, env): block 0's first word.
CUGYM_HD inline double PolicyUniform(uint64_t seed, int64_t step, int64_t env) {
  return UnitFromBits(PolicyBlock(seed, step, env, 0).v[0]);
}

// Standard normals 2 pair and 2 pair + 1 of (seed, step, env), by Box-Muller from block `pair`:
// r = sqrt(-2 ln u1) with u1 in (0, 1] (so |z| <= 6.7), angle 2 pi u2 through core's SinCos.
CUGYM_HD inline void NormalPair(uint64_t seed, int64_t step, int64_t env, uint32_t pair, double* z0, double* z1) {
  const U32x4 bits = PolicyBlock(seed, step, env, pair);
  const double u1 = (static_cast<double>(bits.v[0]) + 1.0) * (1.0 / 4294967296.0);
  const double radius = sqrt(-2.0 * PpoLog(u1));
  const float angle = static_cast<float>(6.283185307179586 * UnitFromBits(bits.v[1]));
  float s, c;
  SinCos(angle, &s, &c);
  *z0 = radius * static_cast<double>(c);
  *z1 = radius * static_cast<double>(s);
}

// What a rollout step's sampling writes.
struct PolicySample {
  int32_t* actions = nullptr;    // categorical: [E] the actions
  float* samples = nullptr;      // Gaussian: [E][out] u, what the loss takes the log-probability of
  float* env_actions = nullptr;  // Gaussian: [E][out] what the env gets (GaussianEnvAction); nullptr: not written
  float* log_probs = nullptr;    // [E] log pi(action) (of a, with squashing); nullptr: not written
};

// Row e of `lanes` lanes of n rows: its action drawn from the policy the actor's outputs row e
// (and lane e / n's log_std) give, with env e % n's draws of lane e / n's seed (seeds: a device
// array) at the vector step the device's counters hold, as the lane's solo run draws them;
// deterministic (evaluation): the argmax or the mean, with no draw (counters and seeds unread).
CUGYM_HD inline void SamplePolicyRow(const PolicyHead& head, const float* outputs, int64_t n,
                                     const StepCounters* counters, const uint64_t* seeds, bool deterministic,
                                     const PolicySample& out, int64_t e) {
  const int64_t lane = e / n, env = e - lane * n;
  const float* row = outputs + e * head.out;
  if (!head.gaussian) {
    const int32_t a = deterministic
                          ? CategoricalArgmax(row, head.out)
                          : CategoricalSample(row, head.out, PolicyUniform(seeds[lane], counters->vector_steps, env));
    out.actions[e] = a;
    if (out.log_probs != nullptr) out.log_probs[e] = static_cast<float>(CategoricalLogProb(row, head.out, a));
    return;
  }
  const float* log_std = head.log_std + lane * head.out;
  float* u = out.samples + e * head.out;
  for (int k = 0; k < head.out; k += 2) {
    double z0 = 0.0, z1 = 0.0;
    if (!deterministic) NormalPair(seeds[lane], counters->vector_steps, env, static_cast<uint32_t>(k / 2), &z0, &z1);
    for (int m = k; m < k + 2 && m < head.out; ++m) {
      const double z = m == k ? z0 : z1;
      u[m] = static_cast<float>(static_cast<double>(row[m]) + PpoExp(log_std[m]) * z);
      if (out.env_actions != nullptr) out.env_actions[e * head.out + m] = GaussianEnvAction(head, u[m], m);
    }
  }
  // Of the stored float u, as the loss will take it: the first epoch's ratio is exactly 1.
  if (out.log_probs != nullptr)
    out.log_probs[e] = static_cast<float>(GaussianLogProb(row, log_std, u, head.out, head.squash));
}

// ---------------------------------------------------------------------------------------------
// The PPO loss (Schulman, Wolski, Dhariwal, Radford and Klimov, "Proximal Policy Optimization
// Algorithms", 2017; Huang, Dossa, Raffin, Kanervisto and Wang, "The 37 Implementation Details
// of Proximal Policy Optimization", ICLR Blog Track 2022), per lane over its b rows:
//   A^   = (A - mean(A)) / (std(A) + 1e-8)    with normalize_advantages; std unbiased (n - 1), as
//                                            torch's .std() in CleanRL; 0 for b = 1
//   r    = exp(log pi(a) - old log pi(a))
//   L_pi = mean(max(-A^ r, -A^ clip(r, 1 - clip_coef, 1 + clip_coef)))
//   L_V  = 0.5 mean((V - R)^2), or with clip_value
//          0.5 mean(max((V - R)^2, (V_old + clip(V - V_old, -value_clip_coef, value_clip_coef) - R)^2))
//   L    = L_pi - ent_coef mean(H) + vf_coef L_V
// and its gradients with respect to the actor's outputs, the lane's log_std and the critic's
// values, for the networks' backward passes.
struct PpoLossConfig {
  double clip_coef = 0.2;
  bool clip_value = true;
  double value_clip_coef = 0.2;  // CleanRL clips the value by clip_coef
  bool normalize_advantages = true;
  double ent_coef = 0.01;
  double vf_coef = 0.5;
};

// The per-lane statistics, in this order in PpoBatch::stats.
enum PpoStat : int {
  kPpoPolicyLoss = 0,  // L_pi
  kPpoValueLoss,       // L_V
  kPpoEntropy,         // mean(H)
  kPpoApproxKl,        // mean((r - 1) - log r), Schulman's low-variance estimator of KL(old, new)
  kPpoOldApproxKl,     // mean(-log r)
  kPpoClipFraction,    // mean(|r - 1| > clip_coef)
  kPpoLoss,            // L
  kPpoStats
};

// A row's contributions to its lane's sums (PpoBatch::row_terms): the six means' terms, then
// dL/dlog pi(a) (the mean's 1 / b included).
constexpr int kPpoRowTerms = 7;
constexpr int kPpoRowGradLogProb = 6;

// One minibatch of `lanes` lanes of `rows` rows each (lane l's rows l rows .. l rows + rows - 1),
// with the actor's and the critic's outputs for it.
struct PpoBatch {
  const float* outputs = nullptr;        // [lanes rows][head.out] the actor's logits or means
  const int32_t* actions = nullptr;      // categorical: [lanes rows] the actions taken
  const float* samples = nullptr;        // Gaussian: [lanes rows][head.out] the samples u taken
  const float* old_log_probs = nullptr;  // [lanes rows] log pi_old(action), from the rollout
  const float* advantages = nullptr;     // [lanes rows] GAE's, not normalized
  const float* returns = nullptr;        // [lanes rows] the critic's targets
  const float* old_values = nullptr;     // [lanes rows] the critic's values in the rollout
  const float* values = nullptr;         // [lanes rows] the critic's values now
  float* grad_outputs = nullptr;         // [lanes rows][head.out] dL/d(logits or means)
  float* grad_log_std = nullptr;         // Gaussian: [lanes][head.out] dL/dlog_std, summed over the lane's rows
  float* grad_values = nullptr;          // [lanes rows] dL/dV
  float* stats = nullptr;                // [lanes][kPpoStats]
  double* moments = nullptr;             // scratch [lanes][2]: each lane's advantage mean and std
  double* row_terms = nullptr;           // scratch [lanes rows][kPpoRowTerms]
  int64_t lanes = 1, rows = 0;
};

// Pass 1, one thread per lane: the mean and the unbiased standard deviation of the lane's
// advantages, two passes in row order.
CUGYM_HD inline void PpoAdvantageMoments(const PpoBatch& b, int64_t lane) {
  const float* a = b.advantages + lane * b.rows;
  double sum = 0.0;
  for (int64_t i = 0; i < b.rows; ++i) sum += a[i];
  const double mean = sum / static_cast<double>(b.rows);
  double squares = 0.0;
  for (int64_t i = 0; i < b.rows; ++i) squares += (a[i] - mean) * (a[i] - mean);
  b.moments[2 * lane] = mean;
  b.moments[2 * lane + 1] = b.rows > 1 ? sqrt(squares / static_cast<double>(b.rows - 1)) : 0.0;
}

// Pass 2, one thread per row: the row's terms (PpoBatch::row_terms), its gradients with respect
// to its outputs and its value. Where max() ties the unclipped branch's derivative is taken: with
// r inside the clip range the branches agree, with A^ = 0 both are 0, and r exactly on the edge
// of the range is a kink either way.
CUGYM_HD inline void PpoRowLoss(const PolicyHead& head, const PpoBatch& b, const PpoLossConfig& c, int64_t row) {
  const int64_t lane = row / b.rows;
  const double inv_b = 1.0 / static_cast<double>(b.rows);
  const float* out = b.outputs + row * head.out;
  LogSoftmaxRow partition{0.0, 0.0};
  double log_prob, entropy;
  if (head.gaussian) {
    const float* log_std = head.log_std + lane * head.out;
    log_prob = GaussianLogProb(out, log_std, b.samples + row * head.out, head.out, head.squash);
    entropy = GaussianEntropy(log_std, head.out);
  } else {
    partition = CategoricalPartition(out, head.out);
    log_prob = static_cast<double>(out[b.actions[row]]) - partition.max - partition.log_sum;
    entropy = CategoricalEntropy(out, head.out, partition);
  }
  double advantage = b.advantages[row];
  if (c.normalize_advantages) advantage = (advantage - b.moments[2 * lane]) / (b.moments[2 * lane + 1] + 1e-8);
  const double log_ratio = log_prob - static_cast<double>(b.old_log_probs[row]);
  const double ratio = PpoExp(log_ratio);
  const double unclipped = -advantage * ratio;
  const double clipped = -advantage * ClipDouble(ratio, 1.0 - c.clip_coef, 1.0 + c.clip_coef);
  const bool unclipped_wins = unclipped >= clipped;                       // else the clipped branch, flat in r
  const double grad_log_prob = unclipped_wins ? unclipped * inv_b : 0.0;  // d(-A^ r)/dlog pi = -A^ r

  const double v = b.values[row], ret = b.returns[row];
  double value_loss = (v - ret) * (v - ret), grad_value = v - ret;
  if (c.clip_value) {
    const double old = b.old_values[row];
    const double v_clipped = old + ClipDouble(v - old, -c.value_clip_coef, c.value_clip_coef);
    const double clipped_loss = (v_clipped - ret) * (v_clipped - ret);
    if (clipped_loss > value_loss) {  // only where the clip is active: flat in V
      value_loss = clipped_loss;
      grad_value = 0.0;
    }
  }
  b.grad_values[row] = static_cast<float>(c.vf_coef * grad_value * inv_b);

  double* terms = b.row_terms + row * kPpoRowTerms;
  terms[kPpoPolicyLoss] = unclipped_wins ? unclipped : clipped;
  terms[kPpoValueLoss] = 0.5 * value_loss;
  terms[kPpoEntropy] = entropy;
  terms[kPpoApproxKl] = (ratio - 1.0) - log_ratio;
  terms[kPpoOldApproxKl] = -log_ratio;
  const double deviation = ratio - 1.0;
  terms[kPpoClipFraction] = (deviation < 0.0 ? -deviation : deviation) > c.clip_coef ? 1.0 : 0.0;
  terms[kPpoRowGradLogProb] = grad_log_prob;

  float* grad = b.grad_outputs + row * head.out;
  if (head.gaussian) {
    // dlog pi / dmean_k = z_k / sigma_k; the entropy does not depend on the mean.
    const float* log_std = head.log_std + lane * head.out;
    const float* u = b.samples + row * head.out;
    for (int k = 0; k < head.out; ++k)
      grad[k] = static_cast<float>(grad_log_prob * GaussianZ(u[k], out[k], log_std[k]) / PpoExp(log_std[k]));
  } else {
    CategoricalBackward(out, head.out, b.actions[row], partition, entropy, grad_log_prob, -c.ent_coef * inv_b, grad);
  }
}

// Pass 3, one thread per (lane, k), k in [0, PpoReduceThreads), at j = lane PpoReduceThreads + k:
// k < head.out (Gaussian) sums dL/dlog_std_k over the lane's rows in order, per row
// g (z_k^2 - 1) - ent_coef / b (g = dL/dlog pi, dlog pi / dlog_std = z^2 - 1, dH / dlog_std = 1);
// the last k writes the lane's statistics, the means of its rows' terms.
CUGYM_HD inline int64_t PpoReduceThreads(const PolicyHead& head) { return head.gaussian ? head.out + 1 : 1; }

CUGYM_HD inline void PpoLaneReduce(const PolicyHead& head, const PpoBatch& b, const PpoLossConfig& c, int64_t j) {
  const int64_t per_lane = PpoReduceThreads(head), lane = j / per_lane, k = j % per_lane;
  const double inv_b = 1.0 / static_cast<double>(b.rows);
  const int64_t first = lane * b.rows;
  if (k < per_lane - 1) {
    const float log_std = head.log_std[lane * head.out + k];
    double sum = 0.0;
    for (int64_t row = first; row < first + b.rows; ++row) {
      const double z = GaussianZ(b.samples[row * head.out + k], b.outputs[row * head.out + k], log_std);
      sum += b.row_terms[row * kPpoRowTerms + kPpoRowGradLogProb] * (z * z - 1.0) - c.ent_coef * inv_b;
    }
    b.grad_log_std[lane * head.out + k] = static_cast<float>(sum);
    return;
  }
  double sums[kPpoRowTerms - 1] = {0, 0, 0, 0, 0, 0};
  for (int64_t row = first; row < first + b.rows; ++row)
    for (int s = 0; s < kPpoRowTerms - 1; ++s) sums[s] += b.row_terms[row * kPpoRowTerms + s];
  float* stats = b.stats + lane * kPpoStats;
  for (int s = 0; s < kPpoRowTerms - 1; ++s) stats[s] = static_cast<float>(sums[s] * inv_b);
  const double loss =
      sums[kPpoPolicyLoss] * inv_b - c.ent_coef * sums[kPpoEntropy] * inv_b + c.vf_coef * sums[kPpoValueLoss] * inv_b;
  stats[kPpoLoss] = static_cast<float>(loss);
}

// ---------------------------------------------------------------------------------------------
// Running normalizers (Gymnasium 1.x's NormalizeObservation and NormalizeReward, with their
// RunningMeanStd), one set of statistics per lane over the lane's n envs.

constexpr double kNormalizerEpsilon = 1e-8;  // under the square root
constexpr double kRunningCountPrior = 1e-4;  // RunningMeanStd's initial count (mean 0, variance 1)
constexpr double kNormalizerClip = 10.0;     // CleanRL's clips after both wrappers

// Per lane, `dim` features' running mean and (population) variance over `count` samples.
struct RunningMoments {
  double* mean = nullptr;   // [lanes][dim], 0 at first
  double* var = nullptr;    // [lanes][dim], 1 at first
  double* count = nullptr;  // [lanes], kRunningCountPrior at first
  int64_t lanes = 1, dim = 1;
};

// Chan, Golub and LeVeque's parallel merge of a batch's mean and population variance into the
// running ones (RunningMeanStd.update_from_moments): with delta = batch_mean - mean and
// total = count + batch_count, mean += delta batch_count / total and
// var = (var count + batch_var batch_count + delta^2 count batch_count / total) / total.
CUGYM_HD inline void MergeMoments(double* mean, double* var, double count, double batch_mean, double batch_var,
                                  double batch_count) {
  const double delta = batch_mean - *mean, total = count + batch_count;
  const double m2 = *var * count + batch_var * batch_count + delta * delta * count * batch_count / total;
  *mean += delta * batch_count / total;
  *var = m2 / total;
}

// One thread per (lane, feature) j: the batch of the lane's n rows of x (rows of m.dim floats,
// lane l's from row l n) merged into feature j % dim of lane j / dim; the mean and variance of the
// batch in two passes in row order (numpy's var is the population one). The count moves on
// afterwards (AdvanceCount): every feature merges with the old one.
CUGYM_HD inline void UpdateMomentsFeature(const RunningMoments& m, const float* x, int64_t n, int64_t j) {
  const int64_t lane = j / m.dim, d = j - lane * m.dim;
  const float* rows = x + lane * n * m.dim + d;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += rows[i * m.dim];
  const double batch_mean = sum / static_cast<double>(n);
  double squares = 0.0;
  for (int64_t i = 0; i < n; ++i) squares += (rows[i * m.dim] - batch_mean) * (rows[i * m.dim] - batch_mean);
  MergeMoments(m.mean + j, m.var + j, m.count[lane], batch_mean, squares / static_cast<double>(n),
               static_cast<double>(n));
}

CUGYM_HD inline void AdvanceCount(const RunningMoments& m, int64_t n, int64_t lane) {
  m.count[lane] += static_cast<double>(n);
}

// Element j of the lanes' observations [lanes n][dim]: clip((x - mean) / sqrt(var + 1e-8),
// -clip, clip) with its lane's statistics. In place is fine (out == obs).
CUGYM_HD inline void NormalizeObservation(const RunningMoments& m, const float* obs, float* out, int64_t n, double clip,
                                          int64_t j) {
  const int64_t row = j / m.dim, d = j - row * m.dim, at = (row / n) * m.dim + d;
  const double z = (static_cast<double>(obs[j]) - m.mean[at]) / sqrt(m.var[at] + kNormalizerEpsilon);
  out[j] = static_cast<float>(ClipDouble(z, -clip, clip));
}

// Reward scaling: each env's discounted return G = gamma G (1 - done_prev) + r, its running
// variance per lane, and r / sqrt(var + 1e-8) clipped. done_prev is the env's previous step's
// episode end (terminated or truncated): G restarts with each episode, as gym's and SB3's
// VecNormalize do it. (Gymnasium 1.x's NormalizeReward multiplies by 1 - terminated of the
// current step instead, which drops G one step early and carries it across truncations.)
struct RewardScaler {
  double* returns = nullptr;  // [lanes n] each env's G so far, 0 after its episode's end
  RunningMoments moments;     // dim 1: the returns' running mean and variance per lane
  double gamma = 0.99;
};

// One thread per lane: its envs' returns G += r (G = gamma G + r), in env order, and unless
// frozen the batch of their n values merged into the lane's statistics (Gymnasium updates them
// with the returns before it scales the rewards).
CUGYM_HD inline void AccumulateLaneReturns(const RewardScaler& s, const float* rewards, int64_t n, bool frozen,
                                           int64_t lane) {
  double* g = s.returns + lane * n;
  const float* r = rewards + lane * n;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    g[i] = s.gamma * g[i] + static_cast<double>(r[i]);
    sum += g[i];
  }
  if (frozen) return;
  const double batch_mean = sum / static_cast<double>(n);
  double squares = 0.0;
  for (int64_t i = 0; i < n; ++i) squares += (g[i] - batch_mean) * (g[i] - batch_mean);
  MergeMoments(s.moments.mean + lane, s.moments.var + lane, s.moments.count[lane], batch_mean,
               squares / static_cast<double>(n), static_cast<double>(n));
  s.moments.count[lane] += static_cast<double>(n);
}

// Env i after AccumulateLaneReturns: its scaled reward clip(r / sqrt(var + 1e-8), -clip, clip)
// (not centred: the mean is kept but unused, as Gymnasium's), and its G restarted where its
// episode ended. In place is fine (scaled == rewards).
CUGYM_HD inline void ScaleReward(const RewardScaler& s, const float* rewards, const uint8_t* terminated,
                                 const uint8_t* truncated, float* scaled, int64_t n, double clip, int64_t i) {
  const double var = s.moments.var[i / n];
  const double r = static_cast<double>(rewards[i]) / sqrt(var + kNormalizerEpsilon);
  scaled[i] = static_cast<float>(ClipDouble(r, -clip, clip));
  if (terminated[i] | truncated[i]) s.returns[i] = 0.0;
}

}  // namespace cugym::agent
