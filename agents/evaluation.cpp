// Greedy evaluation (see evaluation.h).
#include "agents/evaluation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "agents/agent_ops.h"
#include "agents/policy.h"
#include "agents/q_learner.h"

namespace cugym::agent {

namespace {

// The finished episodes of `lanes` groups of envs (one group: PlayEpisodes), each group's returns
// and lengths in the order its episodes finished (by step, then env).
struct Played {
  std::vector<std::vector<double>> returns, lengths;
};

Played PlayLanes(VectorEnv& env, int64_t lanes, const std::vector<int64_t>& quota,
                 const std::function<void(uint64_t step, int32_t* actions)>& act, Buffer<int32_t>& actions) {
  const int64_t n = env.num_envs(), lane = n / lanes;
  const Device device = env.device();
  const int64_t episodes = std::accumulate(quota.begin(), quota.end(), int64_t{0});
  std::vector<int64_t> done(n, 0);
  Played played{std::vector<std::vector<double>>(lanes), std::vector<std::vector<double>>(lanes)};
  std::vector<uint8_t> term(n), trunc(n);
  std::vector<float> ret(n);
  std::vector<int32_t> len(n);
  for (uint64_t step = 0, finished = 0; static_cast<int64_t>(finished) < episodes; ++step) {
    act(step, actions.data());
    env.Step(actions.data());
    CopyBytes(term.data(), Device::kCpu, env.terminated(), device, n);
    CopyBytes(trunc.data(), Device::kCpu, env.truncated(), device, n);
    bool any = false;
    for (int64_t i = 0; i < n; ++i) any |= (term[i] | trunc[i]) != 0;
    if (!any) continue;
    CopyBytes(ret.data(), Device::kCpu, env.episode_returns(), device, n * sizeof(float));
    CopyBytes(len.data(), Device::kCpu, env.episode_lengths(), device, n * sizeof(int32_t));
    for (int64_t i = 0; i < n; ++i) {
      if (!(term[i] | trunc[i]) || done[i] >= quota[i]) continue;
      ++done[i];
      ++finished;
      played.returns[i / lane].push_back(ret[i]);
      played.lengths[i / lane].push_back(len[i]);
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

EvalResult PlayEpisodes(VectorEnv& env, const std::vector<int64_t>& quota,
                        const std::function<void(uint64_t step, int32_t* actions)>& act, Buffer<int32_t>& actions) {
  const Played played = PlayLanes(env, 1, quota, act, actions);
  return Summarize(env.spec().id, played.returns[0], played.lengths[0]);
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
  std::unique_ptr<VectorEnv> env = MakeVectorEnv(registry, policy.env_id(), n, device);
  env->set_stream(policy.native_stream());
  env->Reset(seed);
  auto ops = MakeAgentOps(device, policy.native_stream());
  Buffer<int32_t> actions(device, n);
  std::vector<int64_t> quota(n);
  for (int64_t i = 0; i < n; ++i) quota[i] = episodes / n + (i < episodes % n ? 1 : 0);
  return PlayEpisodes(
      *env, quota,
      [&](uint64_t step, int32_t* a) {
        policy.Act(env->obs(), a, n);
        if (epsilon > 0)
          ops->EpsilonGreedy(a, n, static_cast<float>(epsilon), static_cast<int>(spec.action_space.n),
                             StepKey(seed, RngStream::kExploration, step), ExploreHold{});
      },
      actions);
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
  const int64_t lanes = static_cast<int64_t>(seeds.size()), n = env.num_envs();
  const Device device = learner.backend().device();
  if (lanes != learner.online().replicas() || lanes < 1 || n % lanes != 0 ||
      static_cast<int64_t>(evaluate.size()) != lanes || episodes < 1)
    throw std::invalid_argument("EvaluateReplicas: " + std::to_string(lanes) + " seeds for " +
                                std::to_string(learner.online().replicas()) + " replicas and " + std::to_string(n) +
                                " envs");
  const int64_t m = n / lanes;
  env.ResetLanes(seeds, m);
  std::vector<int64_t> quota(n, 0);  // EvaluateModel's spread of the episodes over m envs
  for (int64_t a = 0; a < lanes; ++a)
    for (int64_t j = 0; evaluate[a] && j < m; ++j) quota[a * m + j] = episodes / m + (j < episodes % m ? 1 : 0);
  const nn::ConstBatchView obs(env.obs(), n, learner.online().in_features(), device);
  const Played played = PlayLanes(
      env, lanes, quota, [&](uint64_t, int32_t* out) { learner.Act(obs, nn::VectorView<int32_t>(out, n, device)); },
      actions);
  std::vector<EvalResult> results(lanes);
  for (int64_t a = 0; a < lanes; ++a)
    if (evaluate[a]) results[a] = Summarize(env.spec().id, played.returns[a], played.lengths[a]);
  return results;
}

// Every env of a lane plays one episode: EvaluateReplicas with each run's k-th evaluation seed.
std::vector<EvalResult> EvaluateLearnerLanes(VectorEnv& env, QLearner& learner, Buffer<int32_t>& actions,
                                             const std::vector<uint64_t>& run_seeds, int64_t k) {
  const auto lanes = static_cast<int64_t>(run_seeds.size());
  std::vector<uint64_t> seeds;
  for (uint64_t run_seed : run_seeds) seeds.push_back(EvalSeed(run_seed, k));
  return EvaluateReplicas(env, learner, actions, seeds, std::vector<bool>(lanes, true),
                          lanes > 0 ? env.num_envs() / lanes : 0);
}

EvalResult EvaluateLearner(VectorEnv& env, QLearner& learner, Buffer<int32_t>& actions, uint64_t run_seed, int64_t k) {
  const int64_t n = env.num_envs();
  const Device device = learner.backend().device();
  env.Reset(EvalSeed(run_seed, k));
  const nn::ConstBatchView obs(env.obs(), n, learner.online().in_features(), device);
  return PlayEpisodes(
      env, std::vector<int64_t>(n, 1),
      [&](uint64_t, int32_t* out) { learner.Act(obs, nn::VectorView<int32_t>(out, n, device)); }, actions);
}

}  // namespace cugym::agent
