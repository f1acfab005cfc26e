// The DQN iteration for K >= 1 lanes (dqn.h): one iteration per vector step (act, step, store, the
// gradient steps and target updates that fall on it), each op one launch for all lanes; progress
// rows, model files, and DQN's part of checkpoints and Keep (the rest is the families').
#include "agents/off_policy/dqn.h"

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

ReplayOptions DqnReplayOptions(const TrainConfig& c, const EnvSpec& spec) {
  const PriorityOptions priorities{c.per_alpha, c.per_eps, c.per_beta, std::max<int64_t>(c.PlannedUpdates(), 1)};
  return ReplayOptions{c.buffer_size, static_cast<int>(spec.obs_dim()), c.num_envs, c.batch_size, c.prioritized_replay,
                       priorities};
}

Algorithm DqnAlgorithm() {
  Algorithm a;
  a.name = "dqn";
  a.metrics = QMetricColumns();
  a.make = MakeAgentOf<DqnAgent>;
  a.replay_bytes = [](const TrainConfig& c, const EnvSpec& spec) { return ReplayBytes(DqnReplayOptions(c, spec)); };
  a.reads = QLearningKeys();
  a.check = OffPolicyAgent::CheckReplay;
  a.planned_updates = OffPolicyAgent::PlannedUpdates;
  a.unbatchable = [](const Registry& registry, const TrainConfig& c) {
    DiscreteSpec(registry, c.env_id, "DQN");
    return std::string();
  };
  return a;
}

DqnAgent::DqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : DqnAgent(registry, config, LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

DqnAgent::DqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                   std::shared_ptr<nn::Backend> backend)
    : OffPolicyAgent(registry, config, seeds, backend, "dqn") {
  const EnvSpec& spec = DiscreteSpec(registry, config_.env_id, "DQN");
  obs_dim_ = static_cast<int>(spec.obs_dim());
  num_actions_ = static_cast<int>(spec.action_space.n);
  const int64_t k = static_cast<int64_t>(seeds.size()), b = config_.batch_size;
  MakeReplay(DqnReplayOptions(config_, spec), seeds);

  // A learner of K replicas; its rows per replica: its envs, its Double DQN minibatch and its
  // evaluation envs.
  QLearnerOptions options = LearnerOptionsFor(config_, spec);
  options.batch_size = static_cast<int>(b);
  options.max_act_batch = static_cast<int>(std::max({n_, config_.double_dqn ? b : int64_t{1}, config_.eval_episodes}));
  learner_ = std::make_unique<QLearner>(std::move(backend), ForLanes(options, seeds));
  MakeLanes(std::move(seeds), stream());
  obs_ = Buffer<float>(device_, k * n_ * obs_dim_);
  actions_ = Buffer<int32_t>(device_, k * n_);
  next_actions_ = Buffer<int32_t>(device_, k * b);
  next_q_ = Buffer<float>(device_, k * b);
  targets_ = Buffer<float>(device_, k * b);
  // One graph per iteration needs the same work in every iteration once learning runs: a whole
  // number of gradient steps per vector step, and an env whose step is a launch on the stream.
  if (config_.cuda_graph && env_->step_capturable()) {
    graph_updates_ = WholeUpdatesPerStep();
    graph_targets_ = n_ % config_.target_update_interval == 0 ? n_ / config_.target_update_interval : 0;
  }
  next_target_step_ = config_.learning_starts + config_.target_update_interval;
}

DqnAgent::~DqnAgent() = default;

double DqnAgent::Epsilon(int64_t step) const { return ScheduledEpsilon(EpsilonScheduleOf(config_), step); }

DqnAgent::IterationPlan DqnAgent::PlanIteration() {
  const int64_t step = global_step_ + n_;
  IterationPlan plan;
  plan.greedy = Epsilon(global_step_) < 1.0;
  if (PlanUpdates(&plan.updates))
    for (; step >= next_target_step_; next_target_step_ += config_.target_update_interval) ++plan.targets;
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
    iteration_graph_.Run(*backend_, [this] { IterationKernels(); });
    // Target updates whose interval does not divide num_envs fall on some iterations only.
    if (graph_targets_ == 0)
      for (int64_t t = 0; t < plan.targets; ++t) UpdateTarget();
  } else {
    Collect(plan.greedy);
    for (int64_t u = 0; u < plan.updates; ++u) Update();
    for (int64_t t = 0; t < plan.targets; ++t) UpdateTarget();
  }
  Stepped();
}

bool DqnAgent::IterationGraphFits(const IterationPlan& plan) const {
  if (graph_updates_ < 0 || !GraphAllowed()) return false;
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
  VectorEnv& env = *env_;
  // On the network's stream, without waiting: the host queues the whole iteration ahead.
  CopyBytesAsync(obs_.data(), env.obs(), rows * obs_dim_ * sizeof(float), device_, stream());
  if (greedy) learner_->Act(Rows(obs_.data(), rows, obs_dim_, device_), Vec(actions_.data(), rows, device_));
  explore_ops_->Explore(actions_.data(), lanes(), n_, counters_dev_.data(), EpsilonScheduleOf(config_),
                        lanes_->seeds_dev(), num_actions_, lanes_->hold());
  env.Step(actions_.data());
  replay_->Insert(*replay_ops_, n_, obs_.data(), actions_.data(), env.rewards(), env.obs(), env.final_obs(),
                  env.terminated(), env.truncated());
  episode_ops_->CollectEpisodes(env.terminated(), env.truncated(), env.episode_returns(), env.episode_lengths(),
                                lanes(), n_, lanes_->rings());
  episode_ops_->AdvanceSteps(counters_dev_.data(), n_);
}

// On CUDA, where the whole iteration is not one graph, the gradient step alone is a CudaGraph:
// eager at the first update, captured at the second and replayed from then on.
void DqnAgent::Update() {
  if (device_ == Device::kCuda && config_.cuda_graph && graph_updates_ < 0) {
    update_graph_.Run(*backend_, [this] { UpdateKernels(); });
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
  replay.Sample(*replay_ops_, seeds().front(), static_cast<int>(config_.n_step), static_cast<float>(config_.gamma));
  const auto next_obs = Rows(replay.batch_next_obs(), rows, obs_dim_, device_);
  if (config_.double_dqn) {
    learner_->Act(next_obs, Vec(next_actions_.data(), rows, device_));
    learner_->TargetQAt(next_obs, Vec<const int32_t>(next_actions_.data(), rows, device_),
                        Vec(next_q_.data(), rows, device_));
  } else {
    learner_->TargetMaxQ(next_obs, Vec(next_q_.data(), rows, device_));
  }
  replay_ops_->TdTargets(replay.batch_rewards(), replay.batch_bootstrap(), next_q_.data(), targets_.data(), rows);
  learner_->TrainStep(
      Rows(replay.batch_obs(), rows, obs_dim_, device_), Vec<const int32_t>(replay.batch_actions(), rows, device_),
      Vec<const float>(targets_.data(), rows, device_),
      prioritized ? Vec<const float>(replay.batch_weights(), rows, device_) : nn::VectorView<const float>(),
      prioritized ? Vec(replay.td_errors(), rows, device_) : nn::VectorView<float>());
  if (prioritized) replay.UpdatePriorities(*replay_ops_);
}

MetricsRow DqnAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  return lanes_->Progress(lane, global_step_, Epsilon(global_step_), seconds, steps, *learner_, loop);
}

void DqnAgent::SaveModel(int lane, const std::string& path) const {
  SaveQModel(path, Solo(lane), config_.env_id, global_step_);
}

void DqnAgent::LoadModel(int lane, const std::string& path) {
  LoadQModel(path, Solo(lane), lane, *learner_);
  lanes_->Forget();
}

void DqnAgent::SaveOwn(int lane, CheckpointWriter& out) const {
  out.Int("cugym.next_target_step", next_target_step_);
  Solo(lane).Save(out);
}

void DqnAgent::CheckOwn(const std::vector<std::unique_ptr<CheckpointReader>>& in) const {
  CheckSameCounter(in, "cugym.next_target_step");
}

void DqnAgent::LoadOwn(int lane, const CheckpointReader& in) {
  QLearner& solo = Solo(lane);
  solo.Load(in.file(), in.path());
  if (lanes() > 1) learner_->CopyReplicaFrom(lane, solo);
}

void DqnAgent::ResumedOwn(const CheckpointReader& first) { next_target_step_ = first.Int("cugym.next_target_step"); }

void DqnAgent::DropGraphs() {
  iteration_graph_.Drop();
  update_graph_.Drop();
}

std::unique_ptr<LaneAgent> DqnAgent::MakeLike(std::vector<uint64_t> seeds) const {
  return std::unique_ptr<LaneAgent>(new DqnAgent(*registry_, config_, std::move(seeds), backend_));
}

void DqnAgent::KeepOwn(const std::vector<int>& keep, LaneAgent& next) const {
  auto& to = static_cast<DqnAgent&>(next);
  for (std::size_t i = 0; i < keep.size(); ++i) to.learner_->CopyReplicaFrom(static_cast<int>(i), Solo(keep[i]));
  to.next_target_step_ = next_target_step_;
}

}  // namespace cugym::agent
