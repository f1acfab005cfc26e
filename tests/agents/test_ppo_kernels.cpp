// PPO's kernels (agents/common/policy_math.h, through PolicyOps, PpoOps and RolloutOps): GAE on a hand-made rollout;
// the policy heads' log-probabilities, entropies and tanh correction against float64 formulas, and their draws'
// statistics; the loss's statistics and gradients against float64 finite differences of the loss; the normalizers
// against two-pass statistics of everything seen, frozen, and through a checkpoint; K lanes, each the bits of its lane
// alone; and every op on each device the CPU's bits (the CUDA cases skip without a GPU).
#include "agents/common/normalizer_kernels.h"
#include "agents/common/policy_math.h"
#include "agents/on_policy/ppo_loss_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/common/checkpoint.h"
#include "agents/common/normalizer.h"
#include "agents/common/policy_ops.h"
#include "agents/on_policy/ppo_ops.h"
#include "agents/on_policy/rollout_ops.h"
#include "core/memory.h"
#include "core/safetensors.h"
#include "tests/agents/agent_test_util.h"
#include "tests/core/test_util.h"
#include "tests/gpu_skip.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::agent {
namespace {

using testing::SameBits;
using testing::ScratchDir;

template <class T>
Buffer<T> OnDevice(Device device, const std::vector<T>& values) {
  Buffer<T> buffer(device, values.size());
  if (!values.empty()) buffer.FromHost(values.data(), values.size());
  return buffer;
}

std::vector<float> Uniform(std::mt19937& gen, std::size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

std::vector<uint8_t> Flags(std::mt19937& gen, std::size_t count, double p) {
  std::vector<uint8_t> v(count);
  for (uint8_t& x : v) x = std::bernoulli_distribution(p)(gen) ? 1 : 0;
  return v;
}

// The bits of floats or doubles, so that comparisons are exact (-0 against 0, NaN against NaN).
template <class T>
std::vector<uint64_t> Bits(const std::vector<T>& values) {
  std::vector<uint64_t> bits(values.size(), 0);
  for (std::size_t i = 0; i < values.size(); ++i) std::memcpy(&bits[i], &values[i], sizeof(T));
  return bits;
}

// Lane l's part of v, seen as [blocks][lanes][per]: [blocks][per].
template <class T>
std::vector<T> LaneOf(const std::vector<T>& v, int64_t blocks, int64_t lanes, int64_t l) {
  const int64_t per = static_cast<int64_t>(v.size()) / (blocks * lanes);
  std::vector<T> out;
  for (int64_t b = 0; b < blocks; ++b)
    out.insert(out.end(), v.begin() + (b * lanes + l) * per, v.begin() + (b * lanes + l + 1) * per);
  return out;
}

class PpoKernels : public ::testing::TestWithParam<Device> {};

// ---------------------------------------------------------------------------------------------
// GAE

TEST_P(PpoKernels, GaeStopsAtEpisodeEndsAndBootstrapsOnlyTruncations) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  // 5 steps of 2 envs, (t, e) at 2 t + e. Env 0 terminates at t = 1 (its final observation's
  // value, 7, must not count) and is truncated at t = 3 (its final observation's value, 4, must);
  // env 1 runs on.
  const std::vector<float> rewards = {1, 0, 2, 0, 0.5f, 0, -1, 0, 3, 1};
  const std::vector<float> values = {0.5f, 0.5f, 1, 0.5f, 0.25f, 0.5f, 2, 0.5f, 1.5f, 0.5f};
  const std::vector<float> next_values = {1, 0.5f, 7, 0.5f, 2, 0.5f, 4, 0.5f, 0.75f, 0.5f};
  const std::vector<uint8_t> terminated = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> truncated = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  Buffer<float> r = OnDevice(device, rewards), v = OnDevice(device, values), nv = OnDevice(device, next_values);
  Buffer<uint8_t> term = OnDevice(device, terminated), trunc = OnDevice(device, truncated);
  Buffer<float> advantages(device, 10), returns(device, 10);
  const GaeArrays arrays{r.data(), term.data(), trunc.data(), v.data(), nv.data(), advantages.data(), returns.data(), 5,
                         2};
  MakeOps<RolloutOps>(device, nullptr)->GaeAdvantages(arrays, 0.9, 0.8);
  // By hand, gamma 0.9, gamma lambda 0.72. Env 0:
  //   t = 4  delta = 3 + 0.9 * 0.75 - 1.5 = 2.175                     A = 2.175
  //   t = 3  truncated: delta = -1 + 0.9 * 4 - 2 = 0.6                 A = 0.6 (A_4 belongs to the next episode)
  //   t = 2  delta = 0.5 + 0.9 * 2 - 0.25 = 2.05                       A = 2.05 + 0.72 * 0.6 = 2.482
  //   t = 1  terminated: delta = 2 - 1 = 1                             A = 1
  //   t = 0  delta = 1 + 0.9 * 1 - 0.5 = 1.4                           A = 1.4 + 0.72 * 1 = 2.12
  // Env 1: delta = r + 0.9 * 0.5 - 0.5 = r - 0.05, A_4 = 0.95, then A_t = -0.05 + 0.72 A_{t+1}:
  //   0.634, 0.40648, 0.2426656, 0.124719232.
  const std::vector<double> want = {2.12, 0.124719232, 1.0, 0.2426656, 2.482, 0.40648, 0.6, 0.634, 2.175, 0.95};
  const std::vector<float> got_a = advantages.ToHost(), got_r = returns.ToHost();
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got_a[i], want[i], 1e-6) << "advantage (t, e) = (" << i / 2 << ", " << i % 2 << ")";
    EXPECT_NEAR(got_r[i], want[i] + values[i], 1e-6) << "return (t, e) = (" << i / 2 << ", " << i % 2 << ")";
  }
}

// ---------------------------------------------------------------------------------------------
// Policy heads against float64 formulas

double RefLogSumExp(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  return m + std::log(s);
}

TEST(PpoHeads, ElementaryFunctionsAreTheLibrarysToAFewUlps) {
  for (double x : {-707.9, -700.0, -30.5, -1.0, -0.34, -1e-9, 0.0, 1e-12, 0.3, 0.35, 1.0, 2.5, 88.0, 700.0, 708.9})
    EXPECT_NEAR(PolicyExp(x), std::exp(x), 1e-15 * std::exp(x)) << x;
  EXPECT_EQ(PolicyExp(-745.0), 0.0) << "no subnormals";
  EXPECT_EQ(PolicyExp(1e6), PolicyExp(709.0)) << "saturates";
  EXPECT_TRUE(std::isnan(PolicyExp(std::nan(""))));
  for (double x : {1e-300, 2.3e-10, 1e-6, 0.5, 1.0, 1.0 + 1e-12, 3.0, 1e10, 1e300})
    EXPECT_NEAR(PolicyLog(x), std::log(x), 1e-15 * std::max(1.0, std::fabs(std::log(x)))) << x;
  for (double x : {0.0, 1e-9, 1e-4, 0.0199, 0.0201, 0.1, 0.5, 1.0, 3.0, 19.9, 20.1, 40.0})
    for (double sign : {1.0, -1.0}) {
      const double y = sign * x;
      EXPECT_NEAR(PolicyTanh(y), std::tanh(y), 1e-14 * std::max(std::fabs(std::tanh(y)), 1e-300)) << y;
    }
}

TEST(PpoHeads, CategoricalLogProbAndEntropyAreTheFloat64Formulas) {
  // Ordinary logits, logits so large that exp would overflow without the max subtracted, so
  // negative that it would underflow, and one action.
  const std::vector<std::vector<float>> rows = {
      {0.5f, -1.0f, 2.0f, 0.0f}, {800.0f, 799.0f, -50.0f}, {-300.0f, -301.0f, -299.5f, -310.0f, -300.0f}, {3.0f}};
  for (const std::vector<float>& row : rows) {
    const int n = static_cast<int>(row.size());
    const std::vector<double> x(row.begin(), row.end());
    const double lse = RefLogSumExp(x);
    double entropy = 0;
    for (double v : x) entropy -= std::exp(v - lse) * (v - lse);
    for (int a = 0; a < n; ++a)
      EXPECT_NEAR(CategoricalLogProb(row.data(), n, a), x[a] - lse, 1e-12 * std::max(1.0, std::fabs(x[a] - lse)));
    EXPECT_NEAR(CategoricalEntropy(row.data(), n), entropy, 1e-12);
    EXPECT_EQ(CategoricalArgmax(row.data(), n), std::max_element(row.begin(), row.end()) - row.begin());
  }
}

double RefTanhCorrection(const std::vector<double>& u) {
  double c = 0;
  for (double v : u) c -= std::log(1.0 - std::tanh(v) * std::tanh(v) + 1e-6);
  return c;
}

TEST(PpoHeads, GaussianLogProbEntropyAndTanhCorrectionAreTheFloat64Formulas) {
  const std::vector<float> mean = {0.3f, -1.2f, 2.0f, 0.0f}, log_std = {-0.5f, 0.0f, 0.8f, -2.0f};
  for (const std::vector<float>& u : {std::vector<float>{0.1f, -3.0f, 2.5f, 0.01f}, {8.0f, -0.2f, 2.0f, -12.0f}}) {
    double logp = 0, entropy = 0;
    for (int k = 0; k < 4; ++k) {
      const double z = (u[k] - static_cast<double>(mean[k])) / std::exp(static_cast<double>(log_std[k]));
      logp += -0.5 * z * z - log_std[k] - 0.5 * std::log(2 * M_PI);
      entropy += log_std[k] + 0.5 * (1 + std::log(2 * M_PI));
    }
    const double correction = RefTanhCorrection(std::vector<double>(u.begin(), u.end()));
    EXPECT_NEAR(GaussianLogProb(mean.data(), log_std.data(), u.data(), 4, false), logp, 1e-12 * std::fabs(logp));
    EXPECT_NEAR(TanhCorrection(u.data(), 4), correction, 1e-12 * std::fabs(correction));
    EXPECT_NEAR(GaussianLogProb(mean.data(), log_std.data(), u.data(), 4, true), logp + correction,
                1e-12 * std::fabs(logp + correction));
    EXPECT_NEAR(GaussianEntropy(log_std.data(), 4), entropy, 1e-12);
  }
  // Saturated: 1 - tanh(8)^2 is 4.5e-7, so the 1e-6 keeps the correction finite, about -4 log(1e-6).
  const float far[4] = {8.0f, -9.0f, 30.0f, -30.0f};
  EXPECT_NEAR(TanhCorrection(far, 4), RefTanhCorrection({8.0, -9.0, 30.0, -30.0}), 1e-9);
  EXPECT_LT(TanhCorrection(far, 4), -4 * std::log(1e-6) + 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Sampling

// One rollout step's draws on `device`: `lanes` lanes of n rows of the same outputs row.
struct Draws {
  std::vector<int32_t> actions;
  std::vector<float> samples, env_actions, log_probs;
};

Draws SampleOn(Device device, const PolicyHead& host_head, const std::vector<float>& outputs,
               const std::vector<float>& log_std, const std::vector<float>& low, const std::vector<float>& high,
               int64_t lanes, int64_t n, int64_t step, const std::vector<uint64_t>& seeds, bool deterministic) {
  const int64_t rows = lanes * n;
  Buffer<float> out_d = OnDevice(device, outputs), log_std_d = OnDevice(device, log_std);
  Buffer<float> low_d = OnDevice(device, low), high_d = OnDevice(device, high);
  Buffer<StepCounters> counters = OnDevice(device, std::vector<StepCounters>{{step, step * n}});
  Buffer<uint64_t> seeds_d = OnDevice(device, seeds);
  Buffer<int32_t> actions(device, rows);
  Buffer<float> samples(device, rows * host_head.out), env_actions(device, rows * host_head.out), logp(device, rows);
  PolicyHead head = host_head;
  head.log_std = log_std.empty() ? nullptr : log_std_d.data();
  head.low = low.empty() ? nullptr : low_d.data();
  head.high = high.empty() ? nullptr : high_d.data();
  PolicySample out;
  out.log_probs = logp.data();
  if (head.gaussian) {
    out.samples = samples.data();
    out.env_actions = env_actions.data();
  } else {
    out.actions = actions.data();
  }
  MakeOps<PolicyOps>(device, nullptr)
      ->SamplePolicy(head, out_d.data(), lanes, n, counters.data(), seeds_d.data(), deterministic, out);
  Draws d;
  d.log_probs = logp.ToHost();
  if (head.gaussian) {
    d.samples = samples.ToHost();
    d.env_actions = env_actions.ToHost();
  } else {
    d.actions = actions.ToHost();
  }
  return d;
}

std::vector<float> Repeat(const std::vector<float>& row, int64_t times) {
  std::vector<float> v;
  for (int64_t i = 0; i < times; ++i) v.insert(v.end(), row.begin(), row.end());
  return v;
}

TEST_P(PpoKernels, CategoricalDrawsFollowTheSoftmaxAndRepeatPerKey) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const int64_t n = 40000;
  // The last action's probability is e^-102: it must never come up.
  const std::vector<float> row = {0.5f, -1.0f, 2.0f, 0.0f, -100.0f};
  const std::vector<double> x(row.begin(), row.end());
  const double lse = RefLogSumExp(x);
  PolicyHead head;
  head.out = 5;
  const std::vector<float> logits = Repeat(row, n);
  const Draws draws = SampleOn(device, head, logits, {}, {}, {}, 1, n, 17, {7}, false);
  std::vector<int64_t> counts(5, 0);
  for (int64_t e = 0; e < n; ++e) {
    ASSERT_GE(draws.actions[e], 0);
    ASSERT_LT(draws.actions[e], 5);
    ++counts[draws.actions[e]];
    EXPECT_NEAR(draws.log_probs[e], x[draws.actions[e]] - lse, 1e-6);
  }
  for (int a = 0; a < 5; ++a) {
    const double p = std::exp(x[a] - lse), sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(static_cast<double>(counts[a]) / n, p, 5 * sd + 1e-12) << "action " << a;
  }
  EXPECT_EQ(counts[4], 0);
  // The same key draws the same; another step or seed, other draws.
  EXPECT_EQ(SampleOn(device, head, logits, {}, {}, {}, 1, n, 17, {7}, false).actions, draws.actions);
  for (const auto& [step, seed] : {std::pair<int64_t, uint64_t>{18, 7}, {17, 8}}) {
    const Draws other = SampleOn(device, head, logits, {}, {}, {}, 1, n, step, {seed}, false);
    int64_t differ = 0;
    for (int64_t e = 0; e < n; ++e) differ += other.actions[e] != draws.actions[e];
    EXPECT_GT(differ, n / 3) << "step " << step << ", seed " << seed;  // 1 - sum p^2 = 0.47 of them
  }
  // Deterministic: the argmax, with its log-probability.
  const Draws greedy = SampleOn(device, head, logits, {}, {}, {}, 1, n, 17, {7}, true);
  for (int64_t e = 0; e < n; e += 997) {
    EXPECT_EQ(greedy.actions[e], 2);
    EXPECT_NEAR(greedy.log_probs[e], x[2] - lse, 1e-6);
  }
}

TEST_P(PpoKernels, GaussianDrawsHaveTheirMeanAndStdAndRepeatPerKey) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const int64_t n = 40000;
  const int dims = 3;
  const std::vector<float> mean = {1.0f, -2.0f, 0.5f}, log_std = {0.0f, -1.0f, 0.7f};
  const std::vector<float> low = {-1.0f, -3.0f, -10.0f}, high = {2.0f, 0.0f, 10.0f};
  PolicyHead head;
  head.out = dims;
  head.gaussian = true;
  const std::vector<float> means = Repeat(mean, n);
  const Draws draws = SampleOn(device, head, means, log_std, low, high, 1, n, 17, {7}, false);
  std::vector<double> z[dims];
  for (int64_t e = 0; e < n; ++e) {
    std::vector<double> u(dims);
    double logp = 0;
    for (int k = 0; k < dims; ++k) {
      u[k] = draws.samples[e * dims + k];
      z[k].push_back((u[k] - mean[k]) / std::exp(static_cast<double>(log_std[k])));
      logp += -0.5 * z[k].back() * z[k].back() - log_std[k] - 0.5 * std::log(2 * M_PI);
      // Unsquashed: the env gets u clipped to the Box.
      EXPECT_EQ(draws.env_actions[e * dims + k], std::min(std::max(draws.samples[e * dims + k], low[k]), high[k]));
    }
    EXPECT_NEAR(draws.log_probs[e], logp, 2e-5 * std::max(1.0, std::fabs(logp))) << e;
  }
  for (int k = 0; k < dims; ++k) {
    SCOPED_TRACE(::testing::Message() << "dimension " << k);
    double sum = 0, squares = 0, within = 0;
    for (double v : z[k]) {
      sum += v;
      squares += v * v;
      within += std::fabs(v) < 1.0;
    }
    const double m = sum / n, var = squares / n - m * m;
    EXPECT_NEAR(m, 0.0, 5 / std::sqrt(n));
    EXPECT_NEAR(std::sqrt(var), 1.0, 5 / std::sqrt(2.0 * n));
    EXPECT_NEAR(within / n, 0.682689492, 5 * std::sqrt(0.6827 * 0.3173 / n));
  }
  // The two normals of a Box-Muller pair are uncorrelated.
  double cross = 0;
  for (int64_t e = 0; e < n; ++e) cross += z[0][e] * z[1][e];
  EXPECT_NEAR(cross / n, 0.0, 5 / std::sqrt(n));

  EXPECT_EQ(Bits(SampleOn(device, head, means, log_std, low, high, 1, n, 17, {7}, false).samples), Bits(draws.samples));
  const Draws later = SampleOn(device, head, means, log_std, low, high, 1, n, 18, {7}, false);
  int64_t same = 0;
  for (int64_t i = 0; i < n * dims; ++i) same += later.samples[i] == draws.samples[i];
  EXPECT_LT(same, n / 100) << "another step draws anew";

  // Squashed: a = tanh(u) rescaled to the Box, the log-probability a's.
  head.squash = true;
  const Draws squashed = SampleOn(device, head, means, log_std, low, high, 1, n, 17, {7}, false);
  EXPECT_EQ(Bits(squashed.samples), Bits(draws.samples)) << "the same u";
  for (int64_t e = 0; e < n; e += 101) {
    std::vector<double> u(dims);
    for (int k = 0; k < dims; ++k) {
      u[k] = squashed.samples[e * dims + k];
      const double a = low[k] + (std::tanh(u[k]) + 1) * 0.5 * (high[k] - low[k]);
      EXPECT_NEAR(squashed.env_actions[e * dims + k], a, 1e-5 * std::max(1.0, std::fabs(a)));
    }
    const double want = draws.log_probs[e] + RefTanhCorrection(u);
    EXPECT_NEAR(squashed.log_probs[e], want, 2e-5 * std::max(1.0, std::fabs(want)));
  }
  // Deterministic: the mean (clipped for the env).
  head.squash = false;
  const Draws at_mean = SampleOn(device, head, means, log_std, low, high, 1, n, 17, {7}, true);
  for (int k = 0; k < dims; ++k) {
    EXPECT_EQ(at_mean.samples[k], mean[k]);
    EXPECT_EQ(at_mean.env_actions[k], std::min(std::max(mean[k], low[k]), high[k]));
  }
}

// ---------------------------------------------------------------------------------------------
// The loss

// A minibatch of `lanes` lanes of `rows` rows for PpoLoss, on the host.
struct LossInputs {
  int out = 0;
  bool gaussian = false, squash = false;
  int64_t lanes = 1, rows = 0;
  std::vector<float> outputs, log_std, samples, old_logp, adv, ret, old_v, v;
  std::vector<int32_t> actions;

  LossInputs Lane(int64_t l) const {
    LossInputs in = *this;
    in.lanes = 1;
    for (auto* vec : {&in.outputs, &in.samples, &in.old_logp, &in.adv, &in.ret, &in.old_v, &in.v})
      if (!vec->empty()) *vec = LaneOf(*vec, 1, lanes, l);
    if (!in.log_std.empty()) in.log_std = LaneOf(log_std, 1, lanes, l);
    if (!in.actions.empty()) in.actions = LaneOf(actions, 1, lanes, l);
    return in;
  }
};

struct LossResult {
  std::vector<float> grad_outputs, grad_log_std, grad_values, stats;
  std::vector<double> moments;

  LossResult Lane(int64_t l, int64_t lanes) const {
    LossResult r;
    r.grad_outputs = LaneOf(grad_outputs, 1, lanes, l);
    if (!grad_log_std.empty()) r.grad_log_std = LaneOf(grad_log_std, 1, lanes, l);
    r.grad_values = LaneOf(grad_values, 1, lanes, l);
    r.stats = LaneOf(stats, 1, lanes, l);
    r.moments = LaneOf(moments, 1, lanes, l);
    return r;
  }
};

void ExpectSameBits(const LossResult& a, const LossResult& b) {
  EXPECT_TRUE(SameBits("PpoLoss (grad_outputs)", a.grad_outputs, b.grad_outputs));
  EXPECT_TRUE(SameBits("PpoLoss (grad_log_std)", a.grad_log_std, b.grad_log_std));
  EXPECT_TRUE(SameBits("PpoLoss (grad_values)", a.grad_values, b.grad_values));
  EXPECT_TRUE(SameBits("PpoLoss (stats)", a.stats, b.stats));
  EXPECT_TRUE(SameBits("PpoLoss (advantage moments)", a.moments, b.moments));
}

LossResult RunLoss(Device device, const LossInputs& in, const PpoLossConfig& config) {
  const int64_t total = in.lanes * in.rows;
  Buffer<float> outputs = OnDevice(device, in.outputs), log_std = OnDevice(device, in.log_std);
  Buffer<float> samples = OnDevice(device, in.samples), old_logp = OnDevice(device, in.old_logp);
  Buffer<float> adv = OnDevice(device, in.adv), ret = OnDevice(device, in.ret), old_v = OnDevice(device, in.old_v);
  Buffer<float> v = OnDevice(device, in.v);
  Buffer<int32_t> actions = OnDevice(device, in.actions);
  Buffer<float> grad_outputs(device, total * in.out), grad_log_std(device, in.lanes * in.out);
  Buffer<float> grad_values(device, total), stats(device, in.lanes * kPpoStats);
  Buffer<double> moments(device, in.lanes * 2), row_terms(device, total * kPpoRowTerms);
  grad_log_std.Zero();
  PolicyHead head;
  head.out = in.out;
  head.gaussian = in.gaussian;
  head.squash = in.squash;
  head.log_std = in.gaussian ? log_std.data() : nullptr;
  PpoBatch b;
  b.outputs = outputs.data();
  b.actions = in.gaussian ? nullptr : actions.data();
  b.samples = in.gaussian ? samples.data() : nullptr;
  b.old_log_probs = old_logp.data();
  b.advantages = adv.data();
  b.returns = ret.data();
  b.old_values = old_v.data();
  b.values = v.data();
  b.grad_outputs = grad_outputs.data();
  b.grad_log_std = grad_log_std.data();
  b.grad_values = grad_values.data();
  b.stats = stats.data();
  b.moments = moments.data();
  b.row_terms = row_terms.data();
  b.lanes = in.lanes;
  b.rows = in.rows;
  MakeOps<PpoOps>(device, nullptr)->PpoLoss(head, b, config);
  LossResult r;
  r.grad_outputs = grad_outputs.ToHost();
  if (in.gaussian) r.grad_log_std = grad_log_std.ToHost();
  r.grad_values = grad_values.ToHost();
  r.stats = stats.ToHost();
  r.moments = moments.ToHost();
  return r;
}

// One lane's minibatch in double, and the loss written out from the formulas (policy_math.h's
// comment), for finite differences.
struct LaneData {
  int out = 0;
  bool gaussian = false, squash = false;
  std::vector<double> outputs, log_std, samples, old_logp, adv, ret, old_v, v;
  std::vector<int32_t> actions;

  LaneData(const LossInputs& in, int64_t l) : out(in.out), gaussian(in.gaussian), squash(in.squash) {
    const LossInputs lane = in.Lane(l);
    auto wide = [](const std::vector<float>& f) { return std::vector<double>(f.begin(), f.end()); };
    outputs = wide(lane.outputs);
    log_std = wide(lane.log_std);
    samples = wide(lane.samples);
    old_logp = wide(lane.old_logp);
    adv = wide(lane.adv);
    ret = wide(lane.ret);
    old_v = wide(lane.old_v);
    v = wide(lane.v);
    actions = lane.actions;
  }
  int64_t rows() const { return static_cast<int64_t>(adv.size()); }

  double LogProb(int64_t i) const {
    if (!gaussian) {
      const std::vector<double> x(outputs.begin() + i * out, outputs.begin() + (i + 1) * out);
      return x[actions[i]] - RefLogSumExp(x);
    }
    double lp = 0;
    for (int k = 0; k < out; ++k) {
      const double u = samples[i * out + k], z = (u - outputs[i * out + k]) / std::exp(log_std[k]);
      lp += -0.5 * z * z - log_std[k] - 0.5 * std::log(2 * M_PI);
      if (squash) lp -= std::log(1 - std::tanh(u) * std::tanh(u) + 1e-6);
    }
    return lp;
  }
  double Entropy(int64_t i) const {
    double h = 0;
    if (!gaussian) {
      const std::vector<double> x(outputs.begin() + i * out, outputs.begin() + (i + 1) * out);
      const double lse = RefLogSumExp(x);
      for (double xj : x) h -= std::exp(xj - lse) * (xj - lse);
      return h;
    }
    for (int k = 0; k < out; ++k) h += log_std[k] + 0.5 * (1 + std::log(2 * M_PI));
    return h;
  }
};

std::vector<double> RefStats(const LaneData& d, const PpoLossConfig& c) {
  const int64_t b = d.rows();
  double mean = 0, var = 0;
  for (double a : d.adv) mean += a / b;
  for (double a : d.adv) var += (a - mean) * (a - mean) / (b - 1);  // torch's .std(): unbiased
  std::vector<double> s(kPpoStats, 0.0);
  for (int64_t i = 0; i < b; ++i) {
    const double a = c.normalize_advantages ? (d.adv[i] - mean) / (std::sqrt(var) + 1e-8) : d.adv[i];
    const double log_ratio = d.LogProb(i) - d.old_logp[i], ratio = std::exp(log_ratio);
    const double clipped_ratio = std::min(std::max(ratio, 1 - c.clip_coef), 1 + c.clip_coef);
    s[kPpoPolicyLoss] += std::max(-a * ratio, -a * clipped_ratio) / b;
    double value_loss = (d.v[i] - d.ret[i]) * (d.v[i] - d.ret[i]);
    if (c.clip_value) {
      const double vc = d.old_v[i] + std::min(std::max(d.v[i] - d.old_v[i], -c.value_clip_coef), c.value_clip_coef);
      value_loss = std::max(value_loss, (vc - d.ret[i]) * (vc - d.ret[i]));
    }
    s[kPpoValueLoss] += 0.5 * value_loss / b;
    s[kPpoEntropy] += d.Entropy(i) / b;
    s[kPpoApproxKl] += ((ratio - 1) - log_ratio) / b;
    s[kPpoOldApproxKl] += -log_ratio / b;
    s[kPpoClipFraction] += (std::fabs(ratio - 1) > c.clip_coef ? 1.0 : 0.0) / b;
  }
  s[kPpoLoss] = s[kPpoPolicyLoss] - c.ent_coef * s[kPpoEntropy] + c.vf_coef * s[kPpoValueLoss];
  return s;
}

// Random minibatches whose log-ratios and value moves sit well away from the clip boundaries (the
// loss's kinks), so that central differences see one branch: with `clip_active` many rows lie
// outside [1 - 0.2, 1 + 0.2] and the values move past +-0.2; without, every ratio is inside.
LossInputs MakeLossInputs(std::mt19937& gen, bool gaussian, bool squash, int64_t lanes, int64_t rows, int out,
                          bool clip_active) {
  LossInputs in;
  in.out = out;
  in.gaussian = gaussian;
  in.squash = squash;
  in.lanes = lanes;
  in.rows = rows;
  const int64_t total = lanes * rows;
  in.outputs = Uniform(gen, total * out, -1.5f, 1.5f);
  in.adv = Uniform(gen, total, -2.0f, 2.0f);
  in.ret = Uniform(gen, total, -1.0f, 1.0f);
  if (gaussian) {
    in.log_std = Uniform(gen, lanes * out, -0.7f, 0.3f);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    in.samples.resize(total * out);
    for (int64_t i = 0; i < total; ++i)
      for (int k = 0; k < out; ++k)
        in.samples[i * out + k] = in.outputs[i * out + k] + std::exp(in.log_std[(i / rows) * out + k]) * normal(gen);
  } else {
    std::uniform_int_distribution<int32_t> pick(0, out - 1);
    for (int64_t i = 0; i < total; ++i) in.actions.push_back(pick(gen));
  }
  const double moves[] = {0.4, -0.5, 0.05, -0.6, 0.3, -0.35, -0.05, 0.6};  // log-ratios; the clip at +0.18, -0.22
  const double value_moves[] = {0.5, -0.05, 0.3, -0.4, 0.1, -0.35, 0.45, -0.1};
  in.old_logp.assign(total, 0.0f);  // set below from each row's log-probability
  in.old_v.resize(total);
  in.v.resize(total);
  for (int64_t l = 0; l < lanes; ++l) {
    const LaneData d(in, l);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t at = l * rows + i;
      const double move = clip_active ? moves[i % 8] : 0.1 * std::uniform_real_distribution<double>(-1, 1)(gen);
      in.old_logp[at] = static_cast<float>(d.LogProb(i) - move);
      in.v[at] = in.ret[at] + std::uniform_real_distribution<float>(-1.0f, 1.0f)(gen);
      in.old_v[at] = static_cast<float>(in.v[at] - (clip_active ? value_moves[i % 8] : 0.1 * moves[i % 8]));
    }
  }
  return in;
}

// Lane 0's statistics against RefStats, and its gradients against central differences of
// RefStats' total loss in every output, log_std and value.
void ExpectLossIsTheReference(const LossInputs& in, const PpoLossConfig& c, const LossResult& got) {
  const LaneData d(in, 0);
  const std::vector<double> want = RefStats(d, c);
  for (int s = 0; s < kPpoStats; ++s)
    EXPECT_NEAR(got.stats[s], want[s], 1e-6 * std::max(1.0, std::fabs(want[s]))) << "statistic " << s;
  const double h = 1e-6;
  auto derivative = [&](std::vector<double> LaneData::*field, std::size_t i) {
    LaneData up = d, down = d;
    (up.*field)[i] += h;
    (down.*field)[i] -= h;
    return (RefStats(up, c)[kPpoLoss] - RefStats(down, c)[kPpoLoss]) / (2 * h);
  };
  auto near = [](double fd) { return 2e-6 + 1e-5 * std::fabs(fd); };
  for (std::size_t i = 0; i < d.outputs.size(); ++i) {
    const double fd = derivative(&LaneData::outputs, i);
    EXPECT_NEAR(got.grad_outputs[i], fd, near(fd)) << "output " << i;
  }
  for (std::size_t k = 0; k < d.log_std.size(); ++k) {
    const double fd = derivative(&LaneData::log_std, k);
    EXPECT_NEAR(got.grad_log_std[k], fd, near(fd)) << "log_std " << k;
  }
  for (std::size_t i = 0; i < d.v.size(); ++i) {
    const double fd = derivative(&LaneData::v, i);
    EXPECT_NEAR(got.grad_values[i], fd, near(fd)) << "value " << i;
  }
}

int64_t Zeros(const std::vector<float>& v) { return std::count(v.begin(), v.end(), 0.0f); }

struct LossCase {
  const char* name;
  bool clip_active;
  PpoLossConfig config;
};

std::vector<LossCase> LossCases() {
  PpoLossConfig plain;
  plain.clip_value = false;
  PpoLossConfig clipped;  // CleanRL's defaults: value clipping on, advantages normalized
  PpoLossConfig raw = clipped;
  raw.normalize_advantages = false;
  raw.ent_coef = 0.2;
  raw.vf_coef = 1.3;
  return {{"ratios inside the clip, no value clipping", false, plain},
          {"ratios and values clipped", true, clipped},
          {"clipped, advantages as they are, a large entropy bonus", true, raw}};
}

TEST(PpoLoss, CategoricalGradientsAreFiniteDifferencesOfTheLoss) {
  std::mt19937 gen(1);
  for (const LossCase& c : LossCases()) {
    SCOPED_TRACE(c.name);
    const LossInputs in = MakeLossInputs(gen, false, false, 1, 8, 5, c.clip_active);
    const LossResult got = RunLoss(Device::kCpu, in, c.config);
    ExpectLossIsTheReference(in, c.config, got);
    // The cases do what they say: clipped rows, and values whose gradient the clip cut.
    EXPECT_EQ(got.stats[kPpoClipFraction] > 0, c.clip_active);
    EXPECT_EQ(Zeros(got.grad_values) > 0, c.clip_active && c.config.clip_value);
  }
}

TEST(PpoLoss, GaussianGradientsAreFiniteDifferencesOfTheLoss) {
  std::mt19937 gen(2);
  for (const bool squash : {false, true}) {
    for (const LossCase& c : LossCases()) {
      SCOPED_TRACE(::testing::Message() << c.name << (squash ? ", squashed" : ""));
      const LossInputs in = MakeLossInputs(gen, true, squash, 1, 8, 3, c.clip_active);
      const LossResult got = RunLoss(Device::kCpu, in, c.config);
      ExpectLossIsTheReference(in, c.config, got);
      EXPECT_EQ(got.stats[kPpoClipFraction] > 0, c.clip_active);
    }
  }
}

// With every advantage the same, normalized to 0, and no value term, the gradients are the
// entropy bonus's alone: the categorical's toward uniform, the Gaussian's -ent_coef per log_std.
TEST(PpoLoss, TheEntropyBonusAloneHasTheEntropysGradient) {
  std::mt19937 gen(3);
  PpoLossConfig c;
  c.ent_coef = 0.5;
  c.vf_coef = 0.0;
  for (const bool gaussian : {false, true}) {
    SCOPED_TRACE(gaussian ? "Gaussian" : "categorical");
    LossInputs in = MakeLossInputs(gen, gaussian, false, 1, 6, 4, true);
    in.adv.assign(in.adv.size(), 0.5f);
    const LossResult got = RunLoss(Device::kCpu, in, c);
    ExpectLossIsTheReference(in, c, got);
    EXPECT_EQ(got.stats[kPpoPolicyLoss], 0.0f);
    if (gaussian) {
      for (float g : got.grad_outputs) EXPECT_EQ(g, 0.0f);
      for (float g : got.grad_log_std) EXPECT_NEAR(g, -c.ent_coef, 1e-7);
    } else {
      double largest = 0;
      for (float g : got.grad_outputs) largest = std::max(largest, std::fabs(static_cast<double>(g)));
      EXPECT_GT(largest, 1e-3);
    }
  }
}

// Each lane's advantages are normalized by its own rows: a lane whose advantages are another's
// times 1000 plus 7 gets that lane's gradients, with the mean and the unbiased (n - 1) standard
// deviation of its own. A lane of one row has nothing to normalize by: its advantage is 0.
TEST(PpoLoss, AdvantagesAreNormalizedWithinEachLane) {
  std::mt19937 gen(4);
  const int64_t rows = 6;
  const LossInputs one = MakeLossInputs(gen, false, false, 1, rows, 4, true);
  LossInputs two = one;
  two.lanes = 2;
  for (auto* vec : {&two.outputs, &two.old_logp, &two.adv, &two.ret, &two.old_v, &two.v})
    vec->insert(vec->end(), vec->begin(), vec->end());
  two.actions.insert(two.actions.end(), one.actions.begin(), one.actions.end());
  for (int64_t i = 0; i < rows; ++i) two.adv[rows + i] = 1000.0f * one.adv[i] + 7.0f;
  const PpoLossConfig c;
  const LossResult got = RunLoss(Device::kCpu, two, c);
  for (int64_t l = 0; l < 2; ++l) {
    const LossInputs lane = two.Lane(l);
    double mean = 0, squares = 0;
    for (float a : lane.adv) mean += static_cast<double>(a) / rows;
    for (float a : lane.adv) squares += (a - mean) * (a - mean);
    EXPECT_NEAR(got.moments[2 * l], mean, 1e-12 * std::max(1.0, std::fabs(mean))) << "lane " << l;
    EXPECT_NEAR(got.moments[2 * l + 1], std::sqrt(squares / (rows - 1)), 1e-12 * std::sqrt(squares)) << "lane " << l;
    ExpectLossIsTheReference(lane, c, got.Lane(l, 2));
  }
  for (int64_t i = 0; i < rows * 4; ++i)
    EXPECT_NEAR(got.grad_outputs[rows * 4 + i], got.grad_outputs[i], 1e-5 * std::fabs(got.grad_outputs[i]) + 1e-9);

  LossInputs single = MakeLossInputs(gen, false, false, 1, 1, 4, true);
  single.adv[0] = 3.0f;
  PpoLossConfig no_entropy = c;
  no_entropy.ent_coef = 0.0;
  const LossResult alone = RunLoss(Device::kCpu, single, no_entropy);
  EXPECT_EQ(alone.moments[1], 0.0);
  for (float g : alone.grad_outputs) EXPECT_EQ(g, 0.0f);
  EXPECT_EQ(alone.stats[kPpoPolicyLoss], 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Normalizers

// A lane's running statistics on the host.
struct HostMoments {
  std::vector<double> mean, var, count;
};

HostMoments Read(const RunningMoments& m, Device device) {
  HostMoments h;
  h.mean.resize(m.lanes * m.dim);
  h.var.resize(m.lanes * m.dim);
  h.count.resize(m.lanes);
  CopyBytes(h.mean.data(), Device::kCpu, m.mean, device, h.mean.size() * sizeof(double));
  CopyBytes(h.var.data(), Device::kCpu, m.var, device, h.var.size() * sizeof(double));
  CopyBytes(h.count.data(), Device::kCpu, m.count, device, h.count.size() * sizeof(double));
  return h;
}

// Plain device arrays for RunningMoments, at Gymnasium's start.
struct MomentBuffers {
  MomentBuffers(Device device, int64_t lanes, int64_t dim)
      : mean(OnDevice(device, std::vector<double>(lanes * dim, 0.0))),
        var(OnDevice(device, std::vector<double>(lanes * dim, 1.0))),
        count(OnDevice(device, std::vector<double>(lanes, kRunningCountPrior))),
        view{mean.data(), var.data(), count.data(), lanes, dim} {}
  Buffer<double> mean, var, count;
  RunningMoments view;
};

// The mean and variance of `samples` together with RunningMeanStd's prior (1e-4 samples of mean 0
// and variance 1), in two passes: what the merges must come to.
std::pair<double, double> TwoPass(const std::vector<double>& samples) {
  const double count = kRunningCountPrior + static_cast<double>(samples.size());
  double sum = 0;
  for (double x : samples) sum += x;
  const double mean = sum / count;  // the prior's mean is 0
  double m2 = kRunningCountPrior * (1.0 + mean * mean);
  for (double x : samples) m2 += (x - mean) * (x - mean);
  return {mean, m2 / count};
}

TEST_P(PpoKernels, ObservationStatisticsAreTheTwoPassOnesOfEverythingSeen) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const int64_t lanes = 2, n = 5, dim = 3, steps = 4;
  std::mt19937 gen(5);
  MomentBuffers m(device, lanes, dim);
  auto ops = MakeOps<PolicyOps>(device, nullptr);
  std::vector<std::vector<double>> seen(lanes * dim);  // per (lane, feature)
  for (int64_t t = 0; t < steps; ++t) {
    SCOPED_TRACE(::testing::Message() << "step " << t);
    // Lane 1's observations far from lane 0's and from the prior.
    std::vector<float> obs = Uniform(gen, lanes * n * dim, -1.0f, 3.0f);
    for (int64_t i = n * dim; i < lanes * n * dim; ++i) obs[i] = 100.0f * obs[i] + 50.0f;
    for (int64_t i = 0; i < lanes * n * dim; ++i) seen[(i / (n * dim)) * dim + i % dim].push_back(obs[i]);
    Buffer<float> obs_d = OnDevice(device, obs), out(device, obs.size());
    ops->NormalizeObservations(m.view, obs_d.data(), out.data(), n, false, kNormalizerClip);
    const HostMoments got = Read(m.view, device);
    const std::vector<float> normalized = out.ToHost();
    for (int64_t l = 0; l < lanes; ++l) {
      EXPECT_EQ(got.count[l], kRunningCountPrior + static_cast<double>(n * (t + 1)));
      for (int64_t d = 0; d < dim; ++d) {
        const auto [mean, var] = TwoPass(seen[l * dim + d]);
        EXPECT_NEAR(got.mean[l * dim + d], mean, 1e-12 * std::max(1.0, std::fabs(mean))) << l << ", " << d;
        EXPECT_NEAR(got.var[l * dim + d], var, 1e-11 * var) << l << ", " << d;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t at = (l * n + i) * dim + d;
          EXPECT_NEAR(normalized[at], (obs[at] - mean) / std::sqrt(var + 1e-8), 1e-5) << at;
        }
      }
    }
  }
  // Frozen: the statistics stay as they are, bit for bit, and normalize; far out, the clip.
  const HostMoments before = Read(m.view, device);
  std::vector<float> probe = Uniform(gen, lanes * n * dim, -1.0f, 1.0f);
  probe[0] = 1e6f;
  probe[1] = -1e6f;
  Buffer<float> probe_d = OnDevice(device, probe), out(device, probe.size());
  ops->NormalizeObservations(m.view, probe_d.data(), out.data(), n, true, kNormalizerClip);
  const HostMoments after = Read(m.view, device);
  EXPECT_EQ(Bits(after.mean), Bits(before.mean));
  EXPECT_EQ(Bits(after.var), Bits(before.var));
  EXPECT_EQ(Bits(after.count), Bits(before.count));
  const std::vector<float> normalized = out.ToHost();
  EXPECT_EQ(normalized[0], 10.0f);
  EXPECT_EQ(normalized[1], -10.0f);
  for (int64_t i = 2; i < lanes * n * dim; ++i) {
    const int64_t at = (i / (n * dim)) * dim + i % dim;
    EXPECT_NEAR(normalized[i], (probe[i] - before.mean[at]) / std::sqrt(before.var[at] + 1e-8), 1e-5) << i;
  }
  // In place.
  ops->NormalizeObservations(m.view, probe_d.data(), probe_d.data(), n, true, kNormalizerClip);
  EXPECT_EQ(Bits(probe_d.ToHost()), Bits(normalized));
}

TEST_P(PpoKernels, RewardsAreScaledByTheRunningStdOfEachEnvsDiscountedReturn) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const int64_t lanes = 2, n = 3, steps = 8;
  const double gamma = 0.9;
  std::mt19937 gen(6);
  MomentBuffers m(device, lanes, 1);
  Buffer<double> returns = OnDevice(device, std::vector<double>(lanes * n, 0.0));
  const RewardScaler scaler{returns.data(), m.view, gamma};
  auto ops = MakeOps<PolicyOps>(device, nullptr);
  std::vector<double> g(lanes * n, 0.0);
  std::vector<uint8_t> done_before(lanes * n, 0);
  std::vector<std::vector<double>> seen(lanes);
  for (int64_t t = 0; t < steps; ++t) {
    SCOPED_TRACE(::testing::Message() << "step " << t);
    std::vector<float> rewards = Uniform(gen, lanes * n, -1.0f, 2.0f);
    for (int64_t i = n; i < lanes * n; ++i) rewards[i] *= 30.0f;  // lane 1's scale
    // Env 0 of each lane terminates at step 2, env 1 is truncated at step 4.
    std::vector<uint8_t> terminated(lanes * n, 0), truncated(lanes * n, 0);
    for (int64_t l = 0; l < lanes; ++l) {
      terminated[l * n] = t == 2;
      truncated[l * n + 1] = t == 4;
    }
    // G = gamma G (1 - done_prev) + r, the statistics of every G so far.
    for (int64_t i = 0; i < lanes * n; ++i) {
      g[i] = gamma * g[i] * (done_before[i] ? 0.0 : 1.0) + rewards[i];
      seen[i / n].push_back(g[i]);
      done_before[i] = terminated[i] | truncated[i];
    }
    Buffer<float> r_d = OnDevice(device, rewards), scaled(device, lanes * n);
    Buffer<uint8_t> term_d = OnDevice(device, terminated), trunc_d = OnDevice(device, truncated);
    ops->ScaleRewards(scaler, r_d.data(), term_d.data(), trunc_d.data(), scaled.data(), n, false, kNormalizerClip);
    const HostMoments got = Read(m.view, device);
    const std::vector<float> got_scaled = scaled.ToHost();
    const std::vector<double> got_g = returns.ToHost();
    for (int64_t l = 0; l < lanes; ++l) {
      const auto [mean, var] = TwoPass(seen[l]);
      EXPECT_NEAR(got.mean[l], mean, 1e-12 * std::max(1.0, std::fabs(mean))) << "lane " << l;
      EXPECT_NEAR(got.var[l], var, 1e-11 * var) << "lane " << l;
      EXPECT_EQ(got.count[l], kRunningCountPrior + static_cast<double>(n * (t + 1)));
      for (int64_t i = l * n; i < (l + 1) * n; ++i) {
        EXPECT_NEAR(got_scaled[i], rewards[i] / std::sqrt(var + 1e-8), 1e-5 * std::max(1.0f, std::fabs(got_scaled[i])));
        EXPECT_NEAR(got_g[i], done_before[i] ? 0.0 : g[i], 1e-12 * std::max(1.0, std::fabs(g[i]))) << "env " << i;
      }
    }
  }
  // Frozen: the statistics stay, each G still accumulates, and a huge reward is clipped.
  const HostMoments before = Read(m.view, device);
  const std::vector<double> g_before = returns.ToHost();
  std::vector<float> rewards(lanes * n, 1.0f);
  rewards[0] = 1e9f;
  rewards[1] = -1e9f;
  const std::vector<uint8_t> none(lanes * n, 0);
  Buffer<float> r_d = OnDevice(device, rewards), scaled(device, lanes * n);
  Buffer<uint8_t> none_d = OnDevice(device, none);
  ops->ScaleRewards(scaler, r_d.data(), none_d.data(), none_d.data(), scaled.data(), n, true, kNormalizerClip);
  const HostMoments after = Read(m.view, device);
  EXPECT_EQ(Bits(after.mean), Bits(before.mean));
  EXPECT_EQ(Bits(after.var), Bits(before.var));
  EXPECT_EQ(Bits(after.count), Bits(before.count));
  const std::vector<float> got_scaled = scaled.ToHost();
  EXPECT_EQ(got_scaled[0], 10.0f);
  EXPECT_EQ(got_scaled[1], -10.0f);
  EXPECT_NEAR(got_scaled[2], 1.0 / std::sqrt(before.var[0] + 1e-8), 1e-6);
  const std::vector<double> g_after = returns.ToHost();
  for (int64_t i = 2; i < lanes * n; ++i) EXPECT_NEAR(g_after[i], gamma * g_before[i] + 1.0, 1e-12) << i;
}

// The normalizers of lane 1 of two, saved into a checkpoint and loaded by a solo run's, go on
// with the same bits as in the batch.
TEST(Normalizers, ALanesCheckpointGoesOnAsInTheBatch) {
  const ScratchDir scratch("cugym_ppo_normalizers");
  const int64_t n = 3, dim = 2;
  std::mt19937 gen(7);
  const std::unique_ptr<PolicyOps> ops = MakeOps<PolicyOps>(Device::kCpu, nullptr);
  Normalizers batch(Device::kCpu, 2, n, dim, true, true, 0.99);
  // One step: the normalized observations, then the scaled rewards.
  auto step = [&](Normalizers& norm, const std::vector<float>& obs, const std::vector<float>& r,
                  const std::vector<uint8_t>& done) {
    std::vector<float> out_obs(obs.size()), out_r(r.size());
    ops->NormalizeObservations(norm.observation_moments(), obs.data(), out_obs.data(), n, false, kNormalizerClip);
    ops->ScaleRewards(norm.reward_scaler(), r.data(), done.data(), done.data(), out_r.data(), n, false,
                      kNormalizerClip);
    out_obs.insert(out_obs.end(), out_r.begin(), out_r.end());
    return out_obs;
  };
  for (int t = 0; t < 3; ++t)
    step(batch, Uniform(gen, 2 * n * dim, -5.0f, 5.0f), Uniform(gen, 2 * n, -1.0f, 1.0f), Flags(gen, 2 * n, 0.3));
  CheckpointWriter out;
  batch.Save(1, out);
  const std::string path = (scratch / "lane1.safetensors").string();
  WriteSafetensors(path, out.tensors(), out.metadata());
  for (const char* key :
       {"cugym.norm.obs_count", "cugym.norm.return_mean", "cugym.norm.return_var", "cugym.norm.return_count"})
    EXPECT_EQ(out.metadata().count(key), 1u) << key;
  Normalizers solo(Device::kCpu, 1, n, dim, true, true, 0.99);
  solo.Load(0, CheckpointReader(path));
  CheckpointWriter again;
  solo.Save(0, again);
  EXPECT_EQ(EncodeSafetensors(again.tensors(), again.metadata()), EncodeSafetensors(out.tensors(), out.metadata()));

  const std::vector<float> obs = Uniform(gen, 2 * n * dim, -5.0f, 5.0f), r = Uniform(gen, 2 * n, -1.0f, 1.0f);
  const std::vector<uint8_t> done = Flags(gen, 2 * n, 0.5);
  const std::vector<float> got = step(solo, LaneOf(obs, 1, 2, 1), LaneOf(r, 1, 2, 1), LaneOf(done, 1, 2, 1));
  const std::vector<float> all = step(batch, obs, r, done);
  std::vector<float> want(all.begin() + n * dim, all.begin() + 2 * n * dim);
  want.insert(want.end(), all.begin() + 2 * n * dim + n, all.end());
  EXPECT_EQ(Bits(got), Bits(want));
  CheckpointWriter solo_after, batch_after;
  solo.Save(0, solo_after);
  batch.Save(1, batch_after);
  EXPECT_EQ(EncodeSafetensors(solo_after.tensors(), solo_after.metadata()),
            EncodeSafetensors(batch_after.tensors(), batch_after.metadata()));

  // A checkpoint without the observation statistics is refused, naming what is missing; one of
  // normalizers that are off holds none of their keys.
  Normalizers rewards_only(Device::kCpu, 1, n, dim, false, true, 0.99);
  CheckpointWriter partial;
  rewards_only.Save(0, partial);
  EXPECT_EQ(partial.metadata().count("cugym.norm.obs_count"), 0u);
  const std::string partial_path = (scratch / "partial.safetensors").string();
  WriteSafetensors(partial_path, partial.tensors(), partial.metadata());
  const std::string message =
      cugym::testing::InvalidArgumentMessage([&] { solo.Load(0, CheckpointReader(partial_path)); });
  EXPECT_NE(message.find("norm.obs_mean"), std::string::npos) << message;
  EXPECT_THROW(batch.Save(2, out), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// Lanes and devices: every op on one set of inputs of `lanes` lanes.

struct Scenario {
  int64_t lanes, n = 4, steps = 6, obs_dim = 3, rows = 7;
  int actions = 5, dims = 3;
  std::vector<uint64_t> seeds;
  std::vector<float> rewards, values, next_values;       // [steps][lanes n]
  std::vector<uint8_t> terminated, truncated;            // [steps][lanes n]
  std::vector<float> obs;                                // [steps][lanes n][obs_dim]
  std::vector<float> logits, means, log_std, low, high;  // [lanes n][actions], [lanes n][dims], [lanes][dims], [dims]
  LossInputs categorical, gaussian;                      // lanes x rows
  static constexpr int64_t kSpan0 = 70, kSpan1 = 45;     // two gradient spans clipped together
  std::vector<float> grads0, grads1;                     // [lanes][kSpan0], [lanes][kSpan1]
  std::vector<int32_t> rollout_actions;                  // [steps][lanes n]

  Scenario(int64_t lanes_, uint32_t seed) : lanes(lanes_) {
    std::mt19937 gen(seed);
    const std::vector<uint64_t> all_seeds = {3, 11, 42};
    seeds.assign(all_seeds.begin(), all_seeds.begin() + lanes);
    const int64_t cells = steps * lanes * n;
    rewards = Uniform(gen, cells, -1.0f, 1.0f);
    values = Uniform(gen, cells, -2.0f, 2.0f);
    next_values = Uniform(gen, cells, -2.0f, 2.0f);
    terminated = Flags(gen, cells, 0.15);
    truncated = Flags(gen, cells, 0.15);
    obs = Uniform(gen, cells * obs_dim, -3.0f, 3.0f);
    logits = Uniform(gen, lanes * n * actions, -2.0f, 2.0f);
    means = Uniform(gen, lanes * n * dims, -1.0f, 1.0f);
    log_std = Uniform(gen, lanes * dims, -1.0f, 0.5f);
    low = {-0.5f, -1.0f, -2.0f};
    high = {0.5f, 1.0f, 2.0f};
    categorical = MakeLossInputs(gen, false, false, lanes, rows, actions, true);
    gaussian = MakeLossInputs(gen, true, false, lanes, rows, dims, true);
    // Lane 0's gradients are clipped (norm ~7.6 > 1), the others' not (~0.08).
    for (int64_t l = 0; l < lanes; ++l) {
      const float scale = l == 0 ? 1.0f : 0.01f;
      for (float g : Uniform(gen, kSpan0, -scale, scale)) grads0.push_back(g);
      for (float g : Uniform(gen, kSpan1, -scale, scale)) grads1.push_back(g);
    }
    for (int64_t i = 0; i < cells; ++i) rollout_actions.push_back(static_cast<int32_t>(gen() % actions));
  }

  // Lane l alone, as its solo run has it.
  Scenario Lane(int64_t l) const {
    Scenario s = *this;
    s.lanes = 1;
    s.seeds = {seeds[l]};
    for (auto* v : {&s.rewards, &s.values, &s.next_values, &s.obs}) *v = LaneOf(*v, steps, lanes, l);
    for (auto* v : {&s.terminated, &s.truncated}) *v = LaneOf(*v, steps, lanes, l);
    for (auto* v : {&s.logits, &s.means, &s.log_std}) *v = LaneOf(*v, 1, lanes, l);
    s.categorical = categorical.Lane(l);
    s.gaussian = gaussian.Lane(l);
    s.grads0 = LaneOf(grads0, 1, lanes, l);
    s.grads1 = LaneOf(grads1, 1, lanes, l);
    s.rollout_actions = LaneOf(rollout_actions, steps, lanes, l);
    return s;
  }
};

struct Results {
  std::vector<float> advantages, returns;                             // [steps][lanes n]
  std::vector<int32_t> actions, greedy;                               // [2][lanes n], [lanes n]
  std::vector<float> logp, greedy_logp;                               // [2][lanes n], [lanes n]
  std::vector<float> samples, env_actions, gaussian_logp;             // [2][lanes n][dims], ..., [2][lanes n]
  std::vector<float> squashed, squashed_logp, at_mean, at_mean_logp;  // [lanes n][dims], [lanes n], ...
  LossResult categorical, gaussian;
  std::vector<float> normalized, frozen, scaled;  // [steps][lanes n][obs_dim], [lanes n][obs_dim], [steps][lanes n]
  std::vector<double> obs_mean, obs_var, obs_count, g, g_mean, g_var, g_count;
  std::vector<float> clip_norms, clipped0, clipped1;     // [lanes], [lanes][kSpan0], [lanes][kSpan1]
  std::vector<float> gathered_obs, gathered_advantages;  // [lanes b][obs_dim], [lanes b]
  std::vector<int32_t> gathered_actions;                 // [lanes b]

  Results Lane(int64_t l, const Scenario& s) const {
    Results r;
    const int64_t k = s.lanes, t = s.steps;
    r.advantages = LaneOf(advantages, t, k, l);
    r.returns = LaneOf(returns, t, k, l);
    r.actions = LaneOf(actions, 2, k, l);
    r.greedy = LaneOf(greedy, 1, k, l);
    r.logp = LaneOf(logp, 2, k, l);
    r.greedy_logp = LaneOf(greedy_logp, 1, k, l);
    r.samples = LaneOf(samples, 2, k, l);
    r.env_actions = LaneOf(env_actions, 2, k, l);
    r.gaussian_logp = LaneOf(gaussian_logp, 2, k, l);
    r.squashed = LaneOf(squashed, 1, k, l);
    r.squashed_logp = LaneOf(squashed_logp, 1, k, l);
    r.at_mean = LaneOf(at_mean, 1, k, l);
    r.at_mean_logp = LaneOf(at_mean_logp, 1, k, l);
    r.categorical = categorical.Lane(l, k);
    r.gaussian = gaussian.Lane(l, k);
    r.normalized = LaneOf(normalized, t, k, l);
    r.frozen = LaneOf(frozen, 1, k, l);
    r.scaled = LaneOf(scaled, t, k, l);
    r.clip_norms = LaneOf(clip_norms, 1, k, l);
    r.clipped0 = LaneOf(clipped0, 1, k, l);
    r.clipped1 = LaneOf(clipped1, 1, k, l);
    r.gathered_obs = LaneOf(gathered_obs, 1, k, l);
    r.gathered_advantages = LaneOf(gathered_advantages, 1, k, l);
    r.gathered_actions = LaneOf(gathered_actions, 1, k, l);
    for (auto [mine, all] : {std::pair{&r.obs_mean, &obs_mean},
                             {&r.obs_var, &obs_var},
                             {&r.obs_count, &obs_count},
                             {&r.g, &g},
                             {&r.g_mean, &g_mean},
                             {&r.g_var, &g_var},
                             {&r.g_count, &g_count}})
      *mine = LaneOf(*all, 1, k, l);
    return r;
  }
};

void ExpectSameBits(const Results& a, const Results& b) {
  EXPECT_TRUE(SameBits("GAE (advantages)", a.advantages, b.advantages));
  EXPECT_TRUE(SameBits("GAE (returns)", a.returns, b.returns));
  EXPECT_TRUE(SameBits("categorical draws (actions)", a.actions, b.actions));
  EXPECT_TRUE(SameBits("argmax (greedy)", a.greedy, b.greedy));
  EXPECT_TRUE(SameBits("categorical draws (logp)", a.logp, b.logp));
  EXPECT_TRUE(SameBits("argmax (greedy_logp)", a.greedy_logp, b.greedy_logp));
  EXPECT_TRUE(SameBits("Gaussian draws (samples)", a.samples, b.samples));
  EXPECT_TRUE(SameBits("Gaussian draws (env_actions)", a.env_actions, b.env_actions));
  EXPECT_TRUE(SameBits("Gaussian draws (gaussian_logp)", a.gaussian_logp, b.gaussian_logp));
  EXPECT_TRUE(SameBits("squashed (squashed)", a.squashed, b.squashed));
  EXPECT_TRUE(SameBits("squashed (squashed_logp)", a.squashed_logp, b.squashed_logp));
  EXPECT_TRUE(SameBits("the mean (at_mean)", a.at_mean, b.at_mean));
  EXPECT_TRUE(SameBits("the mean (at_mean_logp)", a.at_mean_logp, b.at_mean_logp));
  {
    SCOPED_TRACE("categorical loss");
    ExpectSameBits(a.categorical, b.categorical);
  }
  {
    SCOPED_TRACE("Gaussian loss");
    ExpectSameBits(a.gaussian, b.gaussian);
  }
  EXPECT_TRUE(SameBits("observations (normalized)", a.normalized, b.normalized));
  EXPECT_TRUE(SameBits("frozen observations (frozen)", a.frozen, b.frozen));
  EXPECT_TRUE(SameBits("rewards (scaled)", a.scaled, b.scaled));
  for (auto [x, y] : {std::pair{&a.obs_mean, &b.obs_mean},
                      {&a.obs_var, &b.obs_var},
                      {&a.obs_count, &b.obs_count},
                      {&a.g, &b.g},
                      {&a.g_mean, &b.g_mean},
                      {&a.g_var, &b.g_var},
                      {&a.g_count, &b.g_count}})
    EXPECT_TRUE(SameBits("normalizer state", *x, *y));
  EXPECT_TRUE(SameBits("ClipJointGradNorm (norms)", a.clip_norms, b.clip_norms));
  EXPECT_TRUE(SameBits("ClipJointGradNorm (span 0)", a.clipped0, b.clipped0));
  EXPECT_TRUE(SameBits("ClipJointGradNorm (span 1)", a.clipped1, b.clipped1));
  EXPECT_TRUE(SameBits("GatherMinibatch (observations)", a.gathered_obs, b.gathered_obs));
  EXPECT_TRUE(SameBits("GatherMinibatch (actions)", a.gathered_actions, b.gathered_actions));
  EXPECT_TRUE(SameBits("GatherMinibatch (advantages)", a.gathered_advantages, b.gathered_advantages));
}

Results RunAll(Device device, const Scenario& s) {
  const std::unique_ptr<PolicyOps> ops = MakeOps<PolicyOps>(device, nullptr);
  const std::unique_ptr<RolloutOps> rollout_ops = MakeOps<RolloutOps>(device, nullptr);
  const std::unique_ptr<PpoOps> ppo_ops = MakeOps<PpoOps>(device, nullptr);
  const int64_t envs = s.lanes * s.n, cells = s.steps * envs;
  Results out;
  {
    Buffer<float> r = OnDevice(device, s.rewards), v = OnDevice(device, s.values);
    Buffer<float> nv = OnDevice(device, s.next_values);
    Buffer<uint8_t> term = OnDevice(device, s.terminated), trunc = OnDevice(device, s.truncated);
    Buffer<float> advantages(device, cells), returns(device, cells);
    rollout_ops->GaeAdvantages(GaeArrays{r.data(), term.data(), trunc.data(), v.data(), nv.data(), advantages.data(),
                                         returns.data(), s.steps, envs},
                               0.99, 0.95);
    out.advantages = advantages.ToHost();
    out.returns = returns.ToHost();
  }
  PolicyHead categorical;
  categorical.out = s.actions;
  PolicyHead gaussian;
  gaussian.out = s.dims;
  gaussian.gaussian = true;
  for (const int64_t step : {17, 18}) {
    const Draws c = SampleOn(device, categorical, s.logits, {}, {}, {}, s.lanes, s.n, step, s.seeds, false);
    out.actions.insert(out.actions.end(), c.actions.begin(), c.actions.end());
    out.logp.insert(out.logp.end(), c.log_probs.begin(), c.log_probs.end());
    const Draws g = SampleOn(device, gaussian, s.means, s.log_std, s.low, s.high, s.lanes, s.n, step, s.seeds, false);
    out.samples.insert(out.samples.end(), g.samples.begin(), g.samples.end());
    out.env_actions.insert(out.env_actions.end(), g.env_actions.begin(), g.env_actions.end());
    out.gaussian_logp.insert(out.gaussian_logp.end(), g.log_probs.begin(), g.log_probs.end());
  }
  const Draws greedy = SampleOn(device, categorical, s.logits, {}, {}, {}, s.lanes, s.n, 0, s.seeds, true);
  out.greedy = greedy.actions;
  out.greedy_logp = greedy.log_probs;
  const Draws at_mean = SampleOn(device, gaussian, s.means, s.log_std, s.low, s.high, s.lanes, s.n, 0, s.seeds, true);
  out.at_mean = at_mean.env_actions;
  out.at_mean_logp = at_mean.log_probs;
  gaussian.squash = true;
  const Draws squashed =
      SampleOn(device, gaussian, s.means, s.log_std, s.low, s.high, s.lanes, s.n, 17, s.seeds, false);
  out.squashed = squashed.env_actions;
  out.squashed_logp = squashed.log_probs;

  const PpoLossConfig config;
  out.categorical = RunLoss(device, s.categorical, config);
  out.gaussian = RunLoss(device, s.gaussian, config);

  MomentBuffers obs_m(device, s.lanes, s.obs_dim), g_m(device, s.lanes, 1);
  Buffer<double> g = OnDevice(device, std::vector<double>(envs, 0.0));
  const RewardScaler scaler{g.data(), g_m.view, 0.99};
  Buffer<float> obs = OnDevice(device, s.obs), normalized(device, s.obs.size()), frozen(device, envs * s.obs_dim);
  Buffer<float> rewards = OnDevice(device, s.rewards), scaled(device, cells);
  Buffer<uint8_t> term = OnDevice(device, s.terminated), trunc = OnDevice(device, s.truncated);
  for (int64_t t = 0; t < s.steps; ++t) {
    const int64_t row = t * envs;
    ops->NormalizeObservations(obs_m.view, obs.data() + row * s.obs_dim, normalized.data() + row * s.obs_dim, s.n,
                               false, kNormalizerClip);
    ops->ScaleRewards(scaler, rewards.data() + row, term.data() + row, trunc.data() + row, scaled.data() + row, s.n,
                      false, kNormalizerClip);
  }
  ops->NormalizeObservations(obs_m.view, obs.data(), frozen.data(), s.n, true, kNormalizerClip);
  out.normalized = normalized.ToHost();
  out.frozen = frozen.ToHost();
  out.scaled = scaled.ToHost();
  const HostMoments om = Read(obs_m.view, device), gm = Read(g_m.view, device);
  out.obs_mean = om.mean;
  out.obs_var = om.var;
  out.obs_count = om.count;
  out.g = g.ToHost();
  out.g_mean = gm.mean;
  out.g_var = gm.var;
  out.g_count = gm.count;
  {
    Buffer<float> g0 = OnDevice(device, s.grads0), g1 = OnDevice(device, s.grads1);
    GradSpans spans;
    spans.grads[0] = g0.data();
    spans.stride[0] = spans.count[0] = Scenario::kSpan0;
    spans.grads[1] = g1.data();
    spans.stride[1] = spans.count[1] = Scenario::kSpan1;
    spans.num = 2;
    Buffer<double> partials(device, s.lanes * kGradNormPartials);
    Buffer<float> norms(device, s.lanes), scale(device, s.lanes);
    ppo_ops->ClipJointGradNorm(spans, s.lanes, 1.0, partials.data(), norms.data(), scale.data());
    out.clip_norms = norms.ToHost();
    out.clipped0 = g0.ToHost();
    out.clipped1 = g1.ToHost();
  }
  {
    // The second minibatch of epoch 1 at vector step 5, from the rollout with GAE's advantages.
    const int64_t b = s.steps * s.n / 2;
    Buffer<float> obs = OnDevice(device, s.obs), logp = OnDevice(device, s.values);
    Buffer<float> values = OnDevice(device, s.next_values), adv = OnDevice(device, out.advantages);
    Buffer<float> ret = OnDevice(device, out.returns);
    Buffer<int32_t> acts = OnDevice(device, s.rollout_actions);
    Buffer<uint64_t> seeds = OnDevice(device, s.seeds);
    Buffer<StepCounters> counters = OnDevice(device, std::vector<StepCounters>{{5, 5 * envs}});
    RolloutArrays r;
    r.steps = s.steps;
    r.envs = envs;
    r.lanes = s.lanes;
    Buffer<float> bo(device, s.lanes * b * s.obs_dim), bl(device, s.lanes * b), bv(device, s.lanes * b);
    Buffer<float> ba(device, s.lanes * b), br(device, s.lanes * b);
    Buffer<int32_t> bact(device, s.lanes * b);
    GatherColumns columns;  // PPO's: the observations, actions, log-probabilities, values, advantages, returns
    columns.Add(obs.data(), bo.data(), s.obs_dim);
    columns.Add(acts.data(), bact.data(), 1);
    for (auto [from, to] : {std::pair{&logp, &bl}, {&values, &bv}, {&adv, &ba}, {&ret, &br}})
      columns.Add(from->data(), to->data(), 1);
    rollout_ops->GatherMinibatch(r, columns, b, b, counters.data(), seeds.data(), 1);
    out.gathered_obs = bo.ToHost();
    out.gathered_actions = bact.ToHost();
    out.gathered_advantages = ba.ToHost();
  }
  return out;
}

// The joint norm is the norm of every span together, in double, whatever the order of its sum, and
// only the replica above max_norm is scaled (by max_norm / (norm + 1e-6), PyTorch's clip_coef).
TEST(PpoClip, TheJointNormIsTheNormOfEverySpanAndOnlyLargeOnesAreScaled) {
  const Scenario three(3, 13);
  const Results got = RunAll(Device::kCpu, three);
  for (int64_t l = 0; l < 3; ++l) {
    double sum_sq = 0;
    for (int64_t i = 0; i < Scenario::kSpan0; ++i) sum_sq += std::pow(three.grads0[l * Scenario::kSpan0 + i], 2.0);
    for (int64_t i = 0; i < Scenario::kSpan1; ++i) sum_sq += std::pow(three.grads1[l * Scenario::kSpan1 + i], 2.0);
    const double norm = std::sqrt(sum_sq);
    EXPECT_NEAR(got.clip_norms[l], norm, 1e-6 * norm) << "lane " << l;
    const double scale = l == 0 ? 1.0 / (norm + 1e-6) : 1.0;
    ASSERT_EQ(l == 0, norm > 1.0);
    for (int64_t i = 0; i < Scenario::kSpan0; ++i)
      EXPECT_EQ(got.clipped0[l * Scenario::kSpan0 + i],
                three.grads0[l * Scenario::kSpan0 + i] * static_cast<float>(scale < 1.0 ? scale : 1.0));
  }
}

// K = 3 lanes: each lane's results are, bit for bit, those of its inputs alone with its seed (its
// draws keyed by its own seed and env indices, its advantages normalized, its gradients summed and
// its statistics kept over its own rows and envs alone). And the lanes do differ.
TEST_P(PpoKernels, EachLaneGetsTheBitsOfItsLaneAlone) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const Scenario three(3, 11);
  const Results all = RunAll(device, three);
  for (int64_t l = 0; l < 3; ++l) {
    SCOPED_TRACE(::testing::Message() << "lane " << l);
    ExpectSameBits(all.Lane(l, three), RunAll(device, three.Lane(l)));
  }
  EXPECT_NE(all.Lane(0, three).actions, all.Lane(1, three).actions);
  EXPECT_NE(Bits(all.Lane(0, three).obs_mean), Bits(all.Lane(1, three).obs_mean));
}

// Every op on this device gives the CPU's bits (trivially on the CPU; on CUDA the strict
// floating point and the fixed order of every sum make it so).
TEST_P(PpoKernels, EveryOpGivesTheCpusBits) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Scenario three(3, 12);
  ExpectSameBits(RunAll(GetParam(), three), RunAll(Device::kCpu, three));
}

// "PpoDevices/PpoKernels.*/cpu": the suite within --gtest_filter='Ppo*'.
INSTANTIATE_TEST_SUITE_P(PpoDevices, PpoKernels, ::testing::ValuesIn(nn::testing::AllDevices()),
                         nn::testing::DeviceParamName);

}  // namespace
}  // namespace cugym::agent
