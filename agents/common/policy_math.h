// The policy math every agent shares (PPO's and SAC's heads, policy model files): exp, log and tanh
// with the same bits on every back end, the categorical and diagonal Gaussian policy heads
// (sampling, log-probabilities, entropies, their gradients) and the policy's random draws. GAE is
// in ppo_rollout_kernels.h, the clipped PPO loss in ppo_loss_kernels.h, SAC's in sac_kernels.h,
// the running normalizers in normalizer_kernels.h. Written once as CUGYM_HD functions;
// agent_ops_cpu.cpp and agent_ops_cuda.cu run them (docs/ppo.md, "Kernels").
//
// Lanes (agent.h): a rollout step of E = lanes x n envs, lane l owning envs l n .. l n + n - 1,
// and minibatches of lanes x b rows, lane l's rows l b .. l b + b - 1. Nothing of lane l reads
// another lane's data, its random draws are keyed by its own seed and its envs' indices within
// the lane, and every sum over a lane's rows runs in row order in double: each lane gets the bits
// its solo run gets, on every back end.
//
// exp, log and tanh are cugym's own (PolicyExp, PolicyLog through core's Log2, PolicyTanh), built
// of +, -, *, / and bit operations, not the libraries' (glibc's and CUDA's differ in the last
// bits), and sqrt and division are correctly rounded on both: with FMA contraction off
// (cugym_strict_fp) the CPU and the GPU agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "agents/common/exploration_kernels.h"
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
CUGYM_HD inline double PolicyExp(double x) {
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
CUGYM_HD inline double PolicyLog(double x) { return Log2(x) * 0.6931471805599453; }

// tanh x: (1 - e) / (1 + e) with e = e^(-2|x|), which loses relative precision as x nears 0
// (1 - e cancels); below |x| = 0.02 its Taylor series to x^11 (the first term left out is below
// 1e-22 of x there).
CUGYM_HD inline double PolicyTanh(double x) {
  const double ax = x < 0.0 ? -x : x;
  double t;
  if (ax < 0.02) {
    const double x2 = ax * ax;
    t = ax * (1.0 + x2 * (-1.0 / 3.0 +
                          x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0 + x2 * (-1382.0 / 155925.0))))));
  } else if (ax > 20.0) {
    t = 1.0;  // 1 - tanh(20) is 8e-18, below half an ulp of 1
  } else {
    const double e = PolicyExp(-2.0 * ax);
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
  int stride = 0;  // floats per row of the actor's outputs (0: out); SAC's actor has 2 out
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
  for (int j = 0; j < num_actions; ++j) sum += PolicyExp(static_cast<double>(logits[j]) - max);
  return LogSoftmaxRow{max, PolicyLog(sum)};
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
    h -= PolicyExp(log_p) * log_p;
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
  for (int j = 0; j < num_actions; ++j) total += PolicyExp(static_cast<double>(logits[j]) - max);
  const double target = u * total;
  double cumulative = 0.0;
  for (int j = 0; j < num_actions; ++j) {
    cumulative += PolicyExp(static_cast<double>(logits[j]) - max);
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
    const double p = PolicyExp(log_p);
    const double own = j == action ? 1.0 : 0.0;
    grad[j] = static_cast<float>(g_logp * (own - p) - g_entropy * p * (log_p + entropy));
  }
}

// z = (u - mean) / exp(log_std): the standard normal behind sample u.
CUGYM_HD inline double GaussianZ(float u, float mean, float log_std) {
  return (static_cast<double>(u) - static_cast<double>(mean)) / PolicyExp(log_std);
}

// -sum_k log(1 - tanh(u_k)^2 + 1e-6): what tanh squashing adds to u's log-probability.
CUGYM_HD inline double TanhCorrection(const float* u, int dims) {
  double c = 0.0;
  for (int k = 0; k < dims; ++k) {
    const double t = PolicyTanh(u[k]);
    c -= PolicyLog(1.0 - t * t + 1e-6);
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
    const double a = PolicyTanh(u);
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

// Two standard normals from a block's first two words, by Box-Muller: r = sqrt(-2 ln u1) with u1
// in (0, 1] (so |z| <= 6.7), angle 2 pi u2 through core's SinCos.
CUGYM_HD inline void BoxMuller(const U32x4& bits, double* z0, double* z1) {
  const double u1 = (static_cast<double>(bits.v[0]) + 1.0) * (1.0 / 4294967296.0);
  const double radius = sqrt(-2.0 * PolicyLog(u1));
  const float angle = static_cast<float>(6.283185307179586 * UnitFromBits(bits.v[1]));
  float s, c;
  SinCos(angle, &s, &c);
  *z0 = radius * static_cast<double>(c);
  *z1 = radius * static_cast<double>(s);
}

// Standard normals 2 pair and 2 pair + 1 of (seed, step, env), by Box-Muller from block `pair`.
CUGYM_HD inline void NormalPair(uint64_t seed, int64_t step, int64_t env, uint32_t pair, double* z0, double* z1) {
  BoxMuller(PolicyBlock(seed, step, env, pair), z0, z1);
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
  const float* row = outputs + e * (head.stride > 0 ? head.stride : head.out);
  if (!head.gaussian) {
    const int32_t a = deterministic
                          ? CategoricalArgmax(row, head.out)
                          : CategoricalSample(row, head.out, PolicyUniform(seeds[lane], counters->vector_steps, env));
    out.actions[e] = a;
    if (out.log_probs != nullptr) out.log_probs[e] = static_cast<float>(CategoricalLogProb(row, head.out, a));
    return;
  }
  // Deterministic: u is the mean itself. SAC's log_std is an output, not a parameter: its head has
  // none, which only deterministic draws allow (no log-probability is written then).
  const float* log_std = head.log_std != nullptr ? head.log_std + lane * head.out : nullptr;
  float* u = out.samples + e * head.out;
  for (int k = 0; k < head.out; k += 2) {
    double z0 = 0.0, z1 = 0.0;
    if (!deterministic) NormalPair(seeds[lane], counters->vector_steps, env, static_cast<uint32_t>(k / 2), &z0, &z1);
    for (int m = k; m < k + 2 && m < head.out; ++m) {
      const double z = m == k ? z0 : z1;
      u[m] = deterministic ? row[m] : static_cast<float>(static_cast<double>(row[m]) + PolicyExp(log_std[m]) * z);
      if (out.env_actions != nullptr) out.env_actions[e * head.out + m] = GaussianEnvAction(head, u[m], m);
    }
  }
  // Of the stored float u, as the loss will take it: the first epoch's ratio is exactly 1.
  if (out.log_probs != nullptr && log_std != nullptr)
    out.log_probs[e] = static_cast<float>(GaussianLogProb(row, log_std, u, head.out, head.squash));
}

}  // namespace cugym::agent
