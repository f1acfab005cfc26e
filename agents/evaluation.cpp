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

EvalResult PlayEpisodes(VectorEnv& env, const std::vector<int64_t>& quota,
                        const std::function<void(uint64_t step, int32_t* actions)>& act, Buffer<int32_t>& actions) {
  const int64_t n = env.num_envs();
  const Device device = env.device();
  const int64_t episodes = std::accumulate(quota.begin(), quota.end(), int64_t{0});
  std::vector<int64_t> done(n, 0);
  std::vector<double> returns, lengths;
  std::vector<uint8_t> term(n), trunc(n);
  std::vector<float> ret(n);
  std::vector<int32_t> len(n);
  for (uint64_t step = 0; static_cast<int64_t>(returns.size()) < episodes; ++step) {
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
      returns.push_back(ret[i]);
      lengths.push_back(len[i]);
    }
  }
  EvalResult r;
  r.env_id = env.spec().id;
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

EvalResult EvaluateLearner(VectorEnv& env, QLearner& learner, Buffer<int32_t>& actions, uint64_t run_seed, int64_t k) {
  const int64_t n = env.num_envs();
  const Device device = learner.backend().device();
  env.Reset(run_seed * 0x9E3779B97F4A7C15ull + 0xE7A1u + static_cast<uint64_t>(k));
  const nn::ConstBatchView obs(env.obs(), n, learner.online().in_features(), device);
  return PlayEpisodes(
      env, std::vector<int64_t>(n, 1),
      [&](uint64_t, int32_t* out) { learner.Act(obs, nn::VectorView<int32_t>(out, n, device)); }, actions);
}

}  // namespace cugym::agent
