// The DQN training loop: one iteration per vector step (act, step, store, the gradient steps and
// target updates that fall on it), logging and evaluation. Its parts live apart: the replay
// memory (replay_memory.h), the episode statistics (episode_stats.h), the CUDA graph policy
// (cuda_graph.h), the checkpoint format (dqn_checkpoint.cpp), the device kernels (agent_ops.h).
#include "agents/dqn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace cugym::agent {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nn::ConstBatchView Rows(const float* data, int64_t rows, int64_t cols, Device device) {
  return nn::ConstBatchView(data, rows, cols, device);
}
template <class T>
nn::VectorView<T> Vec(T* data, int64_t size, Device device) {
  return nn::VectorView<T>(data, size, device);
}

QLearnerOptions LearnerOptions(const DqnConfig& c, const EnvSpec& spec) {
  QLearnerOptions options = LearnerOptionsFor(c, spec);
  options.batch_size = static_cast<int>(c.batch_size);
  options.max_act_batch =
      static_cast<int>(std::max({c.num_envs, c.double_dqn ? c.batch_size : int64_t{1}, c.eval_episodes}));
  return options;
}

}  // namespace

DqnAgent::DqnAgent(const Registry& registry, const DqnConfig& config, Device device)
    : config_(config), device_(device), spec_(DiscreteSpec(registry, config.env_id, "DQN")), last_eval_return_(kNaN) {
  config_.Validate();
  obs_dim_ = static_cast<int>(spec_.obs_dim());
  num_actions_ = static_cast<int>(spec_.action_space.n);
  const int64_t n = config_.num_envs, b = config_.batch_size;
  env_ = MakeVectorEnv(registry, config_.env_id, n, device);
  learner_ = std::make_unique<QLearner>(nn::MakeBackend(device), LearnerOptions(config_, spec_));
  ops_ = MakeAgentOps(device, learner_->backend().native_stream());
  env_->set_stream(learner_->backend().native_stream());  // one stream for the env, the agent and the network
  if (config_.eval_episodes > 0) {
    eval_env_ = MakeVectorEnv(registry, config_.env_id, config_.eval_episodes, device);
    eval_env_->set_stream(learner_->backend().native_stream());
    eval_actions_ = Buffer<int32_t>(device, config_.eval_episodes);
  }
  const PriorityOptions priorities{config_.per_alpha, config_.per_eps, config_.per_beta,
                                   std::max<int64_t>(config_.PlannedUpdates(), 1)};
  const ReplayOptions replay{config_.buffer_size, obs_dim_, n, b, config_.prioritized_replay, priorities};
  replay_ = std::make_unique<ReplayMemory>(device, replay);
  next_actions_ = Buffer<int32_t>(device, b);
  next_q_ = Buffer<float>(device, b);
  targets_ = Buffer<float>(device, b);
  prev_obs_ = Buffer<float>(device, n * obs_dim_);
  actions_ = Buffer<int32_t>(device, n);
  if (config_.exploration_hold_mu > 0) {
    held_actions_ = Buffer<int32_t>(device, n);
    hold_left_ = Buffer<int32_t>(device, n);
    hold_left_.Zero();
  }
  episodes_ = std::make_unique<EpisodeStats>(device);
  counters_dev_ = Buffer<StepCounters>(device, 1);
  const StepCounters zero{0, 0};
  counters_dev_.FromHost(&zero, 1);
  // One graph per iteration needs the same work in every iteration once learning runs: a whole
  // number of gradient steps per vector step, and an env whose step is a launch on the stream.
  const double updates_per_step = config_.replay_ratio * static_cast<double>(n);
  if (config_.cuda_graph && updates_per_step >= 1.0 && updates_per_step == std::floor(updates_per_step) &&
      env_->step_capturable()) {
    graph_updates_ = static_cast<int64_t>(updates_per_step);
    graph_targets_ = n % config_.target_update_interval == 0 ? n / config_.target_update_interval : 0;
  }

  env_->Reset(config_.seed);
  next_target_step_ = config_.learning_starts + config_.target_update_interval;
  learning_resumes_at_ = config_.learning_starts;
}

DqnAgent::~DqnAgent() = default;

double DqnAgent::Epsilon(int64_t step) const { return ScheduledEpsilon(epsilon_schedule(), step); }

EpsilonSchedule DqnAgent::epsilon_schedule() const {
  return EpsilonSchedule{config_.start_e, config_.end_e,
                         config_.exploration_fraction * static_cast<double>(config_.total_steps)};
}

ExploreHold DqnAgent::explore_hold() {
  if (config_.exploration_hold_mu <= 0) return {};
  return ExploreHold{held_actions_.data(), hold_left_.data(), static_cast<float>(config_.exploration_hold_mu),
                     static_cast<int32_t>(config_.exploration_max_hold)};
}

void DqnAgent::Train(const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
                     const std::function<void()>& on_checkpoint,
                     const std::function<bool(const DqnEvaluation&)>& on_eval) {
  const int64_t n = config_.num_envs;
  TrainLoop loop;
  loop.iterate = [&] {
    RunIteration(PlanIteration());
    // The host's mirrors of what the iteration advanced on the device.
    ++vector_steps_;
    global_step_ += n;
    replay_->Stored(n);
  };
  loop.progress = [&](double seconds, int64_t steps) {
    return ReadProgress(global_step_, wall_time_, Epsilon(global_step_), seconds, steps, *episodes_, *learner_,
                        last_eval_return_);
  };
  loop.evaluate = [&](int64_t k) { return Evaluate(k); };
  RunTrainLoop(config_, global_step_, wall_time_, last_eval_return_, loop, on_log, stop, on_checkpoint, on_eval);
}

DqnAgent::IterationPlan DqnAgent::PlanIteration() {
  const int64_t n = config_.num_envs;
  const int64_t step = global_step_ + n, stored = std::min(replay_->size() + n, config_.buffer_size);
  IterationPlan plan;
  plan.greedy = Epsilon(global_step_) < 1.0;
  if (step > learning_resumes_at_ && stored >= config_.batch_size) {
    update_debt_ += config_.replay_ratio * static_cast<double>(n);
    for (; update_debt_ >= 1.0; update_debt_ -= 1.0) ++plan.updates;
    for (; step >= next_target_step_; next_target_step_ += config_.target_update_interval) ++plan.targets;
  }
  return plan;
}

// On CUDA with cuda_graph, once learning runs, every iteration of a config with a whole number
// of gradient steps per vector step queues the same work: it is captured into one graph at the
// second such iteration and replayed, one launch per iteration (CudaGraph). Every value that
// changes between iterations lives on the device (step counters, hence epsilon and the
// exploration key; the replay head and size; the sampling counter; Adam's step). Iterations that
// do other work (before learning starts; the first learning one, which catches up on target
// updates; any after a resume that does) run eagerly, and so does everything after a failed
// capture. The first fitting iteration runs the graph's work eagerly, greedy forward included.
void DqnAgent::RunIteration(IterationPlan plan) {
  if (IterationGraphFits(plan)) {
    iteration_graph_.Run(learner_->backend(), [this] { IterationKernels(); });
    // Target updates whose interval does not divide num_envs fall on some iterations only.
    if (graph_targets_ == 0) {
      for (int64_t t = 0; t < plan.targets; ++t) UpdateTarget();
    }
    return;
  }
  CollectKernels(plan.greedy);
  for (int64_t u = 0; u < plan.updates; ++u) Update();
  for (int64_t t = 0; t < plan.targets; ++t) UpdateTarget();
}

bool DqnAgent::IterationGraphFits(const IterationPlan& plan) const {
  if (graph_updates_ < 0 || iteration_graph_.failed() || (device_ != Device::kCuda && !iteration_graph_on_cpu_))
    return false;
  return plan.updates == graph_updates_ && (graph_targets_ == 0 || plan.targets == graph_targets_);
}

void DqnAgent::IterationKernels() {
  CollectKernels(true);
  for (int64_t u = 0; u < graph_updates_; ++u) UpdateKernels();
  for (int64_t t = 0; t < graph_targets_; ++t) UpdateTarget();
}

void DqnAgent::CollectKernels(bool greedy) {
  const int64_t n = config_.num_envs;
  if (greedy) learner_->Act(Rows(env_->obs(), n, obs_dim_, device_), Vec(actions_.data(), n, device_));
  ops_->Explore(actions_.data(), n, counters_dev_.data(), epsilon_schedule(), config_.seed, num_actions_,
                explore_hold());
  // On the network's stream, without waiting: the host queues the whole iteration ahead.
  CopyBytesAsync(prev_obs_.data(), env_->obs(), n * obs_dim_ * sizeof(float), device_,
                 learner_->backend().native_stream());
  env_->Step(actions_.data());
  replay_->Insert(*ops_, n, prev_obs_.data(), actions_.data(), env_->rewards(), env_->obs(), env_->final_obs(),
                  env_->terminated(), env_->truncated());
  ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(), env_->episode_lengths(), n,
                        episodes_->ring());
  ops_->AdvanceSteps(counters_dev_.data(), n);
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

// Sample a minibatch, the TD targets from the target network (Double DQN: at the online argmax),
// one Adam step; with prioritized replay the loss is weighted and the TD errors come back as the
// sampled rows' new priorities.
void DqnAgent::UpdateKernels() {
  const int64_t b = config_.batch_size;
  replay_->Sample(*ops_, config_.seed, static_cast<int>(config_.n_step), static_cast<float>(config_.gamma));
  const auto next_obs = Rows(replay_->batch_next_obs(), b, obs_dim_, device_);
  if (config_.double_dqn) {
    learner_->Act(next_obs, Vec(next_actions_.data(), b, device_));
    learner_->TargetQAt(next_obs, Vec<const int32_t>(next_actions_.data(), b, device_),
                        Vec(next_q_.data(), b, device_));
  } else {
    learner_->TargetMaxQ(next_obs, Vec(next_q_.data(), b, device_));
  }
  ops_->TdTargets(replay_->batch_rewards(), replay_->batch_bootstrap(), next_q_.data(), targets_.data(), b);
  const bool prioritized = replay_->prioritized();
  learner_->TrainStep(Rows(replay_->batch_obs(), b, obs_dim_, device_), Vec(replay_->batch_actions(), b, device_),
                      Vec<const float>(targets_.data(), b, device_),
                      prioritized ? Vec(replay_->batch_weights(), b, device_) : nn::VectorView<const float>(),
                      prioritized ? Vec(replay_->td_errors(), b, device_) : nn::VectorView<float>());
  if (prioritized) replay_->UpdatePriorities(*ops_);
}

void DqnAgent::DropGraphs() {
  update_graph_.Drop();
  iteration_graph_.Drop();
}

EvalResult DqnAgent::Evaluate(int64_t k) {
  if (!eval_env_) throw std::logic_error("DqnAgent::Evaluate: eval_episodes is 0");
  return EvaluateLearner(*eval_env_, *learner_, eval_actions_, config_.seed, k);
}

}  // namespace cugym::agent
