// What the agents share (agent.h): metrics rows, checkpoint loading, lanes' seeds, the Q-learners'
// options.
#include "agents/common/agent.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "agents/common/algorithm.h"
#include "agents/common/checkpoint.h"
#include "nn/adam.h"

namespace cugym::agent {

void MetricsRow::Set(const std::string& name, double value) {
  for (auto& [known, v] : scalars) {
    if (known == name) {
      v = value;
      return;
    }
  }
  scalars.emplace_back(name, value);
}

double MetricsRow::Get(const std::string& name) const {
  for (const auto& [known, v] : scalars)
    if (known == name) return v;
  return kNaN;
}

std::vector<LoopState> Agent::LoadCheckpoints(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<CheckpointReader>> files;
  for (const std::string& path : paths) files.push_back(std::make_unique<CheckpointReader>(path));
  return LoadCheckpoints(files);
}

std::string Unbatchable(const Registry& registry, const TrainConfig& config, int lanes) {
  if (lanes <= 1) return "";
  if (!MakeVectorEnv(registry, config.env_id, 1, Device::kCpu)->supports_lanes())
    return config.env_id + " cannot step its envs in lanes (VectorEnv::ResetLanes); train the seeds apart";
  const Algorithm* algorithm = FindAlgorithm(config.algo);
  return algorithm != nullptr && algorithm->unbatchable ? algorithm->unbatchable(registry, config) : "";
}

const std::vector<std::string>& QLearningKeys() {
  static const std::vector<std::string> keys = {"buffer_size",
                                                "batch_size",
                                                "n_step",
                                                "tau",
                                                "target_update_interval",
                                                "start_e",
                                                "end_e",
                                                "exploration_fraction",
                                                "exploration_hold_mu",
                                                "exploration_max_hold",
                                                "learning_starts",
                                                "replay_ratio",
                                                "loss",
                                                "double_dqn",
                                                "dueling",
                                                "prioritized_replay",
                                                "per_alpha",
                                                "per_beta",
                                                "per_eps",
                                                "save_replay",
                                                "q_lambda",
                                                "reward_scale"};
  return keys;
}

std::vector<MetricColumn> QMetricColumns() {
  // CleanRL's dqn.py's columns and tags.
  return {{"td_loss", "losses/td_loss"}, {"q_values", "losses/q_values"}, {"epsilon", "charts/epsilon"}};
}

std::vector<uint64_t> LaneSeeds(const TrainConfig& config, std::vector<uint64_t> seeds) {
  if (seeds.empty()) seeds.push_back(config.seed);
  if (std::set<uint64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
    throw std::invalid_argument("a seed appears twice among an agent's lanes");
  return seeds;
}

QLearnerOptions LearnerOptionsFor(const TrainConfig& c, const EnvSpec& spec) {
  QLearnerOptions options;
  options.layer_sizes = {static_cast<int>(spec.obs_dim())};
  options.layer_sizes.insert(options.layer_sizes.end(), c.hidden_sizes.begin(), c.hidden_sizes.end());
  options.layer_sizes.push_back(static_cast<int>(spec.action_space.n));
  options.loss = nn::ParseLoss(c.loss);
  options.adam.lr = c.learning_rate;
  options.adam.eps = c.adam_eps;
  options.adam.max_grad_norm = c.max_grad_norm;
  options.adam.rectified = c.optimizer == "radam";
  if (c.anneal_lr) options.adam.lr_decay_updates = std::max<int64_t>(c.PlannedUpdates(), 1);
  options.seed = c.seed;
  options.dueling = c.dueling;
  options.conv = ConvForObservations(c.conv_channels, spec.observation_space.shape, spec.id);
  options.layer_norm = c.layer_norm;
  return options;
}

QLearnerOptions ForLanes(QLearnerOptions options, const std::vector<uint64_t>& seeds) {
  options.replicas = static_cast<int>(seeds.size());
  if (seeds.size() > 1) options.replica_seeds = seeds;
  return options;
}

const EnvSpec& DiscreteSpec(const Registry& registry, const std::string& id, const std::string& agent) {
  const EnvSpec& spec = registry.Get(id).spec;
  if (!spec.action_space.is_discrete())
    throw std::invalid_argument(agent + " needs a discrete action space, but " + id + " has " +
                                spec.action_space.ToString() + " actions");
  return spec;
}

EpsilonSchedule EpsilonScheduleOf(const TrainConfig& c) {
  return EpsilonSchedule{c.start_e, c.end_e, c.exploration_fraction * static_cast<double>(c.total_steps)};
}

MetricsRow EpisodeRow(int64_t global_step, double interval_seconds, int64_t interval_steps,
                      const EpisodeStats::Interval& ended, const LoopState& loop) {
  MetricsRow p;
  p.global_step = global_step;
  p.wall_time = loop.wall_time;
  p.sps = interval_seconds > 0 ? static_cast<double>(interval_steps) / interval_seconds : 0;
  p.episodic_return = ended.mean_return;
  p.episodic_length = ended.mean_length;
  p.mean_return_100 = ended.mean_return_100;
  p.episodes = ended.episodes;
  p.eval_return = loop.last_eval_return;
  return p;
}

MetricsRow MakeProgress(int64_t global_step, double epsilon, double interval_seconds, int64_t interval_steps,
                        const EpisodeStats::Interval& ended, const QLearner::Stats& stats, const LoopState& loop) {
  MetricsRow p = EpisodeRow(global_step, interval_seconds, interval_steps, ended, loop);
  p.Set("td_loss", stats.updates > 0 ? stats.loss : MetricsRow::kNaN);
  p.Set("q_values", stats.updates > 0 ? stats.mean_q : MetricsRow::kNaN);
  p.Set("epsilon", epsilon);
  return p;
}

}  // namespace cugym::agent
