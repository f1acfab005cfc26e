// The agents' per-lane bookkeeping (agent_lanes.h).
#include "agents/common/agent_lanes.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/build_info.h"

namespace cugym::agent {

std::unique_ptr<VectorEnv> MakeLaneEnvs(const Registry& registry, const TrainConfig& config,
                                        const std::vector<uint64_t>& seeds, Device device, void* stream) {
  const int64_t n = config.num_envs;
  std::unique_ptr<VectorEnv> env =
      MakeVectorEnv(registry, config.env_id, static_cast<int64_t>(seeds.size()) * n, device);
  env->set_stream(stream);  // one stream for the env, the agent and the network
  ResetInLanes(*env, seeds, n);
  return env;
}

AgentLanes::AgentLanes(const Registry& registry, const TrainConfig& config, Device device, void* stream,
                       std::vector<uint64_t> seeds)
    : registry_(&registry),
      env_id_(config.env_id),
      device_(device),
      stream_(stream),
      n_(config.num_envs),
      seeds_(std::move(seeds)),
      hold_mu_(static_cast<float>(config.exploration_hold_mu)),
      max_hold_(static_cast<int32_t>(config.exploration_max_hold)) {
  const int64_t k = count();
  seeds_dev_ = Buffer<uint64_t>(device, k);
  seeds_dev_.FromHost(seeds_.data(), k);
  if (hold_mu_ > 0) {
    held_actions_ = Buffer<int32_t>(device, k * n_);
    hold_left_ = Buffer<int32_t>(device, k * n_);
    hold_left_.Zero();
  }
  constexpr int64_t cap = EpisodeStats::kCapacity;
  ring_returns_ = Buffer<float>(device, k * cap);
  ring_lengths_ = Buffer<int32_t>(device, k * cap);
  ring_counts_ = Buffer<unsigned long long>(device, k);
  ring_returns_.Zero();
  ring_lengths_.Zero();
  ring_counts_.Zero();
  std::vector<EpisodeRing> rings;
  for (int64_t a = 0; a < k; ++a) {
    rings.push_back(
        EpisodeRing{ring_returns_.data() + a * cap, ring_lengths_.data() + a * cap, ring_counts_.data() + a, cap});
    episodes_.push_back(std::make_unique<EpisodeStats>(device, rings.back()));
  }
  rings_ = Buffer<EpisodeRing>(device, k);
  rings_.FromHost(rings.data(), k);
  if (config.eval_episodes > 0) {
    // Every lane's eval envs as lanes of one batch, evaluated together.
    eval_env_ = MakeVectorEnv(registry, config.env_id, k * config.eval_episodes, device);
    eval_env_->set_stream(stream);
  }
}

AgentLanes::~AgentLanes() = default;

ExploreHold AgentLanes::hold() {
  if (hold_mu_ <= 0) return {};
  return ExploreHold{held_actions_.data(), hold_left_.data(), hold_mu_, max_hold_};
}

void AgentLanes::Check(int lane, const char* agent_op) const {
  if (lane < 0 || lane >= count())
    throw std::out_of_range(std::string(agent_op) + ": lane " + std::to_string(lane) + " of " +
                            std::to_string(count()));
}

// The lanes log at the same steps (one schedule): the first to ask reads every lane's episodes,
// a few copies for all.
EpisodeStats::Interval AgentLanes::Ended(int lane, int64_t step) {
  Check(lane, "Progress");
  if (read_step_ != step) {
    read_returns_ = ring_returns_.ToHost();
    read_lengths_ = ring_lengths_.ToHost();
    read_counts_ = ring_counts_.ToHost();
    read_step_ = step;
  }
  constexpr int64_t cap = EpisodeStats::kCapacity;
  return episodes_[lane]->Read(read_returns_.data() + lane * cap, read_lengths_.data() + lane * cap,
                               read_counts_[lane]);
}

MetricsRow AgentLanes::Progress(int lane, int64_t step, double epsilon, double seconds, int64_t steps,
                                const QLearner& learner, const LoopState& loop) {
  const EpisodeStats::Interval ended = Ended(lane, step);
  if (stats_step_ != step) {
    read_stats_ = learner.ReadAllStats();
    stats_step_ = step;
  }
  return MakeProgress(step, epsilon, seconds, steps, ended, read_stats_[lane], loop);
}

// The lanes evaluate at the same steps (one schedule): the first to ask evaluates all of them.
EvalResult AgentLanes::Evaluate(int lane, int64_t index, int64_t step, const Play& play) {
  if (!eval_env_) throw std::logic_error("Evaluate: eval_episodes is 0");
  Check(lane, "Evaluate");
  if (evaluated_index_ != index || evaluated_step_ != step) {
    evaluations_ = play(*eval_env_, TrainingEvalSeeds(seeds_, index), std::vector<bool>(seeds_.size(), true),
                        eval_env_->num_envs() / count());
    evaluated_index_ = index;
    evaluated_step_ = step;
  }
  return evaluations_[lane];
}

AgentLanes::Play AgentLanes::ReplicasPlay(QLearner& learner) {
  return [this, &learner](VectorEnv& env, const std::vector<uint64_t>& seeds, const std::vector<bool>& evaluate,
                          int64_t episodes) {
    if (static_cast<int64_t>(eval_actions_.size()) < env.num_envs())
      eval_actions_ = Buffer<int32_t>(device_, env.num_envs());
    return EvaluateReplicas(env, learner, eval_actions_, seeds, evaluate, episodes);
  };
}

std::vector<EvalResult> AgentLanes::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                   uint64_t seed_offset, int64_t max_envs, const Play& play) {
  if (listed.empty()) return {};
  for (int a : listed) Check(a, "EvaluateModels");
  const int64_t k = count(), m = std::min(num_envs, episodes);
  if (m < 1 || m > max_envs) throw std::invalid_argument("EvaluateModels: " + std::to_string(m) + " envs per lane");
  if (!model_env_ || model_env_->num_envs() != k * m) {
    model_env_ = MakeVectorEnv(*registry_, env_id_, k * m, device_);
    model_env_->set_stream(stream_);
  }
  std::vector<uint64_t> offset;
  for (uint64_t seed : seeds_) offset.push_back(seed + seed_offset);
  std::vector<bool> evaluate(seeds_.size(), false);
  for (int a : listed) evaluate[a] = true;
  const std::vector<EvalResult> all = play(*model_env_, offset, evaluate, episodes);
  std::vector<EvalResult> results;
  for (int a : listed) results.push_back(all[a]);
  return results;
}

void AgentLanes::Save(int lane, const VectorEnv& env, int64_t step, CheckpointWriter& out) const {
  Check(lane, "SaveCheckpoint");
  episodes_[lane]->Save(out);
  // The lanes checkpoint at the same steps (one schedule): the first to save at a step reads
  // every lane's envs.
  if (saved_envs_step_ != step) {
    saved_envs_ = VectorEnvSnapshot{};
    has_saved_envs_ = env.SaveSnapshot(&saved_envs_);
    saved_envs_step_ = step;
  }
  if (has_saved_envs_) {  // the lane's envs as the snapshot of a batch of n of its own (the solo run's)
    VectorEnvSnapshot mine = count() == 1 ? saved_envs_ : LanesOf(saved_envs_, {lane}, env.spec().state_dim);
    mine.env_seeds.clear();
    mine.lane_size = 0;
    SaveEnvSnapshot(mine, out);
  }
  if (hold_mu_ > 0) {
    out.Ints("explore.held", held_actions_.ToHost(lane * n_, n_));
    out.Ints("explore.left", hold_left_.ToHost(lane * n_, n_));
  }
}

void AgentLanes::Load(int lane, const CheckpointReader& in) {
  Check(lane, "LoadCheckpoints");
  episodes_[lane]->Load(in);
  if (hold_mu_ > 0) {
    held_actions_.FromHost(in.Ints("explore.held", n_).data(), n_, lane * n_);
    hold_left_.FromHost(in.Ints("explore.left", n_).data(), n_, lane * n_);
  }
}

bool AgentLanes::LoadEnvs(const std::vector<std::unique_ptr<CheckpointReader>>& in, VectorEnv& env) const {
  const int64_t state_dim = env.spec().state_dim;
  VectorEnvSnapshot envs;
  std::vector<uint64_t> lane_seeds;
  for (std::size_t a = 0; a < in.size(); ++a) {
    VectorEnvSnapshot one;
    if (!ReadEnvSnapshot(*in[a], n_, state_dim, &one)) {
      if (in.size() == 1) return false;
      throw std::invalid_argument(in[a]->path() + ": a checkpoint without the envs' state cannot go on in a batch");
    }
    if (in.size() == 1) {
      env.LoadSnapshot(one);
      return true;
    }
    if (a > 0 && one.steps != envs.steps)
      throw std::invalid_argument(in[a]->path() + ": its envs stepped " + std::to_string(one.steps) + " times, " +
                                  in.front()->path() + "'s " + std::to_string(envs.steps) +
                                  ": a batch's agents go on together");
    envs.steps = one.steps;
    lane_seeds.push_back(one.seed);
    AppendEnvs(&envs, one);
  }
  envs.seed = lane_seeds.front();
  envs.env_seeds = LaneEnvSeeds(lane_seeds, n_);
  envs.lane_size = n_;
  env.LoadSnapshot(envs);
  return true;
}

void AgentLanes::Forget() { read_step_ = stats_step_ = evaluated_step_ = saved_envs_step_ = -1; }

std::vector<uint64_t> AgentLanes::SeedsOf(const std::vector<int>& keep, const char* agent_op) const {
  std::vector<uint64_t> seeds;
  for (int lane : keep) {
    Check(lane, agent_op);
    seeds.push_back(seeds_[lane]);
  }
  return seeds;
}

bool AgentLanes::KeepEnvs(const VectorEnv& from_env, const std::vector<int>& keep, VectorEnv& env) {
  VectorEnvSnapshot envs;
  if (!from_env.SaveSnapshot(&envs)) return false;
  env.LoadSnapshot(LanesOf(envs, std::vector<int64_t>(keep.begin(), keep.end()), from_env.spec().state_dim));
  return true;
}

void AgentLanes::TakeLanes(const AgentLanes& from, const std::vector<int>& keep) {
  for (std::size_t to = 0; to < keep.size(); ++to) {
    const int lane = keep[to];
    const auto i = static_cast<int64_t>(to);
    episodes_[to]->CopyFrom(*from.episodes_[lane]);
    if (hold_mu_ > 0) {
      CopyBytes(held_actions_.data() + i * n_, device_, from.held_actions_.data() + lane * n_, device_,
                n_ * sizeof(int32_t));
      CopyBytes(hold_left_.data() + i * n_, device_, from.hold_left_.data() + lane * n_, device_, n_ * sizeof(int32_t));
    }
  }
}

AgentLanes::Play DeterministicPolicyPlay(EpisodeOps& episode_ops, PolicyOps& ops, nn::Mlp& actor,
                                         const PolicyHead& head, const RunningMoments& moments, double clip, int lanes,
                                         PolicyPlayScratch& scratch) {
  return [&episode_ops, &ops, &actor, head, moments, clip, lanes, &scratch](
             VectorEnv& env, const std::vector<uint64_t>& seeds, const std::vector<bool>& evaluate, int64_t episodes) {
    const int64_t total = env.num_envs(), m = total / lanes, obs_dim = actor.in_features();
    const Device device = actor.device();
    if (static_cast<int64_t>(scratch.obs.size()) < total * obs_dim) {
      scratch.obs = Buffer<float>(device, total * obs_dim);
      scratch.actions = Buffer<int32_t>(device, total);
      scratch.samples = Buffer<float>(device, total * head.out);
      scratch.env_actions = Buffer<float>(device, total * head.out);
    }
    return EvaluateLanes(env, episode_ops, seeds, evaluate, episodes, [&](uint64_t) {
      PolicySample sample;
      sample.actions = scratch.actions.data();
      sample.samples = scratch.samples.data();
      sample.env_actions = scratch.env_actions.data();
      ActDeterministically(ops, actor, head, moments, clip, env.obs(), scratch.obs.data(), lanes, m, sample);
      if (head.gaussian)
        env.Step(scratch.env_actions.data());
      else
        env.Step(scratch.actions.data());
    });
  };
}

}  // namespace cugym::agent
