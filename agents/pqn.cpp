// The PQN training loop (pqn.h): rollout, Q(lambda) targets, minibatch epochs; its checkpoint.
#include "agents/pqn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/dqn_checkpoint.h"
#include "core/build_info.h"
#include "nn/checkpoint.h"

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

PqnAgent::PqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : PqnAgent(registry, config, LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

PqnAgent::PqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                   std::shared_ptr<nn::Backend> backend)
    : registry_(&registry),
      config_(config),
      device_(backend->device()),
      spec_(DiscreteSpec(registry, config.env_id, "PQN")) {
  config_.Validate();
  config_.seed = seeds.front();
  if (!config_.pqn()) throw std::invalid_argument("PqnAgent: the config's algo is \"" + config_.algo + "\"");
  const auto k = static_cast<int64_t>(seeds.size());
  const std::string refused = Unbatchable(registry, config_, static_cast<int>(k));
  if (!refused.empty()) throw std::invalid_argument(refused);
  obs_dim_ = static_cast<int>(spec_.obs_dim());
  num_actions_ = static_cast<int>(spec_.action_space.n);
  const int64_t rows = k * config_.rollout_size(), b = config_.minibatch_size();
  learner_ = std::make_unique<QLearner>(std::move(backend), ForLanes(LearnerOptions(config_, spec_), seeds));
  value_rows_ = learner_->online().max_batch();
  void* stream = learner_->backend().native_stream();
  ops_ = MakeAgentOps(device_, stream);
  env_ = MakeLaneEnvs(registry, config_, seeds, device_, stream);
  lanes_ = std::make_unique<AgentLanes>(registry, config_, device_, stream, std::move(seeds));
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
  counters_dev_ = Buffer<StepCounters>(device_, 1);
  const StepCounters zero{0, 0};
  counters_dev_.FromHost(&zero, 1);
  use_graph_ = device_ == Device::kCuda && config_.cuda_graph && env_->step_capturable();
}

PqnAgent::~PqnAgent() = default;

double PqnAgent::Epsilon(int64_t step) const { return ScheduledEpsilon(epsilon_schedule(), step); }

EpsilonSchedule PqnAgent::epsilon_schedule() const {
  return EpsilonSchedule{config_.start_e, config_.end_e,
                         config_.exploration_fraction * static_cast<double>(config_.total_steps)};
}

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

// On CUDA with cuda_graph and a capturable env every iteration queues the same work (every value
// that changes lives on the device: the step counters, hence epsilon, the exploration keys and the
// shuffles; the optimizer's step count, hence the learning rate): the first runs eagerly, the
// second is captured, and the rest replay it, one launch each. Elsewhere the iteration runs
// eagerly and skips the greedy forwards while epsilon is 1 (the actions would be replaced anyway,
// so the bits are the same).
void PqnAgent::Iterate() {
  const int64_t n = config_.num_envs, steps = config_.num_steps;
  if ((use_graph_ || iteration_graph_on_cpu_) && !iteration_graph_.failed()) {
    iteration_graph_.Run(learner_->backend(), [this] { IterationKernels(0); });
  } else {
    int64_t greedy_from = 0;
    while (greedy_from < steps && Epsilon(global_step_ + greedy_from * n) >= 1.0) ++greedy_from;
    IterationKernels(greedy_from);
  }
  vector_steps_ += steps;
  global_step_ += steps * n;
}

void PqnAgent::IterationKernels(int64_t greedy_from) {
  for (int64_t t = 0; t < config_.num_steps; ++t) CollectStep(t, t >= greedy_from);
  LearnKernels();
}

// One greedy forward, one exploration pass (each lane with its seed), one step of the K x n envs
// and their rollout step, each lane's finished episodes appended to its ring, the step counters.
void PqnAgent::CollectStep(int64_t t, bool greedy) {
  const int64_t n = config_.num_envs, envs = lanes() * n;
  int32_t* actions = actions_.data() + t * envs;
  if (greedy)
    learner_->Act(nn::ConstBatchView(env_->obs(), envs, obs_dim_, device_),
                  nn::VectorView<int32_t>(actions, envs, device_));
  ops_->Explore(actions, lanes(), n, counters_dev_.data(), epsilon_schedule(), lanes_->seeds_dev(), num_actions_,
                lanes_->hold());
  CopyBytesAsync(obs_.data() + t * envs * obs_dim_, env_->obs(), envs * obs_dim_ * sizeof(float), device_,
                 learner_->backend().native_stream());
  env_->Step(actions);
  ops_->StoreRolloutStep(rollout(), t, env_->obs(), env_->final_obs(), env_->rewards(), env_->terminated(),
                         env_->truncated());
  ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(), env_->episode_lengths(),
                        lanes(), n, lanes_->rings());
  ops_->AdvanceSteps(counters_dev_.data(), n);
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
    ops_->StageNextObs(r, first, count, staged_obs_.data());
    learner_->MaxQ(nn::ConstBatchView(staged_obs_.data(), k * count, obs_dim_, device_),
                   nn::VectorView<float>(staged_values_.data(), k * count, device_));
    ops_->UnstageValues(r, first, count, staged_values_.data());
  }
}

// The values of the next observations, the Q(lambda) targets, then num_epochs passes over
// num_minibatches minibatches of every lane.
void PqnAgent::LearnKernels() {
  const int64_t b = config_.minibatch_size(), rows = lanes() * b;
  const RolloutArrays r = rollout();
  NextValues();
  ops_->QLambdaTargets(r, config_.gamma, config_.q_lambda, config_.reward_scale);
  const RolloutBatch batch{batch_obs_.data(), batch_actions_.data(), batch_targets_.data()};
  for (int64_t epoch = 0; epoch < config_.num_epochs; ++epoch) {
    for (int64_t m = 0; m < config_.num_minibatches; ++m) {
      ops_->GatherMinibatch(r, batch, m * b, b, counters_dev_.data(), lanes_->seeds_dev(), epoch);
      learner_->TrainStep(nn::ConstBatchView(batch_obs_.data(), rows, obs_dim_, device_),
                          nn::VectorView<const int32_t>(batch_actions_.data(), rows, device_),
                          nn::VectorView<const float>(batch_targets_.data(), rows, device_));
    }
  }
}

MetricsRow PqnAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  return lanes_->Progress(lane, global_step_, Epsilon(global_step_), seconds, steps, *learner_, loop);
}

EvalResult PqnAgent::Evaluate(int lane, int64_t index) {
  return lanes_->Evaluate(lane, index, global_step_, *learner_);
}

std::vector<EvalResult> PqnAgent::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) {
  return lanes_->EvaluateModels(listed, episodes, num_envs, seed_offset, *learner_);
}

void PqnAgent::SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const {
  CheckpointWriter out;
  WriteRolloutCounters("pqn", config_, seeds().at(lane), global_step_, vector_steps_, loop, out);
  lanes_->Save(lane, *env_, global_step_, out);
  lanes_->Solo(*learner_, lane).Save(path, out.metadata(), std::move(out.tensors()));
}

std::vector<LoopState> PqnAgent::LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) {
  int64_t step = 0, vector_steps = 0;
  const std::vector<LoopState> loops = ReadRolloutCounters(in, "pqn", config_.env_id, lanes(), &step, &vector_steps);
  global_step_ = step;
  vector_steps_ = vector_steps;
  iteration_graph_.Drop();  // it replays host values of its capture that are replaced here
  lanes_->Forget();
  // No envs' state in the checkpoint (an env that cannot save it): new episodes from a seed of their own.
  if (!lanes_->LoadEnvs(in, *env_))
    env_->Reset(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  for (int a = 0; a < lanes(); ++a) lanes_->Load(a, *in[a], *learner_);
  const StepCounters counters{vector_steps_, global_step_};
  counters_dev_.FromHost(&counters, 1);
  return loops;
}

std::unique_ptr<Agent> PqnAgent::Keep(const std::vector<int>& keep) const {
  std::unique_ptr<PqnAgent> next(new PqnAgent(*registry_, config_,
                                              LaneSeeds(config_, lanes_->SeedsOf(keep, "PqnAgent::Keep")),
                                              learner_->online().shared_backend()));
  if (!AgentLanes::KeepEnvs(*env_, keep, *next->env_)) return nullptr;
  next->lanes_->TakeLanes(*lanes_, keep, *learner_, *next->learner_);
  CopyBytes(next->counters_dev_.data(), device_, counters_dev_.data(), device_, sizeof(StepCounters));
  next->global_step_ = global_step_;
  next->vector_steps_ = vector_steps_;
  next->iteration_graph_on_cpu_ = iteration_graph_on_cpu_;
  return next;
}

void PqnAgent::SaveModel(int lane, const std::string& path) const {
  SaveQModel(path, lanes_->Solo(*learner_, lane), config_.env_id, global_step_);
}

void PqnAgent::LoadModel(int lane, const std::string& path) {
  QLearner& solo = lanes_->Solo(*learner_, lane);
  nn::LoadMlp(path, solo.online());
  if (lanes() > 1) learner_->online().CopyReplicaFrom(lane, solo.online());
  lanes_->Forget();
}

}  // namespace cugym::agent
