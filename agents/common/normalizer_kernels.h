// Running normalizers of observations and rewards, per lane (policy_math.h says how lanes and
// bits are kept). Written once as CUGYM_HD functions; PolicyOps::NormalizeObservations and
// ScaleRewards run them, Normalizers (normalizer.h) holds their statistics.
#pragma once

#include <cstdint>

#include "agents/common/policy_math.h"

namespace cugym::agent {

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
