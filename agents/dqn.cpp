// The DQN training loop, checkpoints and greedy evaluation.
#include "agents/dqn.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/build_info.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"

namespace cugym {
namespace {

constexpr int64_t kEpisodeRing = 4096;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nn::ConstBatchView Rows(const float* data, int64_t rows, int64_t cols, Device device) {
  return nn::ConstBatchView(data, rows, cols, device);
}
template <class T>
nn::VectorView<T> Vec(T* data, int64_t size, Device device) {
  return nn::VectorView<T>(data, size, device);
}

const EnvSpec& DiscreteSpec(const Registry& registry, const std::string& id) {
  const EnvSpec& spec = registry.Get(id).spec;
  if (!spec.action_space.is_discrete())
    throw std::invalid_argument("DQN needs a discrete action space, but " + id + " has " +
                                spec.action_space.ToString() + " actions");
  return spec;
}

std::vector<int> LayerSizes(const EnvSpec& spec, const std::vector<int>& hidden) {
  std::vector<int> sizes = {static_cast<int>(spec.obs_dim())};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(static_cast<int>(spec.action_space.n));
  return sizes;
}

// Gradient steps a run from step 0 takes (as Train counts them): replay_ratio per env step, over
// the vector steps that end past learning_starts with a full minibatch stored.
int64_t PlannedUpdates(const DqnConfig& c) {
  const int64_t n = c.num_envs;
  const int64_t vector_steps = (c.total_steps + n - 1) / n;
  const int64_t first = std::max(c.learning_starts / n + 1, (c.batch_size + n - 1) / n);  // 1-based
  const int64_t learning = std::max<int64_t>(vector_steps - first + 1, 0);
  return static_cast<int64_t>(std::floor(c.replay_ratio * static_cast<double>(n * learning) + 1e-9));
}

std::string Meta(const SafetensorsMetadata& meta, const std::string& key, const std::string& where) {
  auto it = meta.find(key);
  if (it == meta.end()) throw std::invalid_argument(where + ": no '" + key + "' in its metadata");
  return it->second;
}

int64_t MetaInt(const SafetensorsMetadata& meta, const std::string& key, const std::string& where) {
  const std::string text = Meta(meta, key, where);
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(where + ": metadata " + key + " is not an integer ('" + text + "')");
}

}  // namespace

DqnAgent::DqnAgent(const Registry& registry, const DqnConfig& config, Device device)
    : config_(config), device_(device), spec_(DiscreteSpec(registry, config.env_id)), last_eval_return_(kNaN) {
  config_.Validate();
  obs_dim_ = static_cast<int>(spec_.obs_dim());
  num_actions_ = static_cast<int>(spec_.action_space.n);
  const int64_t n = config_.num_envs;
  env_ = MakeVectorEnv(registry, config_.env_id, n, device);

  agent::QLearnerOptions options;
  options.layer_sizes = LayerSizes(spec_, config_.hidden_sizes);
  options.batch_size = static_cast<int>(config_.batch_size);
  options.max_act_batch =
      static_cast<int>(std::max({n, config_.double_dqn ? config_.batch_size : int64_t{1}, config_.eval_episodes}));
  options.loss = nn::ParseLoss(config_.loss);
  options.adam.lr = config_.learning_rate;
  options.adam.eps = config_.adam_eps;
  options.adam.max_grad_norm = config_.max_grad_norm;
  if (config_.anneal_lr) options.adam.lr_decay_updates = std::max<int64_t>(PlannedUpdates(config_), 1);
  options.seed = config_.seed;
  options.dueling = config_.dueling;
  learner_ = std::make_unique<agent::QLearner>(nn::MakeBackend(device), options);
  ops_ = agent::MakeAgentOps(device, learner_->backend().native_stream());
  env_->set_stream(learner_->backend().native_stream());  // one stream for the env, the agent and the network
  if (config_.eval_episodes > 0) {
    eval_env_ = MakeVectorEnv(registry, config_.env_id, config_.eval_episodes, device);
    eval_env_->set_stream(learner_->backend().native_stream());
    eval_actions_ = Buffer<int32_t>(device, config_.eval_episodes);
  }

  const int64_t cap = config_.buffer_size, b = config_.batch_size;
  replay_obs_ = Buffer<float>(device, cap * obs_dim_);
  replay_next_obs_ = Buffer<float>(device, cap * obs_dim_);
  replay_rewards_ = Buffer<float>(device, cap);
  replay_dones_ = Buffer<float>(device, cap);
  replay_ends_ = Buffer<uint8_t>(device, cap);
  replay_actions_ = Buffer<int32_t>(device, cap);
  // Zeroed, as the episode ring below: checkpoints save the whole arrays, rows never written
  // included, so identical runs write identical files.
  for (Buffer<float>* f : {&replay_obs_, &replay_next_obs_, &replay_rewards_, &replay_dones_}) f->Zero();
  replay_ends_.Zero();
  replay_actions_.Zero();
  batch_obs_ = Buffer<float>(device, b * obs_dim_);
  batch_next_obs_ = Buffer<float>(device, b * obs_dim_);
  batch_rewards_ = Buffer<float>(device, b);
  batch_bootstrap_ = Buffer<float>(device, b);
  batch_actions_ = Buffer<int32_t>(device, b);
  next_actions_ = Buffer<int32_t>(device, b);
  next_q_ = Buffer<float>(device, b);
  targets_ = Buffer<float>(device, b);
  if (config_.prioritized_replay) {
    agent::SizePriorityTree(tree_, cap);
    priority_nodes_ = Buffer<float>(device, 2 * tree_.leaves);
    max_priority_ = Buffer<float>(device, 1);
    min_prob_ = Buffer<float>(device, 1);
    batch_weights_ = Buffer<float>(device, b);
    td_errors_ = Buffer<float>(device, b);
    batch_rows_ = Buffer<int64_t>(device, b);
    tree_.nodes = priority_nodes_.data();
    tree_.max_leaf = max_priority_.data();
    tree_.min_prob = min_prob_.data();
    tree_.alpha = static_cast<float>(config_.per_alpha);
    tree_.eps = static_cast<float>(config_.per_eps);
    tree_.beta0 = static_cast<float>(config_.per_beta);
    tree_.beta_updates = std::max<int64_t>(PlannedUpdates(config_), 1);
    ResetPriorities();
  }
  prev_obs_ = Buffer<float>(device, n * obs_dim_);
  actions_ = Buffer<int32_t>(device, n);
  if (config_.exploration_hold_mu > 0) {
    held_actions_ = Buffer<int32_t>(device, n);
    hold_left_ = Buffer<int32_t>(device, n);
    hold_left_.Zero();
  }
  ring_returns_ = Buffer<float>(device, kEpisodeRing);
  ring_lengths_ = Buffer<int32_t>(device, kEpisodeRing);
  ring_returns_.Zero();
  ring_lengths_.Zero();
  ring_count_ = Buffer<unsigned long long>(device, 1);
  ring_count_.Zero();
  replay_size_dev_ = Buffer<int64_t>(device, 1);
  replay_size_dev_.Zero();
  replay_head_dev_ = Buffer<int64_t>(device, 1);
  replay_head_dev_.Zero();
  draws_dev_ = Buffer<uint32_t>(device, 1);
  draws_dev_.Zero();
  counters_dev_ = Buffer<agent::StepCounters>(device, 1);
  const agent::StepCounters zero{0, 0};
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

double DqnAgent::Epsilon(int64_t step) const { return agent::ScheduledEpsilon(epsilon_schedule(), step); }

agent::EpsilonSchedule DqnAgent::epsilon_schedule() const {
  return agent::EpsilonSchedule{config_.start_e, config_.end_e,
                                config_.exploration_fraction * static_cast<double>(config_.total_steps)};
}

agent::ReplayArrays DqnAgent::replay_arrays() {
  return agent::ReplayArrays{replay_obs_.data(),
                             replay_next_obs_.data(),
                             replay_actions_.data(),
                             replay_rewards_.data(),
                             replay_dones_.data(),
                             replay_ends_.data(),
                             replay_size_dev_.data(),
                             replay_head_dev_.data(),
                             draws_dev_.data(),
                             config_.buffer_size,
                             obs_dim_,
                             config_.num_envs};
}

agent::EpisodeRing DqnAgent::episode_ring() {
  return agent::EpisodeRing{ring_returns_.data(), ring_lengths_.data(), ring_count_.data(), kEpisodeRing};
}

agent::ExploreHold DqnAgent::explore_hold() {
  if (config_.exploration_hold_mu <= 0) return {};
  return agent::ExploreHold{held_actions_.data(), hold_left_.data(), static_cast<float>(config_.exploration_hold_mu),
                            static_cast<int32_t>(config_.exploration_max_hold)};
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
  ops_->AddTransitions(replay_arrays(), n, prev_obs_.data(), actions_.data(), env_->rewards(), env_->obs(),
                       env_->final_obs(), env_->terminated(), env_->truncated());
  if (tree_.nodes != nullptr) ops_->PrioritizeNewRows(replay_arrays(), tree_, n);
  ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(), env_->episode_lengths(), n,
                        episode_ring());
  ops_->AdvanceSteps(counters_dev_.data(), n);
}

void DqnAgent::ResetPriorities() {
  priority_nodes_.Zero();
  const float one = 1.0f;
  max_priority_.FromHost(&one, 1);
}

void DqnAgent::UpdateKernels() {
  const int64_t b = config_.batch_size;
  const agent::Minibatch batch{batch_obs_.data(),     batch_next_obs_.data(),  batch_actions_.data(),
                               batch_rewards_.data(), batch_bootstrap_.data(), batch_rows_.data(),
                               batch_weights_.data()};
  ops_->Sample(replay_arrays(), batch, b, config_.seed, static_cast<int>(config_.n_step),
               static_cast<float>(config_.gamma), tree_);
  const auto next_obs = Rows(batch_next_obs_.data(), b, obs_dim_, device_);
  if (config_.double_dqn) {
    learner_->Act(next_obs, Vec(next_actions_.data(), b, device_));
    learner_->TargetQAt(next_obs, Vec<const int32_t>(next_actions_.data(), b, device_),
                        Vec(next_q_.data(), b, device_));
  } else {
    learner_->TargetMaxQ(next_obs, Vec(next_q_.data(), b, device_));
  }
  ops_->TdTargets(batch_rewards_.data(), batch_bootstrap_.data(), next_q_.data(), targets_.data(), b);
  // With prioritized replay the loss is weighted and the TD errors come back as new priorities.
  const bool prioritized = tree_.nodes != nullptr;
  learner_->TrainStep(Rows(batch_obs_.data(), b, obs_dim_, device_),
                      Vec<const int32_t>(batch_actions_.data(), b, device_),
                      Vec<const float>(targets_.data(), b, device_),
                      prioritized ? Vec<const float>(batch_weights_.data(), b, device_) : nn::VectorView<const float>(),
                      prioritized ? Vec(td_errors_.data(), b, device_) : nn::VectorView<float>());
  if (prioritized) ops_->UpdatePriorities(tree_, batch_rows_.data(), td_errors_.data(), b);
}

// On CUDA, where the whole iteration is not one graph (RunIteration), the gradient step
// (sampling, target network, TD targets, forward, backward, Adam) is captured into a CUDA graph at
// the second update and replayed: one launch per update. The first runs eagerly, so lazy module
// loading, cuBLAS's first-call set-up and the scratch allocations happen outside the capture.
// Every value that changes between updates (draw counter, replay size, Adam's step) lives on the
// device. Should capture fail, the step runs eagerly, with one line on stderr
// (scripts/gpu-check.sh counts that line as a failure).
void DqnAgent::Update() {
  if (device_ == Device::kCuda && config_.cuda_graph && !graph_failed_ && graph_updates_ < 0) {
    if (!update_graph_ && !warmed_up_) {
      UpdateKernels();
      warmed_up_ = true;
      return;
    }
    if (!update_graph_) {
      try {
        update_graph_ = learner_->backend().Capture([this] { UpdateKernels(); });
      } catch (const std::exception& e) {
        CaptureFailed(e);
        UpdateKernels();
        return;
      }
    }
    update_graph_->Replay();
    return;
  }
  UpdateKernels();
}

void DqnAgent::CaptureFailed(const std::exception& e) {
  graph_failed_ = true;
  std::fprintf(stderr, "cugym train: CUDA graph capture failed (%s); running updates eagerly\n", e.what());
}

void DqnAgent::DropGraphs() {
  update_graph_.reset();
  warmed_up_ = false;
  iteration_graph_.reset();
  iteration_warmed_up_ = false;
}

DqnAgent::IterationPlan DqnAgent::PlanIteration() {
  const int64_t n = config_.num_envs;
  const int64_t step = global_step_ + n, stored = std::min(replay_size_ + n, config_.buffer_size);
  IterationPlan plan;
  plan.greedy = Epsilon(global_step_) < 1.0;
  if (step > learning_resumes_at_ && stored >= config_.batch_size) {
    update_debt_ += config_.replay_ratio * static_cast<double>(n);
    for (; update_debt_ >= 1.0; update_debt_ -= 1.0) ++plan.updates;
    for (; step >= next_target_step_; next_target_step_ += config_.target_update_interval) ++plan.targets;
  }
  return plan;
}

bool DqnAgent::IterationGraphFits(const IterationPlan& plan) const {
  if (graph_updates_ < 0 || graph_failed_ || (device_ != Device::kCuda && !iteration_graph_on_cpu_)) return false;
  return plan.updates == graph_updates_ && (graph_targets_ == 0 || plan.targets == graph_targets_);
}

bool DqnAgent::CaptureIterationGraph() {
  try {
    iteration_graph_ = learner_->backend().Capture([this] {
      CollectKernels(true);
      for (int64_t u = 0; u < graph_updates_; ++u) UpdateKernels();
      for (int64_t t = 0; t < graph_targets_; ++t) learner_->UpdateTarget(static_cast<float>(config_.tau));
    });
  } catch (const std::exception& e) {
    CaptureFailed(e);
    return false;
  }
  return true;
}

// On CUDA with cuda_graph, once learning runs, every iteration of a config with a whole number
// of gradient steps per vector step queues the same work: it is captured into one graph at the
// second such iteration and replayed, one launch per iteration. Every value that changes between
// iterations lives on the device (step counters, hence epsilon and the exploration key; the
// replay head and size; the sampling counter; Adam's step). Iterations that do other work (before
// learning starts; the first learning one, which catches up on target updates; any after a
// resume that does) run eagerly, and so does everything after a failed capture.
void DqnAgent::RunIteration(IterationPlan plan) {
  if (IterationGraphFits(plan)) {
    if (iteration_graph_ || (iteration_warmed_up_ && CaptureIterationGraph())) {
      iteration_graph_->Replay();
      // Target updates whose interval does not divide num_envs fall on some iterations only.
      if (graph_targets_ == 0) {
        for (int64_t t = 0; t < plan.targets; ++t) learner_->UpdateTarget(static_cast<float>(config_.tau));
      }
      return;
    }
    // The first fitting iteration runs the graph's work eagerly, greedy forward included, so
    // lazy module loading, cuBLAS's first-call set-up and scratch allocations precede the capture.
    iteration_warmed_up_ = true;
    plan.greedy = true;
  }
  CollectKernels(plan.greedy);
  for (int64_t u = 0; u < plan.updates; ++u) Update();
  for (int64_t t = 0; t < plan.targets; ++t) learner_->UpdateTarget(static_cast<float>(config_.tau));
}

DqnProgress DqnAgent::ReadProgress(double interval_seconds, int64_t interval_steps) {
  DqnProgress p;
  p.global_step = global_step_;
  p.wall_time = wall_time_;
  p.epsilon = Epsilon(global_step_);
  p.sps = interval_seconds > 0 ? static_cast<double>(interval_steps) / interval_seconds : 0;
  const unsigned long long count = ring_count_.ToHost()[0];
  const std::vector<float> returns = ring_returns_.ToHost();
  const std::vector<int32_t> lengths = ring_lengths_.ToHost();
  const unsigned long long first =
      std::max<unsigned long long>(episodes_read_, count > kEpisodeRing ? count - kEpisodeRing : 0);
  double sum_return = 0, sum_length = 0;
  for (unsigned long long k = first; k < count; ++k) {
    const int64_t slot = static_cast<int64_t>(k % kEpisodeRing);
    sum_return += returns[slot];
    sum_length += lengths[slot];
    last_returns_.push_back(returns[slot]);
  }
  if (last_returns_.size() > 100) last_returns_.erase(last_returns_.begin(), last_returns_.end() - 100);
  const double fresh = static_cast<double>(count - first);
  p.episodic_return = fresh > 0 ? sum_return / fresh : kNaN;
  p.episodic_length = fresh > 0 ? sum_length / fresh : kNaN;
  p.mean_return_100 = last_returns_.empty()
                          ? kNaN
                          : std::accumulate(last_returns_.begin(), last_returns_.end(), 0.0) / last_returns_.size();
  p.episodes = static_cast<int64_t>(count);
  p.eval_return = last_eval_return_;
  episodes_read_ = count;
  const agent::QLearner::Stats stats = learner_->ReadStats();
  p.td_loss = stats.updates > 0 ? stats.loss : kNaN;
  p.q_values = stats.updates > 0 ? stats.mean_q : kNaN;
  return p;
}

EvalResult DqnAgent::Evaluate(int64_t k) {
  if (!eval_env_) throw std::logic_error("DqnAgent::Evaluate: eval_episodes is 0");
  const int64_t n = config_.eval_episodes;
  // Seeds of their own, another for each evaluation: the training envs use config_.seed itself.
  eval_env_->Reset(config_.seed * 0x9E3779B97F4A7C15ull + 0xE7A1u + static_cast<uint64_t>(k));
  const auto obs = Rows(eval_env_->obs(), n, obs_dim_, device_);
  return PlayEpisodes(
      *eval_env_, std::vector<int64_t>(n, 1),
      [&](uint64_t, int32_t* actions) { learner_->Act(obs, Vec(actions, n, device_)); }, eval_actions_);
}

void DqnAgent::Train(const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
                     const std::function<void()>& on_checkpoint,
                     const std::function<bool(const DqnEvaluation&)>& on_eval) {
  using Clock = std::chrono::steady_clock;
  const int64_t n = config_.num_envs;
  auto interval_start = Clock::now();
  int64_t interval_first_step = global_step_;
  int64_t next_log = (global_step_ / config_.log_interval + 1) * config_.log_interval;
  int64_t next_checkpoint = config_.checkpoint_interval > 0
                                ? (global_step_ / config_.checkpoint_interval + 1) * config_.checkpoint_interval
                                : std::numeric_limits<int64_t>::max();
  const bool evaluate = eval_env_ != nullptr;
  bool finished = false;  // on_eval ended the run
  int64_t next_eval = (global_step_ / config_.eval_interval + 1) * config_.eval_interval;
  auto log = [&] {
    const auto now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - interval_start).count();
    wall_time_ += seconds;
    on_log(ReadProgress(seconds, global_step_ - interval_first_step));
    interval_start = Clock::now();
    interval_first_step = global_step_;
  };

  while (global_step_ < config_.total_steps && !finished && !stop()) {
    RunIteration(PlanIteration());
    // The host's mirrors of what the iteration advanced on the device.
    ++vector_steps_;
    global_step_ += n;
    replay_position_ = (replay_position_ + n) % config_.buffer_size;
    replay_size_ = std::min(replay_size_ + n, config_.buffer_size);
    if (global_step_ >= next_log) {
      log();
      next_log += config_.log_interval;
    }
    if (evaluate && global_step_ >= next_eval) {
      const auto start = Clock::now();
      DqnEvaluation e;
      e.global_step = global_step_;
      e.wall_time = wall_time_ + std::chrono::duration<double>(start - interval_start).count();
      e.result = Evaluate(next_eval / config_.eval_interval - 1);
      last_eval_return_ = e.result.mean_return;
      const auto took = Clock::now() - start;
      e.eval_seconds = std::chrono::duration<double>(took).count();
      interval_start += took;  // training time only: the evaluation is not counted
      if (on_eval) finished = on_eval(e);
      next_eval += config_.eval_interval;
    }
    if (global_step_ >= next_checkpoint) {
      on_checkpoint();
      next_checkpoint += config_.checkpoint_interval;
    }
  }
  // A row at the end of the run; an interrupted run writes none (its checkpoint resumes the
  // interval, so the resumed run's rows are the uninterrupted run's).
  if ((global_step_ >= config_.total_steps || finished) && global_step_ != interval_first_step) {
    log();
  } else {
    wall_time_ += std::chrono::duration<double>(Clock::now() - interval_start).count();
  }
}

namespace {

template <class T>
NamedTensor IntTensor(const std::string& name, const std::vector<T>& values) {
  const std::vector<int64_t> wide(values.begin(), values.end());
  return NamedTensor::FromI64(name, {static_cast<int64_t>(wide.size())}, wide.data());
}

NamedTensor FloatTensor(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  return NamedTensor::FromF32(name, std::move(shape), values.data());
}

}  // namespace

void DqnAgent::SaveCheckpoint(const std::string& path) const {
  SafetensorsMetadata extra = {
      {"cugym.env_id", config_.env_id},
      {"cugym.version", VersionString()},
      {"cugym.config", config_.ToToml()},
      {"cugym.global_step", std::to_string(global_step_)},
      {"cugym.vector_steps", std::to_string(vector_steps_)},
      {"cugym.draws", std::to_string(draws_dev_.ToHost()[0])},
      {"cugym.next_target_step", std::to_string(next_target_step_)},
      {"cugym.update_debt", MetadataNumber(update_debt_)},
      {"cugym.learning_resumes_at", std::to_string(learning_resumes_at_)},
      {"cugym.wall_time", MetadataNumber(wall_time_)},
      {"cugym.last_eval_return", MetadataNumber(last_eval_return_)},
      {"cugym.episodes", std::to_string(ring_count_.ToHost()[0])},
      {"cugym.episodes_read", std::to_string(episodes_read_)},
  };
  std::vector<NamedTensor> tensors;
  tensors.push_back(FloatTensor("episodes.returns", ring_returns_.ToHost()));
  tensors.push_back(IntTensor("episodes.lengths", ring_lengths_.ToHost()));
  tensors.push_back(FloatTensor("episodes.last_100", last_returns_));
  VectorEnvSnapshot env;
  if (env_->SaveSnapshot(&env)) {
    extra["cugym.env.seed"] = std::to_string(env.seed);
    extra["cugym.env.steps"] = std::to_string(env.steps);
    tensors.push_back(FloatTensor("env.states", env.states));
    tensors.push_back(IntTensor("env.rng_counters", env.rng_counters));
    tensors.push_back(IntTensor("env.elapsed", env.elapsed));
    tensors.push_back(FloatTensor("env.running_returns", env.running_returns));
  }
  if (config_.exploration_hold_mu > 0) {
    tensors.push_back(IntTensor("explore.held", held_actions_.ToHost()));
    tensors.push_back(IntTensor("explore.left", hold_left_.ToHost()));
  }
  if (config_.save_replay) {
    const int64_t cap = config_.buffer_size;
    extra["cugym.replay.position"] = std::to_string(replay_position_);
    extra["cugym.replay.size"] = std::to_string(replay_size_);
    tensors.push_back(FloatTensor("replay.obs", replay_obs_.ToHost(), {cap, obs_dim_}));
    tensors.push_back(FloatTensor("replay.next_obs", replay_next_obs_.ToHost(), {cap, obs_dim_}));
    tensors.push_back(IntTensor("replay.actions", replay_actions_.ToHost()));
    tensors.push_back(FloatTensor("replay.rewards", replay_rewards_.ToHost()));
    tensors.push_back(FloatTensor("replay.dones", replay_dones_.ToHost()));
    tensors.push_back(IntTensor("replay.ends", replay_ends_.ToHost()));
    if (config_.prioritized_replay) {
      // The leaves (one priority per row); the inner nodes are their sums, rebuilt on loading.
      tensors.push_back(FloatTensor("replay.priorities", priority_nodes_.ToHost(tree_.leaves, cap)));
      extra["cugym.replay.max_priority"] = MetadataNumber(max_priority_.ToHost()[0]);
    }
  }
  learner_->Save(path, extra, std::move(tensors));
}

void DqnAgent::LoadCheckpoint(const std::string& path) {
  const SafetensorsFile file = ReadSafetensors(path);
  const SafetensorsMetadata& meta = file.metadata;
  if (Meta(meta, "cugym.env_id", path) != config_.env_id)
    throw std::invalid_argument(path + ": a checkpoint for " + Meta(meta, "cugym.env_id", path) + ", not " +
                                config_.env_id);
  auto tensor = [&](const std::string& name, int64_t size) {
    const NamedTensor* t = file.Find(name);
    if (t == nullptr || t->NumElements() != size)
      throw std::invalid_argument(path + ": tensor '" + name + "' is missing or not of " + std::to_string(size) +
                                  " elements");
    return t;
  };
  auto ints = [&](const std::string& name, int64_t size) {
    const std::vector<int64_t> wide = tensor(name, size)->ToI64();
    return std::vector<int32_t>(wide.begin(), wide.end());
  };
  auto real = [&](const std::string& key) {
    return ParseMetadataNumber(Meta(meta, key, path), path + ": metadata " + key);
  };
  const int64_t n = config_.num_envs, cap = config_.buffer_size;
  // The counters are read (and checked) before anything changes; a tensor missing further on
  // still throws, and leaves this agent part-loaded (the CLI then exits).
  const int64_t global_step = MetaInt(meta, "cugym.global_step", path);
  const int64_t vector_steps = MetaInt(meta, "cugym.vector_steps", path);
  const uint32_t draws = static_cast<uint32_t>(MetaInt(meta, "cugym.draws", path));
  const int64_t next_target_step = MetaInt(meta, "cugym.next_target_step", path);
  const bool exact = meta.count("cugym.update_debt") > 0;  // written since checkpoints resume exactly
  const bool has_env = exact && file.Find("env.states") != nullptr;
  const bool has_replay = exact && meta.count("cugym.replay.position") > 0;
  DropGraphs();  // before anything they captured changes
  learner_->Load(file, path);
  global_step_ = global_step;
  vector_steps_ = vector_steps;
  const agent::StepCounters counters{vector_steps, global_step};
  counters_dev_.FromHost(&counters, 1);
  draws_dev_.FromHost(&draws, 1);
  next_target_step_ = next_target_step;
  if (!exact) {  // an older checkpoint: counters only
    update_debt_ = static_cast<double>(MetaInt(meta, "cugym.update_debt_ppm", path)) / 1e6;
  } else {
    update_debt_ = real("cugym.update_debt");
    wall_time_ = real("cugym.wall_time");
    if (meta.count("cugym.last_eval_return") > 0) last_eval_return_ = real("cugym.last_eval_return");
    const unsigned long long episodes = static_cast<unsigned long long>(MetaInt(meta, "cugym.episodes", path));
    ring_count_.FromHost(&episodes, 1);
    ring_returns_.FromHost(tensor("episodes.returns", kEpisodeRing)->ToF32().data(), kEpisodeRing);
    ring_lengths_.FromHost(ints("episodes.lengths", kEpisodeRing).data(), kEpisodeRing);
    episodes_read_ = static_cast<uint64_t>(MetaInt(meta, "cugym.episodes_read", path));
    const NamedTensor* last = file.Find("episodes.last_100");
    last_returns_ = last != nullptr ? last->ToF32() : std::vector<float>{};
    if (config_.exploration_hold_mu > 0) {
      held_actions_.FromHost(ints("explore.held", n).data(), n);
      hold_left_.FromHost(ints("explore.left", n).data(), n);
    }
  }
  if (has_env) {
    VectorEnvSnapshot env;
    env.seed = static_cast<uint64_t>(MetaInt(meta, "cugym.env.seed", path));
    env.steps = static_cast<uint64_t>(MetaInt(meta, "cugym.env.steps", path));
    env.states = tensor("env.states", n * spec_.state_dim)->ToF32();
    const std::vector<int64_t> counters = tensor("env.rng_counters", n)->ToI64();
    env.rng_counters.assign(counters.begin(), counters.end());
    env.elapsed = ints("env.elapsed", n);
    env.running_returns = tensor("env.running_returns", n)->ToF32();
    env_->LoadSnapshot(env);
  } else {
    // No envs' state in the checkpoint: they start new episodes from a seed of their own.
    env_->Reset(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  }
  if (!has_replay) {
    replay_position_ = 0;
    replay_size_ = 0;
    replay_size_dev_.Zero();
    replay_head_dev_.Zero();
    if (config_.prioritized_replay) ResetPriorities();
    learning_resumes_at_ = global_step_ + std::min(config_.learning_starts, config_.buffer_size);
    return;
  }
  replay_position_ = MetaInt(meta, "cugym.replay.position", path);
  replay_size_ = MetaInt(meta, "cugym.replay.size", path);
  if (replay_position_ < 0 || replay_position_ >= cap || replay_size_ < 0 || replay_size_ > cap)
    throw std::invalid_argument(path + ": replay position or size outside the buffer");
  replay_obs_.FromHost(tensor("replay.obs", cap * obs_dim_)->ToF32().data(), cap * obs_dim_);
  replay_next_obs_.FromHost(tensor("replay.next_obs", cap * obs_dim_)->ToF32().data(), cap * obs_dim_);
  replay_actions_.FromHost(ints("replay.actions", cap).data(), cap);
  replay_rewards_.FromHost(tensor("replay.rewards", cap)->ToF32().data(), cap);
  replay_dones_.FromHost(tensor("replay.dones", cap)->ToF32().data(), cap);
  const std::vector<int32_t> ends = ints("replay.ends", cap);
  const std::vector<uint8_t> ends8(ends.begin(), ends.end());
  replay_ends_.FromHost(ends8.data(), cap);
  replay_head_dev_.FromHost(&replay_position_, 1);
  replay_size_dev_.FromHost(&replay_size_, 1);
  if (config_.prioritized_replay) {
    // Inner nodes recomputed from the leaves bottom up: the bits the running tree held.
    std::vector<float> nodes(2 * tree_.leaves, 0.0f);
    const std::vector<float> leaves = tensor("replay.priorities", cap)->ToF32();
    std::copy(leaves.begin(), leaves.end(), nodes.begin() + tree_.leaves);
    agent::PriorityTree host;
    host.nodes = nodes.data();
    for (int64_t node = tree_.leaves - 1; node >= 1; --node) agent::RefreshNode(host, node);
    priority_nodes_.FromHost(nodes.data(), nodes.size());
    const float max_priority = static_cast<float>(real("cugym.replay.max_priority"));
    max_priority_.FromHost(&max_priority, 1);
  }
  learning_resumes_at_ = MetaInt(meta, "cugym.learning_resumes_at", path);
}

void DqnAgent::SaveModel(const std::string& path) const {
  nn::SaveMlp(path, learner_->online(),
              {{"cugym.env_id", config_.env_id},
               {"cugym.global_step", std::to_string(global_step_)},
               {"cugym.head", config_.dueling ? "dueling" : "q"},
               {"cugym.version", VersionString()}});
}

}  // namespace cugym
