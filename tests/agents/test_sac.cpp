// SAC (agents/off_policy/sac.h): its kernels against float64 references (the squashed Gaussian's
// log-probability, the soft Bellman target of the twin critics, the actor's and the temperature's
// gradients, Polyak targets), its config keys and refusals, lanes that train as their solo runs,
// exact resumption, a shrunk batch, model files, and learning Pendulum.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/common/checkpoint.h"
#include "agents/common/policy.h"
#include "agents/common/train_config.h"
#include "agents/off_policy/dqn.h"
#include "agents/off_policy/sac.h"
#include "agents/off_policy/sac_kernels.h"
#include "agents/off_policy/sac_ops.h"
#include "agents/on_policy/ppo.h"
#include "agents/run/config_source.h"
#include "core/memory.h"
#include "core/toml.h"
#include "tests/agents/agent_test_util.h"
#include "tests/gpu_skip.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::agent {
namespace {

using testing::Builtins;
using testing::ConfigError;
using testing::MakeError;
using testing::ScratchDir;

constexpr double kHalfLog2Pi = 0.91893853320467274178;

// log pi(a) of the squashed Gaussian for mean m, raw log-std x, noise z and the Box [low, high],
// straight from the definitions in double with the C library.
double ReferenceLogProb(const std::vector<float>& m, const std::vector<float>& x, const std::vector<float>& z,
                        const std::vector<float>& low, const std::vector<float>& high, std::vector<double>* action) {
  double lp = 0.0;
  action->clear();
  for (std::size_t k = 0; k < m.size(); ++k) {
    const double log_std = -5.0 + 3.5 * (std::tanh(static_cast<double>(x[k])) + 1.0);
    const double sigma = std::exp(log_std), u = m[k] + sigma * z[k];
    const double scale = 0.5 * (high[k] - low[k]), bias = 0.5 * (high[k] + low[k]);
    // log N(u; m, sigma) with (u - m) / sigma = z.
    lp += -0.5 * z[k] * z[k] - log_std - kHalfLog2Pi;
    lp -= std::log(scale * (1.0 - std::tanh(u) * std::tanh(u)) + 1e-6);
    action->push_back(scale * std::tanh(u) + bias);
  }
  return lp;
}

TEST(SacKernels, TheSquashedGaussianLogProbabilityIsTheChangeOfVariables) {
  const std::vector<float> low = {-2.0f, -1.0f, 0.0f}, high = {2.0f, 1.0f, 3.0f};
  const SacHead head{3, low.data(), high.data()};
  const std::vector<uint64_t> seeds = {11, 12};
  const uint32_t draws = 5;
  // Two lanes of two rows: means and raw log-stds of every sign, one mean far in tanh's tail.
  const std::vector<float> outputs = {0.3f, -1.2f, 2.5f,  0.1f,  -0.4f, 1.9f,  -0.7f, 0.0f, 6.0f, -2.0f, 0.5f,  -1.0f,
                                      1.1f, 0.2f,  -0.3f, -3.0f, 0.8f,  0.05f, -2.2f, 0.9f, 0.0f, 0.7f,  -0.6f, 2.4f};
  std::vector<float> actions(12), log_probs(4), noise(12);
  SacSample out{actions.data(), log_probs.data(), noise.data()};
  const SacKey key{seeds.data(), nullptr, &draws, 2};
  for (int64_t e = 0; e < 4; ++e) SacSampleRow(head, outputs.data(), 2, key, false, out, e);
  for (int e = 0; e < 4; ++e) {
    const std::vector<float> m(outputs.begin() + e * 6, outputs.begin() + e * 6 + 3);
    const std::vector<float> x(outputs.begin() + e * 6 + 3, outputs.begin() + e * 6 + 6);
    const std::vector<float> z(noise.begin() + e * 3, noise.begin() + e * 3 + 3);
    std::vector<double> a;
    EXPECT_NEAR(log_probs[e], ReferenceLogProb(m, x, z, low, high, &a), 1e-4) << "row " << e;
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(actions[e * 3 + k], a[k], 1e-5) << "row " << e;
      EXPECT_GE(actions[e * 3 + k], low[k]);
      EXPECT_LE(actions[e * 3 + k], high[k]);
    }
  }
  // Each lane draws with its own seed: lane 1 alone (as its solo run) draws the same noise.
  std::vector<float> solo_noise(6), solo_actions(6);
  const SacKey solo_key{seeds.data() + 1, nullptr, &draws, 2};
  for (int64_t e = 0; e < 2; ++e)
    SacSampleRow(head, outputs.data() + 12, 2, solo_key, false,
                 SacSample{solo_actions.data(), nullptr, solo_noise.data()}, e);
  EXPECT_EQ(std::vector<float>(noise.begin() + 6, noise.end()), solo_noise);
  // Another tag or draw count draws other noise; the random actions are uniform in the Box.
  std::vector<float> other(12);
  const SacKey tagged{seeds.data(), nullptr, &draws, 3};
  for (int64_t e = 0; e < 4; ++e)
    SacSampleRow(head, outputs.data(), 2, tagged, false, SacSample{actions.data(), nullptr, other.data()}, e);
  EXPECT_NE(other, noise);
  double sum = 0.0;
  std::vector<float> random(3);
  for (uint32_t step = 0; step < 2000; ++step) {
    const StepCounters counters{step, 0};
    SacSampleRow(head, nullptr, 1, SacKey{seeds.data(), &counters, nullptr, 0}, true, SacSample{random.data()}, 0);
    for (int k = 0; k < 3; ++k) {
      EXPECT_GE(random[k], low[k]);
      EXPECT_LT(random[k], high[k]);
    }
    sum += random[2];
  }
  EXPECT_NEAR(sum / 2000, 1.5, 0.06);
}

// Correlated acting noise: an AR(1) process per env and dimension, N(0, 1) at every step, with
// correlation rho from one step to the next; the random actions follow it inside the Box.
TEST(SacKernels, CorrelatedActingNoiseIsAnAr1ProcessOfUnitVariance) {
  const std::vector<float> low = {-1.0f, 0.0f}, high = {1.0f, 4.0f};
  const SacHead head{2, low.data(), high.data()};
  const std::vector<uint64_t> seeds = {4};
  const std::vector<float> outputs = {0.0f, 0.0f, 0.0f, 0.0f};  // means 0, log_std -1.5
  std::vector<float> state(2, 0.0f), actions(2);
  SacSample out;
  out.actions = actions.data();
  out.noise_state = state.data();
  out.rho = 0.9;
  double sum_sq = 0.0, sum_lag = 0.0;
  float previous = 0.0f;
  const int steps = 20000;
  for (int t = 0; t < steps; ++t) {
    const StepCounters counters{t, 0};
    SacSampleRow(head, outputs.data(), 1, SacKey{seeds.data(), &counters, nullptr, 0}, t < 100, out, 0);
    EXPECT_GE(actions[1], 0.0f);
    EXPECT_LE(actions[1], 4.0f);
    if (t >= 100) {
      sum_sq += static_cast<double>(state[0]) * state[0];
      sum_lag += static_cast<double>(state[0]) * previous;
    }
    previous = state[0];
  }
  const double var = sum_sq / (steps - 100), corr = sum_lag / sum_sq;
  EXPECT_NEAR(var, 1.0, 0.15);
  EXPECT_NEAR(corr, 0.9, 0.02);
  // The action of the last step is the squashed draw of that noise: tanh(0 + exp(-1.5) z).
  const double expected = std::tanh(std::exp(-1.5) * static_cast<double>(state[0]));
  EXPECT_NEAR(actions[0], expected, 1e-5);
}

TEST(SacKernels, TheCriticLossRegressesOntoTheSoftTwinMinimumTarget) {
  // Two lanes of three rows; lane 1's temperature differs.
  const std::vector<float> rewards = {1.0f, -0.5f, 0.0f, 2.0f, 0.25f, -1.0f};
  const std::vector<float> bootstrap = {0.99f, 0.0f, 0.99f, 0.9f, 0.99f, 0.0f};
  const std::vector<float> next_log_probs = {-1.0f, 0.5f, 2.0f, -0.3f, 0.0f, 1.0f};
  const std::vector<float> tq1 = {3.0f, 1.0f, -2.0f, 0.5f, 4.0f, 7.0f}, tq2 = {2.5f, 5.0f, -1.0f, 0.7f, 3.0f, 6.0f};
  const std::vector<float> q1 = {2.0f, 0.0f, -1.5f, 1.0f, 2.0f, -1.0f}, q2 = {2.2f, -0.4f, -2.5f, 0.0f, 3.5f, -0.5f};
  const std::vector<float> log_alpha = {std::log(0.2f), std::log(0.05f)};
  std::vector<float> g1(6), g2(6), stats(2 * kSacStats);
  std::vector<double> terms(18);
  SacCriticBatch b;
  b.rewards = rewards.data();
  b.bootstrap = bootstrap.data();
  b.next_log_probs = next_log_probs.data();
  b.target_q1 = tq1.data();
  b.target_q2 = tq2.data();
  b.q1 = q1.data();
  b.q2 = q2.data();
  b.log_alpha = log_alpha.data();
  b.grad_q1 = g1.data();
  b.grad_q2 = g2.data();
  b.stats = stats.data();
  b.row_terms = terms.data();
  b.lanes = 2;
  b.rows = 3;
  for (int64_t j = 0; j < 6; ++j) SacCriticRow(b, j);
  for (int64_t l = 0; l < 2; ++l) SacCriticReduce(b, l);
  for (int lane = 0; lane < 2; ++lane) {
    double loss1 = 0.0, loss2 = 0.0, mean_q1 = 0.0;
    for (int i = 0; i < 3; ++i) {
      const int j = lane * 3 + i;
      const double alpha = std::exp(static_cast<double>(log_alpha[lane]));
      const double y = rewards[j] + bootstrap[j] * (std::min(tq1[j], tq2[j]) - alpha * next_log_probs[j]);
      EXPECT_NEAR(g1[j], 2.0 * (q1[j] - y) / 3.0, 1e-6) << j;
      EXPECT_NEAR(g2[j], 2.0 * (q2[j] - y) / 3.0, 1e-6) << j;
      loss1 += (q1[j] - y) * (q1[j] - y) / 3.0;
      loss2 += (q2[j] - y) * (q2[j] - y) / 3.0;
      mean_q1 += q1[j] / 3.0;
    }
    EXPECT_NEAR(stats[lane * kSacStats + kSacQf1Loss], loss1, 1e-5);
    EXPECT_NEAR(stats[lane * kSacStats + kSacQf2Loss], loss2, 1e-5);
    EXPECT_NEAR(stats[lane * kSacStats + kSacQf1Values], mean_q1, 1e-6);
  }
}

// The actor's gradient against central differences of its loss, alpha log pi(a) - min(Q1, Q2)(a)
// per row (over rows), with quadratic critics Qi(a) = -sum_k c_ik (a_k - t_ik)^2 whose input
// gradients the test supplies as the critics' backward would; and the temperature's gradient.
TEST(SacKernels, TheActorAndTemperatureGradientsMatchFiniteDifferences) {
  const int dims = 2, obs_dim = 3, in = obs_dim + dims;
  const int64_t rows = 3;
  const std::vector<float> low = {-2.0f, -0.5f}, high = {2.0f, 1.5f};
  const SacHead head{dims, low.data(), high.data()};
  const std::vector<double> c1 = {0.7, 1.3}, t1 = {0.4, 0.2}, c2 = {1.1, 0.6}, t2 = {-0.3, 0.9};
  const double alpha = 0.3, target_entropy = -2.0;
  const std::vector<float> log_alpha = {static_cast<float>(std::log(alpha))};
  std::vector<float> outputs = {0.2f, -0.4f, -1.0f, 0.3f, 1.5f, 0.1f, 0.5f, -2.0f, -0.6f, 0.8f, 0.2f, -0.1f};
  const std::vector<float> noise = {0.5f, -1.2f, 1.7f, 0.3f, -0.8f, -0.1f};
  const auto row_values = [&](const float* out, const float* z, std::vector<double>* a) {
    double lp = 0.0;
    a->assign(dims, 0.0);
    for (int k = 0; k < dims; ++k) {
      const double log_std = -5.0 + 3.5 * (std::tanh(static_cast<double>(out[dims + k])) + 1.0);
      const double u = out[k] + std::exp(log_std) * z[k], t = std::tanh(u);
      const double scale = 0.5 * (high[k] - low[k]);
      lp += -0.5 * z[k] * z[k] - log_std - kHalfLog2Pi - std::log(scale * (1.0 - t * t) + 1e-6);
      (*a)[k] = scale * t + 0.5 * (high[k] + low[k]);
    }
    return lp;
  };
  const auto q = [&](const std::vector<double>& c, const std::vector<double>& t, const std::vector<double>& a) {
    double v = 0.0;
    for (int k = 0; k < dims; ++k) v -= c[k] * (a[k] - t[k]) * (a[k] - t[k]);
    return v;
  };
  const auto loss = [&](const std::vector<float>& out) {
    double sum = 0.0;
    std::vector<double> a;
    for (int64_t j = 0; j < rows; ++j) {
      const double lp = row_values(out.data() + j * 2 * dims, noise.data() + j * dims, &a);
      sum += alpha * lp - std::min(q(c1, t1, a), q(c2, t2, a));
    }
    return sum / rows;
  };
  // The batch as SacAgent fills it: log-probabilities and critic values at the draws.
  std::vector<float> log_probs(rows), q1(rows), q2(rows);
  std::vector<double> a;
  for (int64_t j = 0; j < rows; ++j) {
    log_probs[j] = static_cast<float>(row_values(outputs.data() + j * 2 * dims, noise.data() + j * dims, &a));
    q1[j] = static_cast<float>(q(c1, t1, a));
    q2[j] = static_cast<float>(q(c2, t2, a));
  }
  std::vector<float> g1(rows), g2(rows), grad(rows * 2 * dims), grad_log_alpha(1), stats(kSacStats);
  std::vector<double> terms(rows * 3);
  SacActorBatch b;
  b.outputs = outputs.data();
  b.noise = noise.data();
  b.log_probs = log_probs.data();
  b.q1 = q1.data();
  b.q2 = q2.data();
  b.log_alpha = log_alpha.data();
  b.grad_q1 = g1.data();
  b.grad_q2 = g2.data();
  b.grad_outputs = grad.data();
  b.grad_log_alpha = grad_log_alpha.data();
  b.stats = stats.data();
  b.row_terms = terms.data();
  b.obs_dim = obs_dim;
  b.target_entropy = target_entropy;
  b.lanes = 1;
  b.rows = rows;
  for (int64_t j = 0; j < rows; ++j) SacActorPickRow(b, j);
  // The critics' backward: dQi/da times their output gradients, in the action columns.
  std::vector<float> in1(rows * in, 0.0f), in2(rows * in, 0.0f);
  for (int64_t j = 0; j < rows; ++j) {
    row_values(outputs.data() + j * 2 * dims, noise.data() + j * dims, &a);
    for (int k = 0; k < dims; ++k) {
      in1[j * in + obs_dim + k] = static_cast<float>(g1[j] * -2.0 * c1[k] * (a[k] - t1[k]));
      in2[j * in + obs_dim + k] = static_cast<float>(g2[j] * -2.0 * c2[k] * (a[k] - t2[k]));
    }
    EXPECT_TRUE((g1[j] == 0.0f) != (g2[j] == 0.0f)) << "one critic per row";
  }
  b.q1_input_grad = in1.data();
  b.q2_input_grad = in2.data();
  for (int64_t j = 0; j < rows; ++j) SacActorGradRow(head, b, j);
  SacActorReduce(b, 0);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    std::vector<float> plus = outputs, minus = outputs;
    const float h = 1e-2f;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (loss(plus) - loss(minus)) / (static_cast<double>(plus[i]) - minus[i]);
    EXPECT_NEAR(grad[i], numeric, 2e-3 * std::max(1.0, std::fabs(numeric))) << "output " << i;
  }
  EXPECT_NEAR(stats[kSacActorLoss], loss(outputs), 1e-5);
  double mean_lp = 0.0;
  for (float lp : log_probs) mean_lp += lp / rows;
  // d/dlog_alpha of -exp(log_alpha) (mean log pi + target): the loss itself.
  EXPECT_NEAR(grad_log_alpha[0], -alpha * (mean_lp + target_entropy), 1e-5);
  EXPECT_NEAR(stats[kSacAlphaLoss], -alpha * (mean_lp + target_entropy), 1e-5);
  EXPECT_NEAR(stats[kSacAlpha], alpha, 1e-6);
  EXPECT_NEAR(stats[kSacEntropy], -mean_lp, 1e-5);
}

// Both target critics move towards their critics by tau after a critic step; Adam with zero
// gradients leaves the critics where they are.
// Every SAC op on random rows, as one device computes it: the draws (keyed by the step counters,
// by the draw counter, uniform, with correlated noise), the critics' inputs, the critic loss, the
// actor's pick and its gradients with the temperature's.
struct SacOpResults {
  std::vector<float> actions, log_probs, noise, random, correlated, state, keyed_by_draws, joined;
  std::vector<float> grad_q1, grad_q2, critic_stats, pick_q1, pick_q2, grad_outputs, grad_log_alpha, actor_stats;
};

SacOpResults RunSacOps(Device device) {
  constexpr int64_t kLanes = 2, kRows = 9;
  constexpr int kDims = 2, kObs = 3;
  const int64_t total = kLanes * kRows;
  std::mt19937 gen(5);
  auto uniform = [&](int64_t count, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(count);
    for (float& x : v) x = dist(gen);
    return v;
  };
  auto on = [&](const std::vector<float>& v) {
    Buffer<float> b(device, v.size());
    b.FromHost(v.data(), v.size());
    return b;
  };
  const std::unique_ptr<SacOps> ops = MakeOps<SacOps>(device, nullptr);
  Buffer<float> low = on({-2.0f, -0.5f}), high = on({2.0f, 1.5f});
  const SacHead head{kDims, low.data(), high.data()};
  Buffer<float> outputs = on(uniform(total * 2 * kDims, -1.5f, 1.5f));
  Buffer<uint64_t> seeds(device, kLanes);
  const std::vector<uint64_t> lane_seeds = {4, 77};
  seeds.FromHost(lane_seeds.data(), kLanes);
  Buffer<StepCounters> counters(device, 1);
  const StepCounters at{12, 12 * kRows};
  counters.FromHost(&at, 1);
  Buffer<uint32_t> draws(device, 1);
  const uint32_t seven = 7;
  draws.FromHost(&seven, 1);
  Buffer<float> actions(device, total * kDims), log_probs(device, total), noise(device, total * kDims);
  Buffer<float> state = on(uniform(total * kDims, -1.0f, 1.0f));
  SacOpResults out;
  SacSample draw{actions.data(), log_probs.data(), noise.data()};
  ops->SacSamplePolicy(head, outputs.data(), kLanes, kRows, SacKey{seeds.data(), counters.data(), nullptr, 0}, false,
                       draw);
  out.actions = actions.ToHost();
  out.log_probs = log_probs.ToHost();
  out.noise = noise.ToHost();
  ops->SacSamplePolicy(head, nullptr, kLanes, kRows, SacKey{seeds.data(), counters.data(), nullptr, 0}, true,
                       SacSample{actions.data()});
  out.random = actions.ToHost();
  SacSample correlated{actions.data()};
  correlated.noise_state = state.data();
  correlated.rho = 0.9;
  ops->SacSamplePolicy(head, outputs.data(), kLanes, kRows, SacKey{seeds.data(), counters.data(), nullptr, 0}, false,
                       correlated);
  out.correlated = actions.ToHost();
  out.state = state.ToHost();
  ops->SacSamplePolicy(head, outputs.data(), kLanes, kRows, SacKey{seeds.data(), nullptr, draws.data(), 2}, false,
                       SacSample{actions.data(), log_probs.data()});
  out.keyed_by_draws = actions.ToHost();

  Buffer<float> obs = on(uniform(total * kObs, -3.0f, 3.0f)), joined(device, total * (kObs + kDims));
  ops->SacJoin(obs.data(), kObs, actions.data(), kDims, total, joined.data());
  out.joined = joined.ToHost();

  Buffer<float> rewards = on(uniform(total, -1.0f, 1.0f)), bootstrap = on(uniform(total, 0.0f, 0.99f));
  Buffer<float> tq1 = on(uniform(total, -5.0f, 5.0f)), tq2 = on(uniform(total, -5.0f, 5.0f));
  Buffer<float> q1 = on(uniform(total, -5.0f, 5.0f)), q2 = on(uniform(total, -5.0f, 5.0f));
  Buffer<float> log_alpha = on({-1.2f, 0.3f}), grad_q1(device, total), grad_q2(device, total);
  Buffer<float> stats(device, kLanes * kSacStats);
  stats.Zero();
  Buffer<double> row_terms(device, total * 3);
  SacCriticBatch critic;
  critic.rewards = rewards.data();
  critic.bootstrap = bootstrap.data();
  critic.next_log_probs = log_probs.data();
  critic.target_q1 = tq1.data();
  critic.target_q2 = tq2.data();
  critic.q1 = q1.data();
  critic.q2 = q2.data();
  critic.log_alpha = log_alpha.data();
  critic.grad_q1 = grad_q1.data();
  critic.grad_q2 = grad_q2.data();
  critic.stats = stats.data();
  critic.row_terms = row_terms.data();
  critic.lanes = kLanes;
  critic.rows = kRows;
  ops->SacCriticLoss(critic);
  out.grad_q1 = grad_q1.ToHost();
  out.grad_q2 = grad_q2.ToHost();
  out.critic_stats = stats.ToHost();

  Buffer<float> in_grad1 = on(uniform(total * (kObs + kDims), -1.0f, 1.0f));
  Buffer<float> in_grad2 = on(uniform(total * (kObs + kDims), -1.0f, 1.0f));
  Buffer<float> grad_outputs(device, total * 2 * kDims), grad_log_alpha(device, kLanes);
  SacActorBatch actor;
  actor.outputs = outputs.data();
  actor.noise = noise.data();
  actor.log_probs = log_probs.data();
  actor.q1 = q1.data();
  actor.q2 = q2.data();
  actor.log_alpha = log_alpha.data();
  actor.grad_q1 = grad_q1.data();
  actor.grad_q2 = grad_q2.data();
  actor.grad_outputs = grad_outputs.data();
  actor.grad_log_alpha = grad_log_alpha.data();
  actor.stats = stats.data();
  actor.row_terms = row_terms.data();
  actor.obs_dim = kObs;
  actor.target_entropy = -2.0;
  actor.lanes = kLanes;
  actor.rows = kRows;
  ops->SacActorPick(actor);
  out.pick_q1 = grad_q1.ToHost();
  out.pick_q2 = grad_q2.ToHost();
  actor.q1_input_grad = in_grad1.data();
  actor.q2_input_grad = in_grad2.data();
  ops->SacActorGrads(head, actor);
  out.grad_outputs = grad_outputs.ToHost();
  out.grad_log_alpha = grad_log_alpha.ToHost();
  out.actor_stats = stats.ToHost();
  return out;
}

class SacOps : public ::testing::TestWithParam<Device> {};

// Every SAC op on this device gives the CPU's bits (trivially on the CPU; on CUDA the strict
// floating point, cugym's own exp, log and tanh and the fixed order of every sum make it so). A
// failure names the op and its first differing element.
TEST_P(SacOps, EveryOpGivesTheCpusBits) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const SacOpResults got = RunSacOps(GetParam()), want = RunSacOps(Device::kCpu);
  using testing::SameBits;
  EXPECT_TRUE(SameBits("SacSamplePolicy (actions)", got.actions, want.actions));
  EXPECT_TRUE(SameBits("SacSamplePolicy (log_probs)", got.log_probs, want.log_probs));
  EXPECT_TRUE(SameBits("SacSamplePolicy (noise)", got.noise, want.noise));
  EXPECT_TRUE(SameBits("SacSamplePolicy (uniform)", got.random, want.random));
  EXPECT_TRUE(SameBits("SacSamplePolicy (correlated)", got.correlated, want.correlated));
  EXPECT_TRUE(SameBits("SacSamplePolicy (noise state)", got.state, want.state));
  EXPECT_TRUE(SameBits("SacSamplePolicy (keyed by draws)", got.keyed_by_draws, want.keyed_by_draws));
  EXPECT_TRUE(SameBits("SacJoin", got.joined, want.joined));
  EXPECT_TRUE(SameBits("SacCriticLoss (grad_q1)", got.grad_q1, want.grad_q1));
  EXPECT_TRUE(SameBits("SacCriticLoss (grad_q2)", got.grad_q2, want.grad_q2));
  EXPECT_TRUE(SameBits("SacCriticLoss (stats)", got.critic_stats, want.critic_stats));
  EXPECT_TRUE(SameBits("SacActorPick (grad_q1)", got.pick_q1, want.pick_q1));
  EXPECT_TRUE(SameBits("SacActorPick (grad_q2)", got.pick_q2, want.pick_q2));
  EXPECT_TRUE(SameBits("SacActorGrads (grad_outputs)", got.grad_outputs, want.grad_outputs));
  EXPECT_TRUE(SameBits("SacActorGrads (grad_log_alpha)", got.grad_log_alpha, want.grad_log_alpha));
  EXPECT_TRUE(SameBits("SacActorGrads (stats)", got.actor_stats, want.actor_stats));
  // The draws do draw: rows differ, and the uniform ones stay in the Box.
  EXPECT_NE(want.actions[0], want.actions[2]);
  for (std::size_t i = 0; i < want.random.size(); ++i) EXPECT_LE(std::abs(want.random[i]), 2.0f);
}

// "SacDevices/SacOps.*/cpu": the suite within --gtest_filter='Sac*'.
INSTANTIATE_TEST_SUITE_P(SacDevices, SacOps, ::testing::ValuesIn(nn::testing::AllDevices()),
                         nn::testing::DeviceParamName);

TEST(SacLearner, PolyakAveragesBothTargets) {
  SacLearnerOptions o;
  o.obs_dim = 3;
  o.action_dim = 1;
  o.hidden_sizes = {8};
  o.max_batch = 4;
  o.seed = 9;
  SacLearner learner(nn::MakeBackend(Device::kCpu), o);
  std::vector<float> old_target1 = ToHost(learner.target_q1().parameters());
  const std::vector<float> old_target2 = ToHost(learner.target_q2().parameters());
  EXPECT_EQ(old_target1, ToHost(learner.q1().parameters()));  // the targets start as copies
  // Move the critics away from their targets, then step with zero gradients.
  learner.q1().Initialize(21);
  learner.q2().Initialize(22);
  const std::vector<float> q1 = ToHost(learner.q1().parameters()), q2 = ToHost(learner.q2().parameters());
  const std::vector<float> x(4 * 4, 0.5f);
  for (nn::Mlp* critic : {&learner.q1(), &learner.q2()}) {
    critic->ForwardTrain(nn::ConstBatchView(x.data(), 4, 4, Device::kCpu));
    nn::BatchView dy = critic->OutputGrad();
    std::fill(dy.data(), dy.data() + dy.size(), 0.0f);
  }
  learner.StepCritics(0.25f);
  EXPECT_EQ(ToHost(learner.q1().parameters()), q1);
  const std::vector<float> target1 = ToHost(learner.target_q1().parameters()),
                           target2 = ToHost(learner.target_q2().parameters());
  for (std::size_t i = 0; i < q1.size(); ++i) {
    EXPECT_NEAR(target1[i], 0.25 * q1[i] + 0.75 * old_target1[i], 1e-6) << i;
    EXPECT_NEAR(target2[i], 0.25 * q2[i] + 0.75 * old_target2[i], 1e-6) << i;
  }
}

TEST(SacConfig, ShippedConfigsAreTheFilesAndEachEnvHasItsDefault) {
  for (const char* id : {"Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3"}) {
    const ShippedConfig* shipped = FindShippedConfig(id, "sac");
    ASSERT_NE(shipped, nullptr) << id;
    std::ifstream in(std::string(CUGYM_SOURCE_DIR) + "/" + shipped->path, std::ios::binary);
    EXPECT_EQ(std::string(shipped->toml), std::string(std::istreambuf_iterator<char>(in), {})) << shipped->path;
    TrainConfig config;
    config.Apply(ParseToml(shipped->toml, shipped->path));
    EXPECT_NO_THROW(config.Validate());
    EXPECT_TRUE(config.sac());
  }
  // The Box envs' defaults, as docs/sac.md ("Which agent for which env") chooses them.
  EXPECT_EQ(FindShippedConfig("Pendulum-v1", ""), FindShippedConfig("Pendulum-v1", "sac"));
  EXPECT_EQ(FindShippedConfig("MountainCarContinuous-v0", ""), FindShippedConfig("MountainCarContinuous-v0", "sac"));
  EXPECT_EQ(FindShippedConfig("LunarLanderContinuous-v3", ""), FindShippedConfig("LunarLanderContinuous-v3", "ppo"));
  // An env's default is the first config listed for it, and DQN's wherever one ships.
  std::set<std::string> seen;
  for (int i = 0; i < kNumShippedConfigs; ++i) {
    TrainConfig config;
    config.Apply(ParseToml(kShippedConfigs[i].toml, kShippedConfigs[i].path));
    if (!seen.insert(config.env_id).second) continue;
    EXPECT_EQ(FindShippedConfig(config.env_id, ""), &kShippedConfigs[i]) << config.env_id;
    const ShippedConfig* dqn = FindShippedConfig(config.env_id, "dqn");
    if (dqn != nullptr) {
      EXPECT_EQ(FindShippedConfig(config.env_id, ""), dqn) << config.env_id;
    }
  }
}

TEST(SacConfig, ItsKeysReadAndEachAgentRefusesTheOthers) {
  const std::string sac = "algo = \"sac\"\nenv_id = \"Pendulum-v1\"\n";
  EXPECT_EQ(ConfigError(sac + "policy_lr = 1e-3\npolicy_frequency = 1\nalpha = 0.1\nautotune = false\n"
                              "target_entropy_per_dim = -0.5\nbuffer_size = 1000\nbatch_size = 64\ntau = 0.01\n"
                              "learning_starts = 100\nreplay_ratio = 0.5\n"),
            "");
  EXPECT_EQ(ConfigError(sac + "policy_frequency = 0"), "policy_frequency must be in 1..1000, got 0");
  EXPECT_EQ(ConfigError(sac + "alpha = 0"), "alpha must be in (0, 100], got 0");
  EXPECT_EQ(ConfigError(sac + "double_dqn = true"),
            "double_dqn is a DQN or PQN key, which SAC does not read (algo is \"sac\"), got true");
  EXPECT_EQ(ConfigError(sac + "clip_coef = 0.1"), "clip_coef is a PPO key (algo = \"ppo\") (algo is \"sac\"), got 0.1");
  EXPECT_EQ(ConfigError("alpha = 0.5"), "alpha is a SAC key (algo = \"sac\") (algo is \"dqn\"), got 0.5");
  EXPECT_EQ(ConfigError("algo = \"ppo\"\nnum_envs = 4\nnum_steps = 128\nnum_minibatches = 4\npolicy_lr = 0.01"),
            "policy_lr is a SAC key (algo = \"sac\") (algo is \"ppo\"), got 0.01");
  EXPECT_EQ(ConfigError("algo = \"td3\""), "algo must be \"dqn\", \"pqn\", \"ppo\" or \"sac\", got \"td3\"");
  // A config.toml written back (every key listed) reads again.
  TrainConfig config;
  config.Apply(ParseToml(sac, "c.toml"));
  TrainConfig again;
  again.Apply(ParseToml(config.ToToml(), "config.toml"));
  EXPECT_NO_THROW(again.Validate());
}

std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Small: 2 envs per lane, learning from step 40 with 2 critic updates per vector step, the actor
// every second one.
TrainConfig SmallConfig() {
  TrainConfig c;
  c.algo = "sac";
  c.env_id = "Pendulum-v1";
  c.num_envs = 2;
  c.total_steps = 100000;
  c.hidden_sizes = {16, 16};
  c.buffer_size = 400;
  c.batch_size = 16;
  c.learning_starts = 40;
  c.replay_ratio = 1.0;
  c.tau = 0.05;
  c.learning_rate = 1e-3;
  c.policy_lr = 1e-3;
  c.eval_episodes = 3;
  return c;
}

// A small PPO run on the same env, whose files SAC must refuse.
TrainConfig SmallPpoConfig() {
  TrainConfig c;
  c.algo = "ppo";
  c.env_id = "Pendulum-v1";
  c.num_envs = 4;
  c.num_steps = 32;
  c.num_minibatches = 4;
  c.hidden_sizes = {16, 16};
  return c;
}

class SacLanes : public ::testing::TestWithParam<bool> {};

// Each lane of a batch of three gives its solo run's model file, checkpoint, metrics row and
// evaluation, bit for bit, eager and through the graph path (which replays the learning iterations).
TEST_P(SacLanes, EachLaneTrainsAsItsSoloRun) {
  const bool graph = GetParam();
  TrainConfig config = SmallConfig();
  config.noise_correlation = graph ? 0.9 : 0.0;  // each lane's correlated acting noise, too
  const std::vector<uint64_t> seeds = {3, 5, 7};
  ScratchDir dir("sac_lanes");
  SacAgent batch(Builtins(), config, Device::kCpu, seeds);
  batch.set_iteration_graph_on_cpu(graph);
  const int iterations = 30;  // 20 before learning starts, 10 learning
  for (int i = 0; i < iterations; ++i) batch.Iterate();
  const LoopState loop{1.5, 7.0};
  for (int lane = 0; lane < 3; ++lane) {
    SacAgent solo(Builtins(), config, Device::kCpu, {seeds[lane]});
    solo.set_iteration_graph_on_cpu(graph);
    for (int i = 0; i < iterations; ++i) solo.Iterate();
    batch.SaveModel(lane, (dir / "batch.safetensors").string());
    solo.SaveModel(0, (dir / "solo.safetensors").string());
    EXPECT_EQ(FileBytes(dir / "batch.safetensors"), FileBytes(dir / "solo.safetensors")) << "lane " << lane;
    batch.SaveCheckpoint(lane, (dir / "batch.ckpt").string(), loop);
    solo.SaveCheckpoint(0, (dir / "solo.ckpt").string(), loop);
    EXPECT_EQ(FileBytes(dir / "batch.ckpt"), FileBytes(dir / "solo.ckpt")) << "lane " << lane;
    const MetricsRow a = batch.Progress(lane, 1.0, 100, loop), b = solo.Progress(0, 1.0, 100, loop);
    EXPECT_FALSE(std::isnan(a.Get("qf1_loss")));
    EXPECT_FALSE(std::isnan(a.Get("actor_loss")));
    EXPECT_EQ(a.Get("qf1_loss"), b.Get("qf1_loss"));
    EXPECT_EQ(a.Get("actor_loss"), b.Get("actor_loss"));
    EXPECT_EQ(a.Get("alpha"), b.Get("alpha"));
    EXPECT_EQ(batch.Evaluate(lane, 0).mean_return, solo.Evaluate(0, 0).mean_return);
  }
  // The graph path replays what it captured: the same run as the eager one.
  if (graph) {
    SacAgent eager(Builtins(), config, Device::kCpu, {seeds[0]});
    for (int i = 0; i < iterations; ++i) eager.Iterate();
    eager.SaveModel(0, (dir / "eager.safetensors").string());
    batch.SaveModel(0, (dir / "graph.safetensors").string());
    EXPECT_EQ(FileBytes(dir / "eager.safetensors"), FileBytes(dir / "graph.safetensors"));
    EXPECT_TRUE(batch.replays_iteration_graph());
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, SacLanes, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "Graph" : "Eager"); });

// A run resumed from its checkpoint goes on as if it had never stopped: networks, temperature,
// Adam, the replay memory and its draws, envs and the policy's draws.
TEST(SacAgent, AResumedRunGoesOnExactly) {
  ScratchDir dir("sac_resume");
  TrainConfig config = SmallConfig();
  config.noise_correlation = 0.8;  // its state is in the checkpoint
  SacAgent whole(Builtins(), config, Device::kCpu);
  for (int i = 0; i < 25; ++i) whole.Iterate();
  whole.SaveCheckpoint(0, (dir / "half.ckpt").string(), LoopState{2.0, -900.0});
  for (int i = 0; i < 10; ++i) whole.Iterate();
  SacAgent resumed(Builtins(), config, Device::kCpu);
  const std::vector<LoopState> loops = resumed.LoadCheckpoints({(dir / "half.ckpt").string()});
  EXPECT_EQ(loops.front().wall_time, 2.0);
  EXPECT_EQ(loops.front().last_eval_return, -900.0);
  EXPECT_EQ(resumed.global_step(), 25 * 2);
  for (int i = 0; i < 10; ++i) resumed.Iterate();
  whole.SaveCheckpoint(0, (dir / "whole.ckpt").string(), LoopState{});
  resumed.SaveCheckpoint(0, (dir / "resumed.ckpt").string(), LoopState{});
  EXPECT_EQ(FileBytes(dir / "whole.ckpt"), FileBytes(dir / "resumed.ckpt"));

  // Without the replay memory, a resumed run refills it before it learns again.
  TrainConfig no_replay = config;
  no_replay.save_replay = false;
  SacAgent light(Builtins(), no_replay, Device::kCpu);
  for (int i = 0; i < 25; ++i) light.Iterate();
  light.SaveCheckpoint(0, (dir / "light.ckpt").string(), LoopState{});
  SacAgent refilled(Builtins(), no_replay, Device::kCpu);
  refilled.LoadCheckpoints({(dir / "light.ckpt").string()});
  const std::vector<float> before = ToHost(refilled.learner().actor().parameters());
  for (int i = 0; i < 20; ++i) refilled.Iterate();  // 40 new transitions: learning_starts
  EXPECT_EQ(ToHost(refilled.learner().actor().parameters()), before);
  refilled.Iterate();
  EXPECT_NE(ToHost(refilled.learner().actor().parameters()), before);
}

// The shared optimizer keys reach SAC's three optimizers: anneal_lr, optimizer, max_grad_norm and
// layer_norm each change the run.
TEST(SacAgent, TheSharedOptimizerKeysChangeItsRun) {
  ScratchDir dir("sac_optimizer_keys");
  const auto model = [&](const TrainConfig& c, const std::string& name) {
    SacAgent agent(Builtins(), c, Device::kCpu);
    for (int i = 0; i < 30; ++i) agent.Iterate();
    agent.SaveModel(0, (dir / name).string());
    return FileBytes(dir / name);
  };
  TrainConfig c = SmallConfig();
  c.total_steps = 100;
  const std::string plain = model(c, "plain.safetensors");
  for (int change = 0; change < 4; ++change) {
    TrainConfig changed = c;
    if (change == 0) changed.anneal_lr = true;
    if (change == 1) changed.optimizer = "radam";
    if (change == 2) changed.max_grad_norm = 0.01;
    if (change == 3) changed.layer_norm = true;
    EXPECT_NE(model(changed, "changed.safetensors"), plain) << "change " << change;
  }
}

// Lanes kept from a batch go on as they would have in it (as their solo runs).
TEST(SacAgent, AShrunkBatchGoesOnAsItsSoloRuns) {
  ScratchDir dir("sac_keep");
  TrainConfig config = SmallConfig();
  config.noise_correlation = 0.8;
  SacAgent batch(Builtins(), config, Device::kCpu, {3, 5, 7});
  for (int i = 0; i < 25; ++i) batch.Iterate();
  std::unique_ptr<Agent> kept = batch.Keep({2, 0});
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->seeds(), (std::vector<uint64_t>{7, 3}));
  for (int i = 0; i < 5; ++i) kept->Iterate();
  for (int lane = 0; lane < 2; ++lane) {
    SacAgent solo(Builtins(), config, Device::kCpu, {kept->seeds()[lane]});
    for (int i = 0; i < 30; ++i) solo.Iterate();
    kept->SaveModel(lane, (dir / "kept.safetensors").string());
    solo.SaveModel(0, (dir / "solo.safetensors").string());
    EXPECT_EQ(FileBytes(dir / "kept.safetensors"), FileBytes(dir / "solo.safetensors")) << "lane " << lane;
  }
}

// A lane's model file, evaluated by `cugym eval`'s EvaluateModel, plays as the agent's own final
// evaluation of that lane (tanh of the means, rescaled), and loads back into an agent.
TEST(SacAgent, ItsModelFileActsAsItsEvaluation) {
  ScratchDir dir("sac_model");
  const TrainConfig config = SmallConfig();
  SacAgent batch(Builtins(), config, Device::kCpu, {3, 5});
  for (int i = 0; i < 25; ++i) batch.Iterate();
  const std::vector<EvalResult> own = batch.EvaluateModels({1}, 6, 3, 1000);
  batch.SaveModel(1, (dir / "model.safetensors").string());
  const EvalResult file =
      EvaluateModel(Builtins(), (dir / "model.safetensors").string(), 6, 3, 5 + 1000, Device::kCpu, 0.0);
  EXPECT_EQ(file.episodes, 6);
  EXPECT_EQ(file.mean_return, own.front().mean_return);
  EXPECT_EQ(file.min_return, own.front().min_return);
  SacAgent other(Builtins(), config, Device::kCpu, {9});
  other.LoadModel(0, (dir / "model.safetensors").string());
  other.SaveModel(0, (dir / "again.safetensors").string());
  const SafetensorsFile a = ReadSafetensors((dir / "model.safetensors").string());
  const SafetensorsFile b = ReadSafetensors((dir / "again.safetensors").string());
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) EXPECT_EQ(a.tensors[i].data, b.tensors[i].data);
  EXPECT_EQ(a.metadata.at("cugym.algo"), "sac");
  EXPECT_EQ(a.metadata.at("cugym.log_std"), "state");
  // A PPO agent does not take it, nor does a SAC agent a PPO policy.
  PpoAgent ppo_agent(Builtins(), SmallPpoConfig(), Device::kCpu);
  EXPECT_THROW(ppo_agent.LoadModel(0, (dir / "model.safetensors").string()), std::invalid_argument);
  ppo_agent.SaveModel(0, (dir / "ppo.safetensors").string());
  EXPECT_THROW(other.LoadModel(0, (dir / "ppo.safetensors").string()), std::invalid_argument);
}

TEST(SacAgent, RefusesWhatDoesNotFit) {
  TrainConfig c = SmallConfig();
  c.env_id = "CartPole-v1";
  EXPECT_EQ(MakeError(c), "SAC needs a flat Box of actions, but CartPole-v1 has Discrete(2) actions");
  c = SmallConfig();
  c.conv_channels = 8;
  EXPECT_EQ(MakeError(c), "conv_channels: SAC's networks take flat observations (set it to 0)");
  EXPECT_THROW(DqnAgent(Builtins(), SmallConfig(), Device::kCpu), std::invalid_argument);
  // A SAC checkpoint is not resumed as PPO, nor a PPO one as SAC.
  ScratchDir dir("sac_refuse");
  SacAgent sac(Builtins(), SmallConfig(), Device::kCpu);
  sac.SaveCheckpoint(0, (dir / "sac.ckpt").string(), LoopState{});
  PpoAgent ppo_agent(Builtins(), SmallPpoConfig(), Device::kCpu);
  try {
    ppo_agent.LoadCheckpoints({(dir / "sac.ckpt").string()});
    ADD_FAILURE() << "a SAC checkpoint resumed as PPO";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sac"), std::string::npos) << e.what();
  }
  ppo_agent.SaveCheckpoint(0, (dir / "ppo.ckpt").string(), LoopState{});
  EXPECT_THROW(sac.LoadCheckpoints({(dir / "ppo.ckpt").string()}), std::invalid_argument);
}

// 64-64 networks, one env, a gradient step per env step: Pendulum's swing-up is learnt within
// 8,000 steps; a bounded check, not the benchmark (docs/sac.md has the spread over seeds).
// On CUDA the learning iterations replayed from their graph train the bytes the eager ones do
// (correlated acting noise, an actor step after every critic update).
TEST(SacCuda, GraphReplayGivesTheEagerWeights) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_sac_cuda_graph");
  TrainConfig config = SmallConfig();
  config.total_steps = 400;
  config.policy_frequency = 1;
  config.noise_correlation = 0.9;
  for (bool graph : {true, false}) {
    config.cuda_graph = graph;
    testing::SoloRun<SacAgent> run(Builtins(), config, Device::kCuda);
    run.TrainQuietly();
    EXPECT_EQ(run->replays_iteration_graph(), graph);
    run.SaveModel((dir / (graph ? "graph.safetensors" : "eager.safetensors")).string());
  }
  std::ifstream graph(dir / "graph.safetensors", std::ios::binary), eager(dir / "eager.safetensors", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(graph), {}),
            std::string(std::istreambuf_iterator<char>(eager), {}));
}

TEST(SacAgent, LearnsPendulum) {
  TrainConfig c = SmallConfig();
  c.num_envs = 1;
  c.hidden_sizes = {64, 64};
  c.buffer_size = 20000;
  c.batch_size = 128;
  c.learning_starts = 1000;
  c.tau = 0.005;
  c.policy_frequency = 1;
  c.total_steps = 8000;
  c.eval_episodes = 10;
  testing::SoloRun<SacAgent> run(Builtins(), c, Device::kCpu);
  run.TrainQuietly();
  EXPECT_GE(run.Evaluate(0).mean_return, -400.0);
}

}  // namespace
}  // namespace cugym::agent
