// The toy_q test algorithm (toy_agent.h).
#include "tests/agents/toy_algorithm/toy_agent.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "nn/checkpoint.h"

namespace cugym::testing {

using agent::TrainConfig;

agent::Algorithm ToyAlgorithm() {
  const TomlValue epsilon = TomlValue::Float(0.1);
  agent::Algorithm a;
  a.name = "toy_q";
  a.metrics = {{"td_loss", "losses/td_loss"}, {"toy_rollouts", "charts/toy_rollouts"}};
  a.make = agent::MakeAgentOf<ToyQAgent>;
  a.keys = {
      {"toy_epsilon", epsilon, [](const TomlValue& v) { return v.number >= 0 && v.number <= 1; }, "must be in [0, 1]"}};
  a.check = agent::OnPolicyAgent::CheckRollout;
  a.planned_updates = agent::OnPolicyAgent::PlannedUpdates;
  return a;
}

ToyQAgent::ToyQAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : ToyQAgent(registry, config, agent::LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

ToyQAgent::ToyQAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                     std::shared_ptr<nn::Backend> backend)
    : OnPolicyAgent(registry, config, seeds, backend, "toy_q") {
  if (seeds.size() != 1) throw std::invalid_argument("toy_q trains one seed per agent");
  const EnvSpec& spec = agent::DiscreteSpec(registry, config_.env_id, "toy_q");
  obs_dim_ = static_cast<int>(spec.obs_dim());
  num_actions_ = static_cast<int>(spec.action_space.n);
  agent::QLearnerOptions options = agent::LearnerOptionsFor(config_, spec);
  const int64_t rows = config_.rollout_size(), b = config_.minibatch_size();
  options.batch_size = static_cast<int>(b);
  options.max_act_batch = static_cast<int>(std::max({config_.num_envs, rows, config_.eval_episodes}));
  options.target_network = false;
  learner_ = std::make_unique<agent::QLearner>(std::move(backend), options);
  MakeLanes(std::move(seeds), stream());
  for (Buffer<float>* buffer : {&obs_, &next_obs_}) *buffer = Buffer<float>(device_, rows * obs_dim_);
  for (Buffer<float>* buffer : {&rewards_, &next_values_, &targets_}) *buffer = Buffer<float>(device_, rows);
  actions_ = Buffer<int32_t>(device_, rows);
  terminated_ = Buffer<uint8_t>(device_, rows);
  truncated_ = Buffer<uint8_t>(device_, rows);
  batch_obs_ = Buffer<float>(device_, b * obs_dim_);
  batch_targets_ = Buffer<float>(device_, b);
  batch_actions_ = Buffer<int32_t>(device_, b);
}

ToyQAgent::~ToyQAgent() = default;

agent::EpsilonSchedule ToyQAgent::epsilon() const {
  const double e = config_.Own("toy_epsilon").number;
  return {e, e, 1.0};
}

agent::RolloutArrays ToyQAgent::rollout() {
  agent::RolloutArrays r;
  r.obs = obs_.data();
  r.next_obs = next_obs_.data();
  r.actions = actions_.data();
  r.rewards = rewards_.data();
  r.terminated = terminated_.data();
  r.truncated = truncated_.data();
  r.next_values = next_values_.data();
  r.targets = targets_.data();
  r.steps = config_.num_steps;
  r.envs = config_.num_envs;
  r.obs_dim = obs_dim_;
  return r;
}

// The rollout acted epsilon-greedily, every row's next value, one-step targets, then the epochs.
void ToyQAgent::IterationKernels(bool) {
  const int64_t n = config_.num_envs, rows = config_.rollout_size();
  for (int64_t t = 0; t < config_.num_steps; ++t) {
    int32_t* actions = actions_.data() + t * n;
    learner_->Act(nn::ConstBatchView(env_->obs(), n, obs_dim_, device_), nn::VectorView<int32_t>(actions, n, device_));
    explore_ops_->Explore(actions, 1, n, counters_dev_.data(), epsilon(), lanes_->seeds_dev(), num_actions_,
                          lanes_->hold());
    CopyBytesAsync(obs_.data() + t * n * obs_dim_, env_->obs(), n * obs_dim_ * sizeof(float), device_, stream());
    env_->Step(actions);
    rollout_ops_->StoreRolloutStep(rollout(), t, env_->obs(), env_->final_obs(), env_->rewards(), env_->terminated(),
                                   env_->truncated());
    episode_ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(),
                                  env_->episode_lengths(), 1, n, lanes_->rings());
    episode_ops_->AdvanceSteps(counters_dev_.data(), n);
  }
  learner_->MaxQ(nn::ConstBatchView(next_obs_.data(), rows, obs_dim_, device_),
                 nn::VectorView<float>(next_values_.data(), rows, device_));
  rollout_ops_->QLambdaTargets(rollout(), config_.gamma, 0.0, 1.0);
  Epochs();
}

void ToyQAgent::GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) {
  agent::GatherColumns columns;
  columns.Add(obs_.data(), batch_obs_.data(), obs_dim_);
  columns.Add(actions_.data(), batch_actions_.data(), 1);
  columns.Add(targets_.data(), batch_targets_.data(), 1);
  rollout_ops_->GatherMinibatch(rollout(), columns, first, rows, counters_dev_.data(), lanes_->seeds_dev(), epoch);
}

void ToyQAgent::TrainMinibatch() {
  const int64_t b = config_.minibatch_size();
  learner_->TrainStep(nn::ConstBatchView(batch_obs_.data(), b, obs_dim_, device_),
                      nn::VectorView<const int32_t>(batch_actions_.data(), b, device_),
                      nn::VectorView<const float>(batch_targets_.data(), b, device_));
}

agent::MetricsRow ToyQAgent::Progress(int lane, double seconds, int64_t steps, const agent::LoopState& loop) {
  agent::MetricsRow p = lanes_->Progress(lane, global_step_, epsilon().start, seconds, steps, *learner_, loop);
  p.Set("toy_rollouts", static_cast<double>(vector_steps_ / config_.num_steps));
  return p;
}

void ToyQAgent::SaveModel(int lane, const std::string& path) const {
  lanes_->Check(lane, "SaveModel");
  agent::SaveQModel(path, *learner_, config_.env_id, global_step_);
}

void ToyQAgent::LoadModel(int lane, const std::string& path) {
  lanes_->Check(lane, "LoadModel");
  nn::LoadMlp(path, learner_->online());
  lanes_->Forget();
}

void ToyQAgent::SaveLane(int, agent::CheckpointWriter& out) const { learner_->Save(out); }

void ToyQAgent::LoadLane(int, const agent::CheckpointReader& in) { learner_->Load(in); }

std::unique_ptr<agent::LaneAgent> ToyQAgent::MakeLike(std::vector<uint64_t> seeds) const {
  return std::unique_ptr<agent::LaneAgent>(new ToyQAgent(*registry_, config_, std::move(seeds), backend_));
}

void ToyQAgent::KeepLanes(const std::vector<int>&, agent::LaneAgent& next) const {
  static_cast<ToyQAgent&>(next).learner_->CopyReplicaFrom(0, *learner_);
}

}  // namespace cugym::testing
