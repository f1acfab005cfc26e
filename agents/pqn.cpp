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
    : registry_(&registry),
      config_(config),
      seeds_(LaneSeeds(config, std::move(seeds))),
      device_(device),
      spec_(DiscreteSpec(registry, config.env_id, "PQN")) {
  config_.Validate();
  config_.seed = seeds_.front();
  if (!config_.pqn()) throw std::invalid_argument("PqnAgent: the config's algo is \"" + config_.algo + "\"");
  const std::string refused = Unbatchable(registry, config_, lanes());
  if (!refused.empty()) throw std::invalid_argument(refused);
  obs_dim_ = static_cast<int>(spec_.obs_dim());
  num_actions_ = static_cast<int>(spec_.action_space.n);
  const int64_t n = config_.num_envs, rows = config_.rollout_size(), b = config_.minibatch_size();
  env_ = MakeVectorEnv(registry, config_.env_id, n, device);
  learner_ = std::make_unique<QLearner>(nn::MakeBackend(device), LearnerOptions(config_, spec_));
  value_rows_ = learner_->online().max_batch();
  ops_ = MakeAgentOps(device, learner_->backend().native_stream());
  env_->set_stream(learner_->backend().native_stream());  // one stream for the env, the agent and the network
  if (config_.eval_episodes > 0) {
    eval_env_ = MakeVectorEnv(registry, config_.env_id, config_.eval_episodes, device);
    eval_env_->set_stream(learner_->backend().native_stream());
    eval_actions_ = Buffer<int32_t>(device, config_.eval_episodes);
  }
  obs_ = Buffer<float>(device, rows * obs_dim_);
  next_obs_ = Buffer<float>(device, rows * obs_dim_);
  rewards_ = Buffer<float>(device, rows);
  next_values_ = Buffer<float>(device, rows);
  targets_ = Buffer<float>(device, rows);
  actions_ = Buffer<int32_t>(device, rows);
  terminated_ = Buffer<uint8_t>(device, rows);
  truncated_ = Buffer<uint8_t>(device, rows);
  batch_obs_ = Buffer<float>(device, b * obs_dim_);
  batch_targets_ = Buffer<float>(device, b);
  batch_actions_ = Buffer<int32_t>(device, b);
  if (config_.exploration_hold_mu > 0) {
    held_actions_ = Buffer<int32_t>(device, n);
    hold_left_ = Buffer<int32_t>(device, n);
    hold_left_.Zero();
  }
  episodes_ = std::make_unique<EpisodeStats>(device);
  const EpisodeRing ring = episodes_->ring();
  ring_dev_ = Buffer<EpisodeRing>(device, 1);
  ring_dev_.FromHost(&ring, 1);
  seed_dev_ = Buffer<uint64_t>(device, 1);
  seed_dev_.FromHost(&config_.seed, 1);
  counters_dev_ = Buffer<StepCounters>(device, 1);
  const StepCounters zero{0, 0};
  counters_dev_.FromHost(&zero, 1);
  use_graph_ = device == Device::kCuda && config_.cuda_graph && env_->step_capturable();
  env_->Reset(config_.seed);
}

PqnAgent::~PqnAgent() = default;

double PqnAgent::Epsilon(int64_t step) const { return ScheduledEpsilon(epsilon_schedule(), step); }

EpsilonSchedule PqnAgent::epsilon_schedule() const {
  return EpsilonSchedule{config_.start_e, config_.end_e,
                         config_.exploration_fraction * static_cast<double>(config_.total_steps)};
}

ExploreHold PqnAgent::explore_hold() {
  if (config_.exploration_hold_mu <= 0) return {};
  return ExploreHold{held_actions_.data(), hold_left_.data(), static_cast<float>(config_.exploration_hold_mu),
                     static_cast<int32_t>(config_.exploration_max_hold)};
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
  r.envs = config_.num_envs;
  r.obs_dim = obs_dim_;
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

void PqnAgent::CollectStep(int64_t t, bool greedy) {
  const int64_t n = config_.num_envs;
  int32_t* actions = actions_.data() + t * n;
  if (greedy)
    learner_->Act(nn::ConstBatchView(env_->obs(), n, obs_dim_, device_), nn::VectorView<int32_t>(actions, n, device_));
  ops_->Explore(actions, 1, n, counters_dev_.data(), epsilon_schedule(), seed_dev_.data(), num_actions_,
                explore_hold());
  CopyBytesAsync(obs_.data() + t * n * obs_dim_, env_->obs(), n * obs_dim_ * sizeof(float), device_,
                 learner_->backend().native_stream());
  env_->Step(actions);
  ops_->StoreRolloutStep(rollout(), t, env_->obs(), env_->final_obs(), env_->rewards(), env_->terminated(),
                         env_->truncated());
  ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(), env_->episode_lengths(), 1, n,
                        ring_dev_.data());
  ops_->AdvanceSteps(counters_dev_.data(), n);
}

// The values of the next observations (max over actions, the network before this iteration's
// updates), the Q(lambda) targets, then num_epochs passes over num_minibatches minibatches.
void PqnAgent::LearnKernels() {
  const int64_t rows = config_.rollout_size(), b = config_.minibatch_size();
  const RolloutArrays r = rollout();
  for (int64_t first = 0; first < rows; first += value_rows_) {
    const int64_t count = std::min(value_rows_, rows - first);
    learner_->MaxQ(nn::ConstBatchView(next_obs_.data() + first * obs_dim_, count, obs_dim_, device_),
                   nn::VectorView<float>(next_values_.data() + first, count, device_));
  }
  ops_->QLambdaTargets(r, config_.gamma, config_.q_lambda, config_.reward_scale);
  const RolloutBatch batch{batch_obs_.data(), batch_actions_.data(), batch_targets_.data()};
  for (int64_t epoch = 0; epoch < config_.num_epochs; ++epoch) {
    for (int64_t m = 0; m < config_.num_minibatches; ++m) {
      ops_->GatherMinibatch(r, batch, m * b, b, counters_dev_.data(), config_.seed, epoch);
      learner_->TrainStep(nn::ConstBatchView(batch_obs_.data(), b, obs_dim_, device_),
                          nn::VectorView<const int32_t>(batch_actions_.data(), b, device_),
                          nn::VectorView<const float>(batch_targets_.data(), b, device_));
    }
  }
}

void PqnAgent::CheckLane(int lane, const char* op) const {
  if (lane != 0) throw std::out_of_range(std::string("PqnAgent::") + op + ": lane " + std::to_string(lane) + " of 1");
}

MetricsRow PqnAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  CheckLane(lane, "Progress");
  return MakeProgress(global_step_, Epsilon(global_step_), seconds, steps, episodes_->Read(), learner_->ReadStats(),
                      loop);
}

EvalResult PqnAgent::Evaluate(int lane, int64_t index) {
  CheckLane(lane, "Evaluate");
  if (!eval_env_) throw std::logic_error("PqnAgent::Evaluate: eval_episodes is 0");
  return EvaluateLearnerLanes(*eval_env_, *learner_, eval_actions_, seeds_, index).front();
}

std::vector<EvalResult> PqnAgent::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) {
  return EvaluateListedReplicas(*registry_, config_.env_id, model_env_, *learner_, eval_actions_, seeds_, listed,
                                episodes, num_envs, seed_offset);
}

void PqnAgent::SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const {
  CheckLane(lane, "SaveCheckpoint");
  CheckpointWriter out;
  out.Text("cugym.algo", "pqn");
  out.Text("cugym.env_id", config_.env_id);
  out.Text("cugym.version", VersionString());
  out.Text("cugym.config", config_.ToToml());
  out.Int("cugym.global_step", global_step_);
  out.Int("cugym.vector_steps", vector_steps_);
  out.Real("cugym.wall_time", loop.wall_time);
  out.Real("cugym.last_eval_return", loop.last_eval_return);
  episodes_->Save(out);
  SaveEnvState(*env_, out);
  if (config_.exploration_hold_mu > 0) {
    out.Ints("explore.held", held_actions_.ToHost());
    out.Ints("explore.left", hold_left_.ToHost());
  }
  learner_->Save(path, out.metadata(), std::move(out.tensors()));
}

std::vector<LoopState> PqnAgent::LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& files) {
  if (files.size() != 1)
    throw std::invalid_argument("PqnAgent::LoadCheckpoints: " + std::to_string(files.size()) +
                                " checkpoints for 1 lane");
  const CheckpointReader& in = *files.front();
  const std::string& path = in.path();
  CheckCheckpointHeader(in, "pqn", config_.env_id);
  const int64_t n = config_.num_envs;
  const int64_t global_step = in.Int("cugym.global_step");
  const int64_t vector_steps = in.Int("cugym.vector_steps");
  iteration_graph_.Drop();  // it replays host values of its capture that are replaced here
  learner_->Load(in.file(), path);
  global_step_ = global_step;
  vector_steps_ = vector_steps;
  const StepCounters counters{vector_steps, global_step};
  counters_dev_.FromHost(&counters, 1);
  const LoopState loop{in.Real("cugym.wall_time"), in.Real("cugym.last_eval_return")};
  episodes_->Load(in);
  if (config_.exploration_hold_mu > 0) {
    held_actions_.FromHost(in.Ints("explore.held", n).data(), n);
    hold_left_.FromHost(in.Ints("explore.left", n).data(), n);
  }
  // No envs' state in the checkpoint (an env that cannot save it): new episodes from a seed of their own.
  if (!LoadEnvState(*env_, in, n, spec_.state_dim))
    env_->Reset(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  return {loop};
}

std::unique_ptr<Agent> PqnAgent::Keep(const std::vector<int>& keep) const {
  for (int lane : keep) CheckLane(lane, "Keep");
  return nullptr;
}

void PqnAgent::SaveModel(int lane, const std::string& path) const {
  CheckLane(lane, "SaveModel");
  SaveQModel(path, *learner_, config_.env_id, global_step_);
}

void PqnAgent::LoadModel(int lane, const std::string& path) {
  CheckLane(lane, "LoadModel");
  nn::LoadMlp(path, learner_->online());
}

}  // namespace cugym::agent
