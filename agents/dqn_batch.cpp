// DqnBatch: DqnAgent's iteration for K agents in lockstep, the network work of all K in one call.
#include "agents/dqn_batch.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "agents/dqn_checkpoint.h"
#include "agents/evaluation.h"
#include "nn/backend.h"
#include "nn/checkpoint.h"

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

DqnBatch::DqnBatch(const Registry& registry, const DqnConfig& config, const std::vector<uint64_t>& seeds, Device device)
    : DqnBatch(registry, config, seeds, nn::MakeBackend(device)) {}

DqnBatch::DqnBatch(const Registry& registry, const DqnConfig& config, const std::vector<uint64_t>& seeds,
                   std::shared_ptr<nn::Backend> backend)
    : registry_(&registry), config_(config), seeds_(seeds), device_(backend->device()), n_(config.num_envs) {
  const Device device = device_;
  config_.Validate();
  if (seeds_.empty()) throw std::invalid_argument("DqnBatch: no seeds");
  const std::string refused = Unbatchable(registry, config_, agents());
  if (!refused.empty()) throw std::invalid_argument("DqnBatch: " + refused);
  if (std::set<uint64_t>(seeds_.begin(), seeds_.end()).size() != seeds_.size())
    throw std::invalid_argument("DqnBatch: a seed appears twice");
  const EnvSpec& spec = DiscreteSpec(registry, config_.env_id, "DQN");
  obs_dim_ = static_cast<int>(spec.obs_dim());
  num_actions_ = static_cast<int>(spec.action_space.n);
  const int64_t k = agents(), n = n_, b = config_.batch_size;
  const PriorityOptions priorities{config_.per_alpha, config_.per_eps, config_.per_beta,
                                   std::max<int64_t>(config_.PlannedUpdates(), 1)};
  ReplayOptions replay{config_.buffer_size, obs_dim_, n, b, config_.prioritized_replay, priorities};
  // The K replay memories dominate: refused before anything is allocated when they would not fit.
  const double needed = static_cast<double>(k) * static_cast<double>(ReplayBytes(replay));
  const std::size_t available = AvailableBytes(device);
  if (needed > 0.9 * static_cast<double>(available)) {
    throw std::invalid_argument(
        std::to_string(k) + " agents' replay memories need " + std::to_string(k) + " x " +
        std::to_string(ReplayBytes(replay) >> 20) + " MiB of " + DeviceName(device) + " memory but only " +
        std::to_string(available >> 20) + " MiB is free (each: buffer_size " + std::to_string(config_.buffer_size) +
        " transitions of " + std::to_string(obs_dim_) + " floats per observation, " + std::to_string(n) + " envs)");
  }

  // The learner DqnAgent builds (LearnerOptions in dqn.cpp), K times; its rows per replica: its
  // envs, its Double DQN minibatch and its evaluation envs.
  QLearnerOptions options = LearnerOptionsFor(config_, spec);
  options.batch_size = static_cast<int>(b);
  options.max_act_batch = static_cast<int>(std::max({n, config_.double_dqn ? b : int64_t{1}, config_.eval_episodes}));
  solo_options_ = options;  // a learner of one, for an agent's model files and checkpoints
  options.replicas = static_cast<int>(k);
  for (uint64_t seed : seeds_) {
    DqnConfig one = config_;
    one.seed = seed;
    options.replica_seeds.push_back(LearnerOptionsFor(one, spec).seed);
  }
  learner_ = std::make_unique<QLearner>(std::move(backend), options);
  void* stream = learner_->backend().native_stream();
  ops_ = MakeAgentOps(device, stream);

  // One replay memory with a lane per agent: one launch samples, weighs and updates every agent's.
  replay.lanes = k;
  replay_ = std::make_unique<ReplayMemory>(device, replay);
  replay_->SetLaneSeeds(seeds_);
  // One VectorEnv of K x n envs in lanes: agent a's n step as its solo run's.
  env_ = MakeVectorEnv(registry, config_.env_id, k * n, device);
  env_->set_stream(stream);
  env_->ResetLanes(seeds_, n);
  seeds_dev_ = Buffer<uint64_t>(device, k);
  seeds_dev_.FromHost(seeds_.data(), k);
  // The agents' episode rings side by side: a progress read copies all of them at once.
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
  if (config_.eval_episodes > 0) {
    // Every agent's eval envs as lanes of one batch, evaluated together (EvaluateLearnerLanes).
    eval_env_ = MakeVectorEnv(registry, config_.env_id, k * config_.eval_episodes, device);
    eval_env_->set_stream(stream);
    eval_actions_ = Buffer<int32_t>(device, k * config_.eval_episodes);
  }
  obs_ = Buffer<float>(device, k * n * obs_dim_);
  actions_ = Buffer<int32_t>(device, k * n);
  if (config_.exploration_hold_mu > 0) {
    held_actions_ = Buffer<int32_t>(device, k * n);
    hold_left_ = Buffer<int32_t>(device, k * n);
    hold_left_.Zero();
  }
  counters_dev_ = Buffer<StepCounters>(device, 1);
  const StepCounters zero{0, 0};
  counters_dev_.FromHost(&zero, 1);
  next_actions_ = Buffer<int32_t>(device, k * b);
  next_q_ = Buffer<float>(device, k * b);
  targets_ = Buffer<float>(device, k * b);
  // One graph per iteration, as DqnAgent's: the same work in every iteration once learning runs.
  const double updates_per_step = config_.replay_ratio * static_cast<double>(n);
  if (config_.cuda_graph && updates_per_step >= 1.0 && updates_per_step == std::floor(updates_per_step) &&
      env_->step_capturable()) {
    graph_updates_ = static_cast<int64_t>(updates_per_step);
    graph_targets_ = n % config_.target_update_interval == 0 ? n / config_.target_update_interval : 0;
  }
  next_target_step_ = config_.learning_starts + config_.target_update_interval;
  learning_resumes_at_ = config_.learning_starts;
}

DqnBatch::~DqnBatch() = default;

std::string DqnBatch::Unbatchable(const Registry& registry, const DqnConfig& config, int agents) {
  if (config.pqn()) return "algo is pqn; a batch of agents trains DQN";
  if (!MakeVectorEnv(registry, config.env_id, 1, Device::kCpu)->supports_lanes())
    return config.env_id + " cannot step its envs in lanes (VectorEnv::ResetLanes); train the seeds apart";
  if (agents <= 1) return "";
  const QLearnerOptions options = LearnerOptionsFor(config, DiscreteSpec(registry, config.env_id, "DQN"));
  if (nn::ClipsGradients(options.adam)) {
    std::ostringstream norm;
    norm << config.max_grad_norm;
    return "gradient clipping (max_grad_norm " + norm.str() +
           ") would span all agents' networks; set max_grad_norm = 0 or train the seeds apart";
  }
  if (options.conv.out_channels != 0 || options.layer_norm)
    return "a convolution or LayerNorm (conv_channels, layer_norm) has no batched form yet; train the seeds apart";
  return "";
}

ExploreHold DqnBatch::explore_hold() {
  if (config_.exploration_hold_mu <= 0) return {};
  return ExploreHold{held_actions_.data(), hold_left_.data(), static_cast<float>(config_.exploration_hold_mu),
                     static_cast<int32_t>(config_.exploration_max_hold)};
}

void DqnBatch::CopyNetworkTo(int agent, nn::Mlp& solo) const { learner_->online().CopyReplicaTo(agent, solo); }

EpsilonSchedule DqnBatch::epsilon_schedule() const {
  return EpsilonSchedule{config_.start_e, config_.end_e,
                         config_.exploration_fraction * static_cast<double>(config_.total_steps)};
}

QLearner& DqnBatch::Solo(int agent) const {
  if (!solo_) solo_ = std::make_unique<QLearner>(learner_->online().shared_backend(), solo_options_);
  learner_->CopyReplicaTo(agent, *solo_);
  return *solo_;
}

DqnProgress DqnBatch::Progress(int agent, double wall_time, double seconds, int64_t steps, double last_eval_return) {
  EpisodeStats& episodes = *episodes_.at(agent);
  // The agents log at the same steps (one schedule): the first to ask reads every agent's
  // episodes and statistics, a few copies for all.
  if (read_step_ != global_step_) {
    read_returns_ = ring_returns_.ToHost();
    read_lengths_ = ring_lengths_.ToHost();
    read_counts_ = ring_counts_.ToHost();
    read_stats_ = learner_->ReadAllStats();
    read_step_ = global_step_;
  }
  constexpr int64_t cap = EpisodeStats::kCapacity;
  const EpisodeStats::Interval ended =
      episodes.Read(read_returns_.data() + agent * cap, read_lengths_.data() + agent * cap, read_counts_[agent]);
  return MakeProgress(global_step_, wall_time, ScheduledEpsilon(epsilon_schedule(), global_step_), seconds, steps,
                      ended, read_stats_[agent], last_eval_return);
}

EvalResult DqnBatch::Evaluate(int agent, int64_t index) {
  if (!eval_env_) throw std::logic_error("DqnBatch::Evaluate: eval_episodes is 0");
  if (agent < 0 || agent >= agents())
    throw std::out_of_range("DqnBatch::Evaluate: agent " + std::to_string(agent) + " of " + std::to_string(agents()));
  // The agents evaluate at the same steps (one schedule): the first to ask evaluates all of them.
  if (evaluated_index_ != index || evaluated_step_ != global_step_) {
    evaluations_ = EvaluateLearnerLanes(*eval_env_, *learner_, eval_actions_, seeds_, index);
    evaluated_index_ = index;
    evaluated_step_ = global_step_;
  }
  return evaluations_[agent];
}

std::vector<EvalResult> DqnBatch::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) {
  if (listed.empty()) return {};
  const int64_t m = std::min(num_envs, episodes);
  if (m < 1 || m > learner_->options().max_act_batch)
    throw std::invalid_argument("DqnBatch::EvaluateModels: " + std::to_string(m) + " envs per agent");
  if (!model_env_ || model_env_->num_envs() != agents() * m) {
    model_env_ = MakeVectorEnv(*registry_, config_.env_id, agents() * m, device_);
    model_env_->set_stream(learner_->backend().native_stream());
  }
  if (static_cast<int64_t>(eval_actions_.size()) < agents() * m) eval_actions_ = Buffer<int32_t>(device_, agents() * m);
  std::vector<uint64_t> seeds;
  for (uint64_t seed : seeds_) seeds.push_back(seed + seed_offset);
  std::vector<bool> evaluate(agents(), false);
  for (int a : listed) evaluate.at(a) = true;
  const std::vector<EvalResult> lanes =
      EvaluateReplicas(*model_env_, *learner_, eval_actions_, seeds, evaluate, episodes);
  std::vector<EvalResult> results;
  for (int a : listed) results.push_back(lanes[a]);
  return results;
}

void DqnBatch::LoadModel(int agent, const std::string& path) {
  QLearner& solo = Solo(agent);  // a network of one of the agent's shape (convolution and all)
  nn::LoadMlp(path, solo.online());
  learner_->online().CopyReplicaFrom(agent, solo.online());
  evaluated_step_ = -1;
}

void DqnBatch::SaveModel(int agent, const std::string& path) const {
  SaveQModel(path, Solo(agent), config_.env_id, global_step_);
}

std::vector<DqnBatch::LoopState> DqnBatch::LoadCheckpoints(const std::vector<std::string>& paths) {
  if (static_cast<int>(paths.size()) != agents()) {
    throw std::invalid_argument("DqnBatch::LoadCheckpoints: " + std::to_string(paths.size()) + " checkpoints for " +
                                std::to_string(agents()) + " agents");
  }
  // Everything read and checked before anything changes.
  std::vector<std::unique_ptr<CheckpointReader>> in;
  DqnCounters shared;
  bool with_replay = true;  // every file holds its replay memory (or none does: save_replay off)
  for (int a = 0; a < agents(); ++a) {
    const std::string& path = paths[a];
    in.push_back(std::make_unique<CheckpointReader>(path));
    const CheckpointReader& r = *in.back();
    if (r.Has("cugym.algo") && r.Text("cugym.algo") != "dqn")
      throw std::invalid_argument(path + ": a " + r.Text("cugym.algo") + " checkpoint; a batch trains dqn");
    if (r.Text("cugym.env_id") != config_.env_id)
      throw std::invalid_argument(path + ": a checkpoint for " + r.Text("cugym.env_id") + ", not " + config_.env_id);
    if (!r.Has("cugym.env.seed"))
      throw std::invalid_argument(path + ": a checkpoint without the envs' state cannot go on in a batch");
    const DqnCounters c = ReadDqnCounters(r);
    if (a == 0) {
      shared = c;
      with_replay = r.Has("cugym.replay.position");
    } else if (r.Has("cugym.replay.position") != with_replay) {
      throw std::invalid_argument(path + (with_replay ? " lacks" : " holds") + " the replay memory " + paths[0] +
                                  (with_replay ? " holds" : " lacks") + ": a batch's agents go on together");
    } else if (c.global_step != shared.global_step || c.vector_steps != shared.vector_steps ||
               c.draws != shared.draws || c.next_target_step != shared.next_target_step ||
               c.update_debt != shared.update_debt || c.learning_resumes_at != shared.learning_resumes_at) {
      throw std::invalid_argument(path + ": not of the same step as " + paths[0] + " (step " +
                                  std::to_string(c.global_step) + " against " + std::to_string(shared.global_step) +
                                  "): a batch's agents go on together");
    }
  }
  // The K agents' envs as one snapshot in lanes, each lane seeded as its agent's envs were.
  const int64_t state_dim = env_->spec().state_dim;
  VectorEnvSnapshot envs;
  std::vector<uint64_t> lane_seeds;
  for (int a = 0; a < agents(); ++a) {
    VectorEnvSnapshot one;
    ReadEnvSnapshot(*in[a], n_, state_dim, &one);
    if (a > 0 && one.steps != envs.steps)
      throw std::invalid_argument(paths[a] + ": its envs stepped " + std::to_string(one.steps) + " times, " + paths[0] +
                                  "'s " + std::to_string(envs.steps) + ": a batch's agents go on together");
    envs.steps = one.steps;
    lane_seeds.push_back(one.seed);
    envs.states.insert(envs.states.end(), one.states.begin(), one.states.end());
    envs.rng_counters.insert(envs.rng_counters.end(), one.rng_counters.begin(), one.rng_counters.end());
    envs.elapsed.insert(envs.elapsed.end(), one.elapsed.begin(), one.elapsed.end());
    envs.running_returns.insert(envs.running_returns.end(), one.running_returns.begin(), one.running_returns.end());
  }
  envs.seed = lane_seeds.front();
  envs.env_seeds = LaneEnvSeeds(lane_seeds, n_);
  envs.lane_size = n_;
  iteration_graph_.Drop();  // before anything it captured changes
  read_step_ = evaluated_step_ = saved_envs_step_ = -1;
  std::vector<LoopState> loops;
  for (int a = 0; a < agents(); ++a) {
    const CheckpointReader& r = *in[a];
    QLearner& solo = Solo(a);
    solo.Load(r.file(), paths[a]);
    learner_->CopyReplicaFrom(a, solo);
    if (with_replay) replay_->Load(r, a);
    episodes_[a]->Load(r);
    if (config_.exploration_hold_mu > 0) {
      held_actions_.FromHost(r.Ints("explore.held", n_).data(), n_, a * n_);
      hold_left_.FromHost(r.Ints("explore.left", n_).data(), n_, a * n_);
    }
    const DqnCounters c = ReadDqnCounters(r);
    loops.push_back(LoopState{c.wall_time, c.last_eval_return});
  }
  replay_->set_draws(shared.draws);
  env_->LoadSnapshot(envs);
  global_step_ = shared.global_step;
  next_target_step_ = shared.next_target_step;
  update_debt_ = shared.update_debt;
  learning_resumes_at_ = shared.learning_resumes_at;
  if (!with_replay) {  // as DqnAgent: the memories refill before learning goes on
    replay_->Clear();
    learning_resumes_at_ = global_step_ + std::min(config_.learning_starts, config_.buffer_size);
  }
  const StepCounters counters{shared.vector_steps, shared.global_step};
  counters_dev_.FromHost(&counters, 1);
  return loops;
}

std::unique_ptr<DqnBatch> DqnBatch::Keep(const std::vector<int>& keep) const {
  std::vector<uint64_t> seeds;
  std::vector<int64_t> lanes;
  for (int a : keep) {
    if (a < 0 || a >= agents())
      throw std::out_of_range("DqnBatch::Keep: agent " + std::to_string(a) + " of " + std::to_string(agents()));
    seeds.push_back(seeds_[a]);
    lanes.push_back(a);
  }
  VectorEnvSnapshot envs;
  if (!env_->SaveSnapshot(&envs)) return nullptr;
  std::unique_ptr<DqnBatch> next(new DqnBatch(*registry_, config_, seeds, learner_->online().shared_backend()));
  next->env_->LoadSnapshot(LanesOf(envs, lanes, env_->spec().state_dim));
  for (std::size_t i = 0; i < keep.size(); ++i) {
    const int a = keep[i];
    const auto to = static_cast<int64_t>(i);
    next->learner_->CopyReplicaFrom(static_cast<int>(i), Solo(a));
    next->episodes_[i]->CopyFrom(*episodes_[a]);
    if (config_.exploration_hold_mu > 0) {
      CopyBytes(next->held_actions_.data() + to * n_, device_, held_actions_.data() + a * n_, device_,
                n_ * sizeof(int32_t));
      CopyBytes(next->hold_left_.data() + to * n_, device_, hold_left_.data() + a * n_, device_, n_ * sizeof(int32_t));
    }
  }
  next->replay_->TakeLanes(*replay_, lanes);
  CopyBytes(next->counters_dev_.data(), device_, counters_dev_.data(), device_, sizeof(StepCounters));
  next->global_step_ = global_step_;
  next->update_debt_ = update_debt_;
  next->next_target_step_ = next_target_step_;
  next->learning_resumes_at_ = learning_resumes_at_;
  next->iteration_graph_on_cpu_ = iteration_graph_on_cpu_;
  return next;
}

void DqnBatch::SaveCheckpoint(int agent, const std::string& path, double wall_time, double last_eval_return) const {
  DqnCounters c;
  c.global_step = global_step_;
  c.vector_steps = global_step_ / n_;
  c.draws = replay_->draws();
  c.next_target_step = next_target_step_;
  c.update_debt = update_debt_;
  c.learning_resumes_at = learning_resumes_at_;
  c.wall_time = wall_time;
  c.last_eval_return = last_eval_return;
  DqnConfig config = config_;
  config.seed = seeds_[agent];
  std::vector<int32_t> held, left;
  if (config_.exploration_hold_mu > 0) {
    held = held_actions_.ToHost(agent * n_, n_);
    left = hold_left_.ToHost(agent * n_, n_);
  }
  // Agent k's lane of the envs, as the snapshot of its own batch of n. The agents checkpoint at the
  // same steps (one schedule): the first to save at a step reads every agent's envs.
  if (saved_envs_step_ != global_step_) {
    saved_envs_ = VectorEnvSnapshot{};
    has_saved_envs_ = env_->SaveSnapshot(&saved_envs_);
    saved_envs_step_ = global_step_;
  }
  const VectorEnvSnapshot& all = saved_envs_;
  const bool has_envs = has_saved_envs_;
  VectorEnvSnapshot mine;
  if (has_envs) {  // the agent's lane as the snapshot of a batch of n of its own (DqnAgent's)
    mine = LanesOf(all, {agent}, env_->spec().state_dim);
    mine.env_seeds.clear();
    mine.lane_size = 0;
  }
  SaveDqnCheckpoint(path, config, c, *episodes_.at(agent), has_envs ? &mine : nullptr, held, left, *replay_, agent,
                    Solo(agent));
}

// DqnAgent::PlanIteration and RunIteration's eager path, the schedule once for all agents.
void DqnBatch::Iterate() {
  const EpsilonSchedule schedule = epsilon_schedule();
  const int64_t step = global_step_ + n_;
  const int64_t stored = std::min(replay_->size() + n_, config_.buffer_size);
  int64_t updates = 0, targets = 0;
  if (step > learning_resumes_at_ && stored >= config_.batch_size) {
    update_debt_ += config_.replay_ratio * static_cast<double>(n_);
    for (; update_debt_ >= 1.0; update_debt_ -= 1.0) ++updates;
    for (; step >= next_target_step_; next_target_step_ += config_.target_update_interval) ++targets;
  }
  const bool graph = graph_updates_ >= 0 && !iteration_graph_.failed() &&
                     (device_ == Device::kCuda || iteration_graph_on_cpu_) && updates == graph_updates_ &&
                     (graph_targets_ == 0 || targets == graph_targets_);
  if (graph) {
    iteration_graph_.Run(learner_->backend(), [this] { IterationKernels(); });
    // Target updates whose interval does not divide num_envs fall on some iterations only.
    if (graph_targets_ == 0)
      for (int64_t t = 0; t < targets; ++t) learner_->UpdateTarget(static_cast<float>(config_.tau));
  } else {
    Collect(ScheduledEpsilon(schedule, global_step_) < 1.0);
    for (int64_t u = 0; u < updates; ++u) Update();
    for (int64_t t = 0; t < targets; ++t) learner_->UpdateTarget(static_cast<float>(config_.tau));
  }
  global_step_ += n_;
  replay_->Stored(n_);
}

void DqnBatch::IterationKernels() {
  Collect(true);
  for (int64_t u = 0; u < graph_updates_; ++u) Update();
  for (int64_t t = 0; t < graph_targets_; ++t) learner_->UpdateTarget(static_cast<float>(config_.tau));
}

// DqnAgent::CollectKernels for all agents at once: one greedy forward, one exploration pass (each
// lane with its agent's seed), one step of the K x n envs, one insertion into the replay lanes and
// one pass appending each lane's finished episodes to its agent's ring.
void DqnBatch::Collect(bool greedy) {
  const int64_t k = agents(), n = n_;
  void* stream = learner_->backend().native_stream();
  VectorEnv& env = *env_;
  CopyBytesAsync(obs_.data(), env.obs(), k * n * obs_dim_ * sizeof(float), device_, stream);
  if (greedy) learner_->Act(Rows(obs_.data(), k * n, obs_dim_, device_), Vec(actions_.data(), k * n, device_));
  ops_->ExploreLanes(actions_.data(), k, n, counters_dev_.data(), epsilon_schedule(), seeds_dev_.data(), num_actions_,
                     explore_hold());
  env.Step(actions_.data());
  replay_->Insert(*ops_, n, obs_.data(), actions_.data(), env.rewards(), env.obs(), env.final_obs(), env.terminated(),
                  env.truncated());
  ops_->CollectLaneEpisodes(env.terminated(), env.truncated(), env.episode_returns(), env.episode_lengths(), k, n,
                            rings_.data());
  ops_->AdvanceSteps(counters_dev_.data(), n);
}

// DqnAgent::UpdateKernels for every agent: one launch samples every agent's minibatch (a lane of
// the replay memory each), then one target forward, one TD-target pass and one training step for
// all, and one launch updates every agent's priorities.
void DqnBatch::Update() {
  const int64_t rows = agents() * config_.batch_size;
  const bool prioritized = config_.prioritized_replay;
  ReplayMemory& replay = *replay_;
  replay.Sample(*ops_, seeds_.front(), static_cast<int>(config_.n_step), static_cast<float>(config_.gamma));
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

}  // namespace cugym::agent
