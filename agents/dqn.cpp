// The DQN iteration for K >= 1 lanes (dqn.h): one iteration per vector step (act, step, store, the
// gradient steps and target updates that fall on it), each op one launch for all lanes; progress
// rows and evaluations. Checkpoints, model files and Keep: dqn_checkpoint.cpp.
#include "agents/dqn.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "nn/backend.h"

namespace cugym::agent {
namespace {

nn::ConstBatchView Rows(const float* data, int64_t rows, int64_t cols, Device device) {
  return nn::ConstBatchView(data, rows, cols, device);
}
template <class T>
nn::VectorView<T> Vec(T* data, int64_t size, Device device) {
  return nn::VectorView<T>(data, size, device);
}

}  // namespace

DqnAgent::DqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : DqnAgent(registry, config, LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

DqnAgent::DqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                   std::shared_ptr<nn::Backend> backend)
    : registry_(&registry), config_(config), device_(backend->device()) {
  config_.Validate();
  config_.seed = seeds.front();
  if (config_.algo != "dqn") throw std::invalid_argument("DqnAgent: the config's algo is \"" + config_.algo + "\"");
  const auto k = static_cast<int64_t>(seeds.size());
  const std::string refused = Unbatchable(registry, config_, static_cast<int>(k));
  if (!refused.empty()) throw std::invalid_argument(refused);
  const EnvSpec& spec = DiscreteSpec(registry, config_.env_id, "DQN");
  obs_dim_ = static_cast<int>(spec.obs_dim());
  num_actions_ = static_cast<int>(spec.action_space.n);
  n_ = config_.num_envs;
  const int64_t b = config_.batch_size;
  const PriorityOptions priorities{config_.per_alpha, config_.per_eps, config_.per_beta,
                                   std::max<int64_t>(config_.PlannedUpdates(), 1)};
  ReplayOptions replay{config_.buffer_size, obs_dim_, n_, b, config_.prioritized_replay, priorities};
  replay.lanes = k;
  replay_ = std::make_unique<ReplayMemory>(device_, replay);  // first: it refuses what would not fit
  replay_->SetLaneSeeds(seeds);

  // A learner of K replicas; its rows per replica: its envs, its Double DQN minibatch and its
  // evaluation envs.
  QLearnerOptions options = LearnerOptionsFor(config_, spec);
  options.batch_size = static_cast<int>(b);
  options.max_act_batch = static_cast<int>(std::max({n_, config_.double_dqn ? b : int64_t{1}, config_.eval_episodes}));
  learner_ = std::make_unique<QLearner>(std::move(backend), ForLanes(options, seeds));
  void* stream = learner_->backend().native_stream();
  ops_ = MakeAgentOps(device_, stream);
  env_ = MakeLaneEnvs(registry, config_, seeds, device_, stream);
  lanes_ = std::make_unique<AgentLanes>(registry, config_, device_, stream, std::move(seeds));
  AllocateBuffers();
  // One graph per iteration needs the same work in every iteration once learning runs: a whole
  // number of gradient steps per vector step, and an env whose step is a launch on the stream.
  const double updates_per_step = config_.replay_ratio * static_cast<double>(n_);
  if (config_.cuda_graph && updates_per_step >= 1.0 && updates_per_step == std::floor(updates_per_step) &&
      env_->step_capturable()) {
    graph_updates_ = static_cast<int64_t>(updates_per_step);
    graph_targets_ = n_ % config_.target_update_interval == 0 ? n_ / config_.target_update_interval : 0;
  }
  next_target_step_ = config_.learning_starts + config_.target_update_interval;
  learning_resumes_at_ = config_.learning_starts;
}

DqnAgent::~DqnAgent() = default;

void DqnAgent::AllocateBuffers() {
  const int64_t k = lanes(), n = n_, b = config_.batch_size;
  obs_ = Buffer<float>(device_, k * n * obs_dim_);
  actions_ = Buffer<int32_t>(device_, k * n);
  counters_dev_ = Buffer<StepCounters>(device_, 1);
  const StepCounters zero{0, 0};
  counters_dev_.FromHost(&zero, 1);
  next_actions_ = Buffer<int32_t>(device_, k * b);
  next_q_ = Buffer<float>(device_, k * b);
  targets_ = Buffer<float>(device_, k * b);
}

double DqnAgent::Epsilon(int64_t step) const { return ScheduledEpsilon(epsilon_schedule(), step); }

EpsilonSchedule DqnAgent::epsilon_schedule() const {
  return EpsilonSchedule{config_.start_e, config_.end_e,
                         config_.exploration_fraction * static_cast<double>(config_.total_steps)};
}

DqnAgent::IterationPlan DqnAgent::PlanIteration() {
  const int64_t step = global_step_ + n_, stored = std::min(replay_->size() + n_, config_.buffer_size);
  IterationPlan plan;
  plan.greedy = Epsilon(global_step_) < 1.0;
  if (step > learning_resumes_at_ && stored >= config_.batch_size) {
    update_debt_ += config_.replay_ratio * static_cast<double>(n_);
    for (; update_debt_ >= 1.0; update_debt_ -= 1.0) ++plan.updates;
    for (; step >= next_target_step_; next_target_step_ += config_.target_update_interval) ++plan.targets;
  }
  return plan;
}

// On CUDA with cuda_graph, once learning runs, every iteration of a config with a whole number
// of gradient steps per vector step queues the same work: it is captured into one graph at the
// second such iteration and replayed, one launch per iteration (CudaGraph). Every value that
// changes between iterations lives on the device (step counters, hence epsilon and the
// exploration keys; the replay head and size; the sampling counter; Adam's step). Iterations that
// do other work (before learning starts; the first learning one, which catches up on target
// updates; any after a resume that does) run eagerly, and so does everything after a failed
// capture. The first fitting iteration runs the graph's work eagerly, greedy forward included.
void DqnAgent::Iterate() {
  const IterationPlan plan = PlanIteration();
  if (IterationGraphFits(plan)) {
    iteration_graph_.Run(learner_->backend(), [this] { IterationKernels(); });
    // Target updates whose interval does not divide num_envs fall on some iterations only.
    if (graph_targets_ == 0)
      for (int64_t t = 0; t < plan.targets; ++t) UpdateTarget();
  } else {
    Collect(plan.greedy);
    for (int64_t u = 0; u < plan.updates; ++u) Update();
    for (int64_t t = 0; t < plan.targets; ++t) UpdateTarget();
  }
  // The host's mirrors of what the iteration advanced on the device.
  global_step_ += n_;
  replay_->Stored(n_);
}

bool DqnAgent::IterationGraphFits(const IterationPlan& plan) const {
  if (graph_updates_ < 0 || iteration_graph_.failed() || (device_ != Device::kCuda && !iteration_graph_on_cpu_))
    return false;
  return plan.updates == graph_updates_ && (graph_targets_ == 0 || plan.targets == graph_targets_);
}

void DqnAgent::IterationKernels() {
  Collect(true);
  for (int64_t u = 0; u < graph_updates_; ++u) UpdateKernels();
  for (int64_t t = 0; t < graph_targets_; ++t) UpdateTarget();
}

// One greedy forward, one exploration pass (each lane with its seed), one step of the K x n envs,
// one insertion into the replay lanes, one pass appending each lane's finished episodes to its
// ring, and the device's step counters: all on the back end's stream, no host values that change
// between iterations.
void DqnAgent::Collect(bool greedy) {
  const int64_t rows = lanes() * n_;
  void* stream = learner_->backend().native_stream();
  VectorEnv& env = *env_;
  // On the network's stream, without waiting: the host queues the whole iteration ahead.
  CopyBytesAsync(obs_.data(), env.obs(), rows * obs_dim_ * sizeof(float), device_, stream);
  if (greedy) learner_->Act(Rows(obs_.data(), rows, obs_dim_, device_), Vec(actions_.data(), rows, device_));
  ops_->Explore(actions_.data(), lanes(), n_, counters_dev_.data(), epsilon_schedule(), lanes_->seeds_dev(),
                num_actions_, lanes_->hold());
  env.Step(actions_.data());
  replay_->Insert(*ops_, n_, obs_.data(), actions_.data(), env.rewards(), env.obs(), env.final_obs(), env.terminated(),
                  env.truncated());
  ops_->CollectEpisodes(env.terminated(), env.truncated(), env.episode_returns(), env.episode_lengths(), lanes(), n_,
                        lanes_->rings());
  ops_->AdvanceSteps(counters_dev_.data(), n_);
}

// On CUDA, where the whole iteration is not one graph, the gradient step alone is a CudaGraph:
// eager at the first update, captured at the second and replayed from then on.
void DqnAgent::Update() {
  if (device_ == Device::kCuda && config_.cuda_graph && graph_updates_ < 0) {
    update_graph_.Run(learner_->backend(), [this] { UpdateKernels(); });
  } else {
    UpdateKernels();
  }
}

// One launch samples every lane's minibatch (a lane of the replay memory each), then the TD
// targets from the target network (Double DQN: at the online argmax), one Adam step for all; with
// prioritized replay the loss is weighted and the TD errors come back as the sampled rows' new
// priorities, one launch for all lanes.
void DqnAgent::UpdateKernels() {
  const int64_t rows = lanes() * config_.batch_size;
  const bool prioritized = config_.prioritized_replay;
  ReplayMemory& replay = *replay_;
  replay.Sample(*ops_, seeds().front(), static_cast<int>(config_.n_step), static_cast<float>(config_.gamma));
  const auto next_obs = Rows(replay.batch_next_obs(), rows, obs_dim_, device_);
  if (config_.double_dqn) {
    learner_->Act(next_obs, Vec(next_actions_.data(), rows, device_));
    learner_->TargetQAt(next_obs, Vec<const int32_t>(next_actions_.data(), rows, device_),
                        Vec(next_q_.data(), rows, device_));
  } else {
    learner_->TargetMaxQ(next_obs, Vec(next_q_.data(), rows, device_));
  }
  ops_->TdTargets(replay.batch_rewards(), replay.batch_bootstrap(), next_q_.data(), targets_.data(), rows);
  learner_->TrainStep(
      Rows(replay.batch_obs(), rows, obs_dim_, device_), Vec<const int32_t>(replay.batch_actions(), rows, device_),
      Vec<const float>(targets_.data(), rows, device_),
      prioritized ? Vec<const float>(replay.batch_weights(), rows, device_) : nn::VectorView<const float>(),
      prioritized ? Vec(replay.td_errors(), rows, device_) : nn::VectorView<float>());
  if (prioritized) replay.UpdatePriorities(*ops_);
}

MetricsRow DqnAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  return lanes_->Progress(lane, global_step_, Epsilon(global_step_), seconds, steps, *learner_, loop);
}

EvalResult DqnAgent::Evaluate(int lane, int64_t index) {
  return lanes_->Evaluate(lane, index, global_step_, *learner_);
}

std::vector<EvalResult> DqnAgent::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) {
  return lanes_->EvaluateModels(listed, episodes, num_envs, seed_offset, *learner_);
}

}  // namespace cugym::agent
