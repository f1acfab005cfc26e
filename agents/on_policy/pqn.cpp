// The PQN training loop (pqn.h): rollout, Q(lambda) targets, minibatch epochs; its checkpoint.
#include "agents/on_policy/pqn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/checkpoint.h"
#include "core/build_info.h"

namespace cugym::agent {
namespace {

QLearnerOptions LearnerOptions(const TrainConfig& c, const EnvSpec& spec) {
  QLearnerOptions options = LearnerOptionsFor(c, spec);
  options.batch_size = static_cast<int>(c.minibatch_size());
  options.max_act_batch = static_cast<int>(std::max({c.num_envs, c.minibatch_size(), c.eval_episodes}));
  options.target_network = false;
  return options;
}

}  // namespace

Algorithm PqnAlgorithm() {
  Algorithm a;
  a.name = "pqn";
  a.metrics = QMetricColumns();
  a.make = MakeAgentOf<PqnAgent>;
  a.reads = QLearningKeys();
  a.check = [](const TrainConfig& c) {
    OnPolicyAgent::CheckRollout(c);
    // Keys that only mean something with a replay memory and a target network.
    RequireKey(!c.prioritized_replay, "prioritized_replay", "needs a replay memory (algo = \"dqn\")", "true");
    RequireKey(!c.double_dqn, "double_dqn", "needs a target network (algo = \"dqn\")", "true");
    RequireKey(c.n_step == 1, "n_step", "must be 1 with algo = \"pqn\" (q_lambda sets how far its targets look)",
               c.n_step);
  };
  a.planned_updates = OnPolicyAgent::PlannedUpdates;
  a.unbatchable = [](const Registry& registry, const TrainConfig& c) {
    DiscreteSpec(registry, c.env_id, "PQN");
    return std::string();
  };
  return a;
}

PqnAgent::PqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : PqnAgent(registry, config, LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

PqnAgent::PqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                   std::shared_ptr<nn::Backend> backend)
    : OnPolicyAgent(registry, config, seeds, backend, "pqn"), spec_(DiscreteSpec(registry, config.env_id, "PQN")) {
  obs_dim_ = static_cast<int>(spec_.obs_dim());
  num_actions_ = static_cast<int>(spec_.action_space.n);
  const auto k = static_cast<int64_t>(seeds.size());
  const int64_t rows = k * config_.rollout_size(), b = config_.minibatch_size();
  learner_ = std::make_unique<QLearner>(std::move(backend), ForLanes(LearnerOptions(config_, spec_), seeds));
  value_rows_ = learner_->online().max_batch();
  MakeLanes(std::move(seeds), stream());
  obs_ = Buffer<float>(device_, rows * obs_dim_);
  next_obs_ = Buffer<float>(device_, rows * obs_dim_);
  rewards_ = Buffer<float>(device_, rows);
  next_values_ = Buffer<float>(device_, rows);
  targets_ = Buffer<float>(device_, rows);
  actions_ = Buffer<int32_t>(device_, rows);
  terminated_ = Buffer<uint8_t>(device_, rows);
  truncated_ = Buffer<uint8_t>(device_, rows);
  batch_obs_ = Buffer<float>(device_, k * b * obs_dim_);
  batch_targets_ = Buffer<float>(device_, k * b);
  batch_actions_ = Buffer<int32_t>(device_, k * b);
  if (k > 1) {
    staged_obs_ = Buffer<float>(device_, k * value_rows_ * obs_dim_);
    staged_values_ = Buffer<float>(device_, k * value_rows_);
  }
}

PqnAgent::~PqnAgent() = default;

double PqnAgent::Epsilon(int64_t step) const { return ScheduledEpsilon(EpsilonScheduleOf(config_), step); }

RolloutArrays PqnAgent::rollout() {
  RolloutArrays r;
  r.obs = obs_.data();
  r.next_obs = next_obs_.data();
  r.actions = actions_.data();
  r.rewards = rewards_.data();
  r.terminated = terminated_.data();
  r.truncated = truncated_.data();
  r.next_values = next_values_.data();
  r.targets = targets_.data();
  r.steps = config_.num_steps;
  r.envs = lanes() * config_.num_envs;
  r.obs_dim = obs_dim_;
  r.lanes = lanes();
  return r;
}

void PqnAgent::IterationKernels(bool captured) {
  const int64_t n = config_.num_envs, steps = config_.num_steps;
  int64_t greedy_from = 0;
  if (!captured)
    while (greedy_from < steps && Epsilon(global_step_ + greedy_from * n) >= 1.0) ++greedy_from;
  for (int64_t t = 0; t < steps; ++t) CollectStep(t, t >= greedy_from);
  NextValues();
  rollout_ops_->QLambdaTargets(rollout(), config_.gamma, config_.q_lambda, config_.reward_scale);
  Epochs();
}

// One greedy forward, one exploration pass (each lane with its seed), one step of the K x n envs
// and their rollout step, each lane's finished episodes appended to its ring, the step counters.
void PqnAgent::CollectStep(int64_t t, bool greedy) {
  const int64_t n = config_.num_envs, envs = lanes() * n;
  int32_t* actions = actions_.data() + t * envs;
  if (greedy)
    learner_->Act(nn::ConstBatchView(env_->obs(), envs, obs_dim_, device_),
                  nn::VectorView<int32_t>(actions, envs, device_));
  explore_ops_->Explore(actions, lanes(), n, counters_dev_.data(), EpsilonScheduleOf(config_), lanes_->seeds_dev(),
                        num_actions_, lanes_->hold());
  CopyBytesAsync(obs_.data() + t * envs * obs_dim_, env_->obs(), envs * obs_dim_ * sizeof(float), device_, stream());
  env_->Step(actions);
  rollout_ops_->StoreRolloutStep(rollout(), t, env_->obs(), env_->final_obs(), env_->rewards(), env_->terminated(),
                                 env_->truncated());
  episode_ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(), env_->episode_lengths(),
                                lanes(), n, lanes_->rings());
  episode_ops_->AdvanceSteps(counters_dev_.data(), n);
}

// In the solo run's chunks of value_rows_ rows of its rollout, so that each lane's forwards have
// the solo run's shapes (and its bits): one lane values its rollout in place, K lanes stage each
// chunk of every lane side by side and put the values back.
void PqnAgent::NextValues() {
  const int64_t rows = config_.rollout_size(), k = lanes();
  const RolloutArrays r = rollout();
  for (int64_t first = 0; first < rows; first += value_rows_) {
    const int64_t count = std::min(value_rows_, rows - first);
    if (k == 1) {
      learner_->MaxQ(nn::ConstBatchView(next_obs_.data() + first * obs_dim_, count, obs_dim_, device_),
                     nn::VectorView<float>(next_values_.data() + first, count, device_));
      continue;
    }
    rollout_ops_->StageNextObs(r, first, count, staged_obs_.data());
    learner_->MaxQ(nn::ConstBatchView(staged_obs_.data(), k * count, obs_dim_, device_),
                   nn::VectorView<float>(staged_values_.data(), k * count, device_));
    rollout_ops_->UnstageValues(r, first, count, staged_values_.data());
  }
}

void PqnAgent::GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) {
  GatherColumns columns;
  columns.Add(obs_.data(), batch_obs_.data(), obs_dim_);
  columns.Add(actions_.data(), batch_actions_.data(), 1);
  columns.Add(targets_.data(), batch_targets_.data(), 1);
  rollout_ops_->GatherMinibatch(rollout(), columns, first, rows, counters_dev_.data(), lanes_->seeds_dev(), epoch);
}

void PqnAgent::TrainMinibatch() {
  const int64_t rows = lanes() * config_.minibatch_size();
  learner_->TrainStep(nn::ConstBatchView(batch_obs_.data(), rows, obs_dim_, device_),
                      nn::VectorView<const int32_t>(batch_actions_.data(), rows, device_),
                      nn::VectorView<const float>(batch_targets_.data(), rows, device_));
}

MetricsRow PqnAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  return lanes_->Progress(lane, global_step_, Epsilon(global_step_), seconds, steps, *learner_, loop);
}

void PqnAgent::LoadLane(int lane, const CheckpointReader& in) {
  QLearner& solo = Solo(lane);
  solo.Load(in);
  if (lanes() > 1) learner_->CopyReplicaFrom(lane, solo);
}

std::unique_ptr<LaneAgent> PqnAgent::MakeLike(std::vector<uint64_t> seeds) const {
  return std::unique_ptr<LaneAgent>(new PqnAgent(*registry_, config_, std::move(seeds), backend_));
}

void PqnAgent::KeepLanes(const std::vector<int>& keep, LaneAgent& next) const {
  auto& to = static_cast<PqnAgent&>(next);
  for (std::size_t i = 0; i < keep.size(); ++i) to.learner_->CopyReplicaFrom(static_cast<int>(i), Solo(keep[i]));
}

void PqnAgent::SaveModel(int lane, const std::string& path) const {
  SaveQModel(path, Solo(lane), config_.env_id, global_step_);
}

void PqnAgent::LoadModel(int lane, const std::string& path) {
  LoadQModel(path, Solo(lane), lane, *learner_);
  lanes_->Forget();
}

}  // namespace cugym::agent
