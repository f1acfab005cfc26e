// Greedy evaluation (see evaluation.h).
#include "agents/common/evaluation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "agents/common/episode_ops.h"
#include "agents/common/explore_ops.h"
#include "agents/common/policy.h"
#include "agents/common/q_learner.h"

namespace cugym::agent {

namespace {

struct Played {
  std::vector<std::vector<double>> returns, lengths;
};

// The finished episodes of `lanes` groups of envs (EvaluateLanes), each group's returns
// and lengths in the order its episodes finished (by step, then env). The envs record their
// episodes on the device (RecordEvalEpisode), so a step reads nothing back: on CUDA the host asks
// for the count every kCheckEvery steps (each ask waits for the device), and stepping on a few
// steps past the last episode changes nothing recorded. On the CPU it asks every step.
constexpr int64_t kCheckEvery = 8;

Played PlayLanes(VectorEnv& env, EpisodeOps& ops, int64_t lanes, const std::vector<int64_t>& quota,
                 const std::function<void(uint64_t step)>& act) {
  const int64_t n = env.num_envs(), lane = n / lanes;
  const Device device = env.device();
  std::vector<int64_t> first(n);
  int64_t episodes = 0;
  for (int64_t i = 0; i < n; ++i) {
    first[i] = episodes;
    episodes += quota[i];
  }
  Buffer<int64_t> first_dev(device, n), quota_dev(device, n), done(device, n), steps(device, episodes);
  Buffer<float> returns(device, episodes);
  Buffer<int32_t> lengths(device, episodes);
  Buffer<unsigned long long> recorded(device, 1);
  first_dev.FromHost(first.data(), n);
  quota_dev.FromHost(quota.data(), n);
  done.Zero();
  recorded.Zero();
  const EvalRecord record{first_dev.data(), quota_dev.data(), done.data(),
                          returns.data(),   lengths.data(),   steps.data()};
  const int64_t check_every = device == Device::kCpu ? 1 : kCheckEvery;
  for (int64_t step = 0; episodes > 0; ++step) {
    act(static_cast<uint64_t>(step));
    ops.RecordEvalEpisodes(record, env.terminated(), env.truncated(), env.episode_returns(), env.episode_lengths(), n,
                           step, recorded.data());
    if ((step + 1) % check_every == 0 && recorded.ToHost()[0] == static_cast<unsigned long long>(episodes)) break;
  }
  // Each lane's episodes by step, then env: the order of a host that read every step.
  const std::vector<int64_t> ended = steps.ToHost();
  const std::vector<float> ret = returns.ToHost();
  const std::vector<int32_t> len = lengths.ToHost();
  Played played{std::vector<std::vector<double>>(lanes), std::vector<std::vector<double>>(lanes)};
  for (int64_t l = 0; l < lanes; ++l) {
    std::vector<std::pair<int64_t, int64_t>> order;  // (step, slot): slots rise with the env
    for (int64_t slot = first[l * lane]; slot < (l + 1 < lanes ? first[(l + 1) * lane] : episodes); ++slot)
      order.emplace_back(ended[slot], slot);
    std::sort(order.begin(), order.end());
    for (const auto& [step, slot] : order) {
      played.returns[l].push_back(ret[slot]);
      played.lengths[l].push_back(len[slot]);
    }
  }
  return played;
}

EvalResult Summarize(const std::string& env_id, const std::vector<double>& returns,
                     const std::vector<double>& lengths) {
  EvalResult r;
  r.env_id = env_id;
  r.episodes = static_cast<int64_t>(returns.size());
  const double count = static_cast<double>(returns.size());
  r.mean_return = std::accumulate(returns.begin(), returns.end(), 0.0) / count;
  double var = 0;
  for (double x : returns) var += (x - r.mean_return) * (x - r.mean_return);
  r.std_return = std::sqrt(var / count);
  r.min_return = *std::min_element(returns.begin(), returns.end());
  r.max_return = *std::max_element(returns.begin(), returns.end());
  r.mean_length = std::accumulate(lengths.begin(), lengths.end(), 0.0) / count;
  return r;
}

}  // namespace

std::vector<EvalResult> EvaluateLanes(VectorEnv& env, EpisodeOps& ops, const std::vector<uint64_t>& seeds,
                                      const std::vector<bool>& evaluate, int64_t episodes,
                                      const std::function<void(uint64_t step)>& act) {
  const int64_t lanes = static_cast<int64_t>(seeds.size()), n = env.num_envs();
  if (lanes < 1 || n % lanes != 0 || static_cast<int64_t>(evaluate.size()) != lanes || episodes < 1)
    throw std::invalid_argument("EvaluateLanes: " + std::to_string(lanes) + " lanes of " + std::to_string(n) +
                                " envs, " + std::to_string(episodes) + " episodes");
  const int64_t m = n / lanes;
  ResetInLanes(env, seeds, m);
  std::vector<int64_t> quota(n, 0);
  for (int64_t a = 0; a < lanes; ++a)
    for (int64_t j = 0; evaluate[a] && j < m; ++j) quota[a * m + j] = episodes / m + (j < episodes % m ? 1 : 0);
  const Played played = PlayLanes(env, ops, lanes, quota, act);
  std::vector<EvalResult> results(lanes);
  for (int64_t a = 0; a < lanes; ++a)
    if (evaluate[a]) results[a] = Summarize(env.spec().id, played.returns[a], played.lengths[a]);
  return results;
}

EvalResult EvaluateModel(const Registry& registry, const std::string& model_path, int64_t episodes, int64_t num_envs,
                         uint64_t seed, Device device, double epsilon, const std::string& env_id) {
  if (episodes <= 0) throw std::invalid_argument("episodes must be positive, got " + std::to_string(episodes));
  if (num_envs <= 0) throw std::invalid_argument("num_envs must be positive, got " + std::to_string(num_envs));
  if (!(epsilon >= 0 && epsilon <= 1))
    throw std::invalid_argument("epsilon must be in [0, 1], got " + std::to_string(epsilon));
  const int64_t n = std::min(num_envs, episodes);
  GreedyPolicy policy(registry, model_path, env_id, n, device);
  const EnvSpec& spec = registry.Get(policy.env_id()).spec;
  if (epsilon > 0 && policy.continuous())
    throw std::invalid_argument("epsilon-greedy needs discrete actions, but " + policy.env_id() + " has " +
                                spec.action_space.ToString() + " actions: evaluate it with epsilon 0");
  std::unique_ptr<VectorEnv> env = MakeVectorEnv(registry, policy.env_id(), n, device);
  env->set_stream(policy.native_stream());
  const auto ops = MakeOps<EpisodeOps>(device, policy.native_stream());
  if (policy.continuous()) {
    Buffer<float> actions(device, n * policy.action_dim());
    return EvaluateLanes(*env, *ops, {seed}, {true}, episodes,
                         [&](uint64_t) {
                           policy.Act(env->obs(), actions.data(), n);
                           env->Step(actions.data());
                         })
        .front();
  }
  Buffer<int32_t> actions(device, n);
  const auto explore_ops = MakeOps<ExploreOps>(device, policy.native_stream());
  return EvaluateLanes(*env, *ops, {seed}, {true}, episodes,
                       [&](uint64_t step) {
                         policy.Act(env->obs(), actions.data(), n);
                         if (epsilon > 0)
                           explore_ops->EpsilonGreedy(actions.data(), n, static_cast<float>(epsilon),
                                                      static_cast<int>(spec.action_space.n),
                                                      StepKey(seed, RngStream::kExploration, step), ExploreHold{});
                         env->Step(actions.data());
                       })
      .front();
}

namespace {

// The k-th evaluation's env seed of a run.
uint64_t EvalSeed(uint64_t run_seed, int64_t k) {
  return run_seed * 0x9E3779B97F4A7C15ull + 0xE7A1u + static_cast<uint64_t>(k);
}

}  // namespace

std::vector<EvalResult> EvaluateReplicas(VectorEnv& env, QLearner& learner, Buffer<int32_t>& actions,
                                         const std::vector<uint64_t>& seeds, const std::vector<bool>& evaluate,
                                         int64_t episodes) {
  const int64_t n = env.num_envs();
  const Device device = learner.backend().device();
  if (static_cast<int64_t>(seeds.size()) != learner.online().replicas())
    throw std::invalid_argument("EvaluateReplicas: " + std::to_string(seeds.size()) + " seeds for " +
                                std::to_string(learner.online().replicas()) + " replicas");
  const nn::ConstBatchView obs(env.obs(), n, learner.online().in_features(), device);
  const auto ops = MakeOps<EpisodeOps>(device, learner.backend().native_stream());
  return EvaluateLanes(env, *ops, seeds, evaluate, episodes, [&](uint64_t) {
    learner.Act(obs, nn::VectorView<int32_t>(actions.data(), n, device));
    env.Step(actions.data());
  });
}

std::vector<uint64_t> TrainingEvalSeeds(const std::vector<uint64_t>& run_seeds, int64_t k) {
  std::vector<uint64_t> seeds;
  for (uint64_t run_seed : run_seeds) seeds.push_back(EvalSeed(run_seed, k));
  return seeds;
}

}  // namespace cugym::agent
