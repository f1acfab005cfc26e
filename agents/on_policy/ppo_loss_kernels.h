// The clipped PPO loss per lane, with its gradients with respect to the actor's outputs, the
// lanes' log standard deviations and the critic's values (policy_math.h says how lanes and bits
// are kept). Written once as CUGYM_HD functions; PpoOps::PpoLoss runs them.
#pragma once

#include <cstdint>

#include "agents/common/policy_math.h"

namespace cugym::agent {

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
  const double ratio = PolicyExp(log_ratio);
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
      grad[k] = static_cast<float>(grad_log_prob * GaussianZ(u[k], out[k], log_std[k]) / PolicyExp(log_std[k]));
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

}  // namespace cugym::agent
