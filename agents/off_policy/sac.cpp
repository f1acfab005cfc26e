// The SAC iteration for K >= 1 lanes (sac.h): one vector step, then the critic and actor updates
// that fall on it. Reads, evaluations and files: sac_lanes.cpp.
#include "agents/off_policy/sac.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace cugym::agent {
namespace {

nn::ConstBatchView Rows(const float* data, int64_t rows, int64_t cols, Device device) {
  return nn::ConstBatchView(data, rows, cols, device);
}

const EnvSpec& BoxSpec(const Registry& registry, const std::string& id) {
  const EnvSpec& spec = registry.Get(id).spec;
  if (spec.action_space.is_discrete() || spec.action_space.shape.size() != 1)
    throw std::invalid_argument("SAC needs a flat Box of actions, but " + id + " has " + spec.action_space.ToString() +
                                " actions");
  for (std::size_t k = 0; k < spec.action_space.low.size(); ++k)
    if (!std::isfinite(spec.action_space.low[k]) || !std::isfinite(spec.action_space.high[k]))
      throw std::invalid_argument("SAC scales its actions to the Box's bounds, but " + id + "'s are not finite");
  return spec;
}

// Tags of SacKey: the draws of one step or minibatch, told apart.
constexpr uint32_t kActTag = 0, kNextActionTag = 1, kActorTag = 2;

}  // namespace

ReplayOptions SacReplayOptions(const TrainConfig& c, const EnvSpec& spec) {
  ReplayOptions replay{c.buffer_size, static_cast<int>(spec.obs_dim()), c.num_envs, c.batch_size, false, {}};
  replay.action_dim = spec.action_dim();  // float actions
  return replay;
}

Algorithm SacAlgorithm() {
  Algorithm a;
  a.name = "sac";
  // CleanRL's sac_continuous_action.py's columns and tags.
  a.metrics = {{"qf1_loss", "losses/qf1_loss"},
               {"qf2_loss", "losses/qf2_loss"},
               {"qf1_values", "losses/qf1_values"},
               {"actor_loss", "losses/actor_loss"},
               {"alpha", "losses/alpha"},
               {"alpha_loss", "losses/alpha_loss"},
               {"entropy", ""}};
  a.make = MakeAgentOf<SacAgent>;
  a.replay_bytes = [](const TrainConfig& c, const EnvSpec& spec) { return ReplayBytes(SacReplayOptions(c, spec)); };
  a.reads = {"policy_lr", "policy_frequency", "alpha", "autotune", "target_entropy_per_dim", "noise_correlation"};
  const std::vector<std::string>& replay = OffPolicyAgent::ReplayKeys();
  a.reads.insert(a.reads.end(), replay.begin(), replay.end());
  a.check = OffPolicyAgent::CheckReplay;
  a.planned_updates = OffPolicyAgent::PlannedUpdates;
  return a;
}

SacAgent::SacAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : SacAgent(registry, config, LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

SacAgent::SacAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                   std::shared_ptr<nn::Backend> backend)
    : OffPolicyAgent(registry, config, seeds, backend, "sac") {
  const EnvSpec& spec = BoxSpec(registry, config_.env_id);
  if (config_.conv_channels > 0)
    throw std::invalid_argument("conv_channels: SAC's networks take flat observations (set it to 0)");
  const auto k = static_cast<int64_t>(seeds.size());
  obs_dim_ = static_cast<int>(spec.obs_dim());
  action_dim_ = static_cast<int>(spec.action_dim());
  const int64_t b = config_.batch_size;
  MakeReplay(SacReplayOptions(config_, spec), seeds);

  SacLearnerOptions o;
  o.obs_dim = obs_dim_;
  o.action_dim = action_dim_;
  o.hidden_sizes = config_.hidden_sizes;
  o.max_batch = static_cast<int>(std::max({n_, b, config_.eval_episodes}));
  o.layer_norm = config_.layer_norm;
  for (nn::AdamOptions* adam : {&o.actor_adam, &o.critic_adam}) {
    adam->eps = config_.adam_eps;
    adam->max_grad_norm = config_.max_grad_norm;
    adam->rectified = config_.optimizer == "radam";
    // Each optimizer's rate falls to 0 over its own updates: the planned critic updates, and the
    // actor's as many (policy_frequency actor steps after every policy_frequency-th).
    if (config_.anneal_lr) adam->lr_decay_updates = std::max<int64_t>(config_.PlannedUpdates(), 1);
  }
  o.actor_adam.lr = config_.policy_lr;
  o.critic_adam.lr = config_.learning_rate;
  o.alpha = config_.alpha;
  o.autotune = config_.autotune;
  o.seed = seeds.front();
  o.replicas = static_cast<int>(k);
  if (k > 1) o.replica_seeds = seeds;
  learner_ = std::make_unique<SacLearner>(std::move(backend), o);
  MakeLanes(std::move(seeds), stream());

  low_ = Buffer<float>(device_, action_dim_);
  high_ = Buffer<float>(device_, action_dim_);
  low_.FromHost(spec.action_space.low.data(), action_dim_);
  high_.FromHost(spec.action_space.high.data(), action_dim_);
  eval_head_.out = action_dim_;
  eval_head_.gaussian = true;
  eval_head_.squash = true;
  eval_head_.low = low_.data();
  eval_head_.high = high_.data();
  eval_head_.stride = 2 * action_dim_;

  const int64_t rows = k * b, a = action_dim_;
  obs_ = Buffer<float>(device_, k * n_ * obs_dim_);
  actions_ = Buffer<float>(device_, k * n_ * a);
  noise_state_ = Buffer<float>(device_, k * n_ * a);
  noise_state_.Zero();
  critic_in_ = Buffer<float>(device_, rows * (obs_dim_ + a));
  for (Buffer<float>* buffer : {&next_actions_, &pi_actions_, &pi_noise_}) *buffer = Buffer<float>(device_, rows * a);
  for (Buffer<float>* buffer : {&next_log_probs_, &pi_log_probs_}) *buffer = Buffer<float>(device_, rows);
  row_terms_ = Buffer<double>(device_, rows * 3);
  stats_ = Buffer<float>(device_, k * kSacStats);
  stats_.Zero();
  // One graph per learning iteration needs the same work in each: a whole number of critic updates
  // per vector step that policy_frequency divides (so the actor's steps fall at the same places),
  // and an env whose step is a launch on the stream.
  const int64_t updates_per_step = WholeUpdatesPerStep();
  if (config_.cuda_graph && updates_per_step > 0 && updates_per_step % config_.policy_frequency == 0 &&
      env_->step_capturable())
    graph_updates_ = updates_per_step;
}

SacAgent::~SacAgent() = default;

// The vector step's envs act randomly until learning_starts env steps have been taken; the
// gradient steps are the family's (PlanUpdates). Critic update u (1-based, over the run) is
// followed by policy_frequency actor steps when u is a multiple of policy_frequency (CleanRL's
// delayed, compensated updates).
SacAgent::IterationPlan SacAgent::PlanIteration() {
  IterationPlan plan;
  plan.random = global_step_ < config_.learning_starts;
  plan.first = updates_;
  PlanUpdates(&plan.updates);
  return plan;
}

bool SacAgent::IterationGraphFits(const IterationPlan& plan) const {
  if (graph_updates_ < 0 || !GraphAllowed() || plan.random || plan.updates != graph_updates_) return false;
  return plan.first % config_.policy_frequency == 0;  // the actor's steps where the graph has them
}

// On CUDA with cuda_graph, every learning iteration of a fitting config queues the same work (the
// step counters, the replay memory's head, size and draw count, hence every draw, and Adam's step
// counts live on the device): it is captured at the second and replayed from then on.
void SacAgent::Iterate() {
  const IterationPlan plan = PlanIteration();
  if (IterationGraphFits(plan)) {
    iteration_graph_.Run(*backend_, [this, &plan] { IterationKernels(plan); });
  } else {
    IterationKernels(plan);
  }
  for (int64_t u = 0; u < plan.updates; ++u)
    actor_updates_ += plan.ActorStepsAfter(u, config_.policy_frequency) ? config_.policy_frequency : 0;
  updates_ += plan.updates;
  Stepped();
}

void SacAgent::IterationKernels(const IterationPlan& plan) {
  Collect(plan.random);
  for (int64_t u = 0; u < plan.updates; ++u) {
    UpdateCritics();
    if (plan.ActorStepsAfter(u, config_.policy_frequency))
      for (int64_t r = 0; r < config_.policy_frequency; ++r) UpdateActor(static_cast<uint32_t>(r));
  }
}

// The actor's draw for every env (or a uniform one), one step of the K x n envs, the transitions
// into the replay lanes, each lane's finished episodes, the step counters.
void SacAgent::Collect(bool random) {
  const int64_t rows = lanes() * n_;
  VectorEnv& env = *env_;
  CopyBytesAsync(obs_.data(), env.obs(), rows * obs_dim_ * sizeof(float), device_, stream());
  const float* outputs = nullptr;
  if (!random) outputs = learner_->actor().Forward(Rows(obs_.data(), rows, obs_dim_, device_)).data();
  SacSample out;
  out.actions = actions_.data();
  if (config_.noise_correlation > 0) {
    out.noise_state = noise_state_.data();
    out.rho = config_.noise_correlation;
  }
  sac_ops_->SacSamplePolicy(head(), outputs, lanes(), n_,
                            SacKey{lanes_->seeds_dev(), counters_dev_.data(), nullptr, kActTag}, random, out);
  env.Step(actions_.data());
  replay_->Insert(*replay_ops_, n_, obs_.data(), nullptr, env.rewards(), env.obs(), env.final_obs(), env.terminated(),
                  env.truncated(), actions_.data());
  episode_ops_->CollectEpisodes(env.terminated(), env.truncated(), env.episode_returns(), env.episode_lengths(),
                                lanes(), n_, lanes_->rings());
  episode_ops_->AdvanceSteps(counters_dev_.data(), n_);
}

// A minibatch per lane; the next actions drawn at the next observations and valued by the target
// critics; both critics regressed onto the soft target; the targets averaged towards them.
void SacAgent::UpdateCritics() {
  const int64_t b = config_.batch_size, rows = lanes() * b, in = obs_dim_ + action_dim_;
  ReplayMemory& replay = *replay_;
  replay.Sample(*replay_ops_, lanes_->seeds().front(), 1, static_cast<float>(config_.gamma));
  const float* next_obs = replay.batch_next_obs();
  const nn::ConstBatchView next_out = learner_->actor().Forward(Rows(next_obs, rows, obs_dim_, device_));
  SacSample next;
  next.actions = next_actions_.data();
  next.log_probs = next_log_probs_.data();
  sac_ops_->SacSamplePolicy(head(), next_out.data(), lanes(), b,
                            SacKey{lanes_->seeds_dev(), nullptr, replay.draws_dev(), kNextActionTag}, false, next);
  sac_ops_->SacJoin(next_obs, obs_dim_, next_actions_.data(), action_dim_, rows, critic_in_.data());
  const nn::ConstBatchView target_q1 = learner_->target_q1().Forward(Rows(critic_in_.data(), rows, in, device_));
  const nn::ConstBatchView target_q2 = learner_->target_q2().Forward(Rows(critic_in_.data(), rows, in, device_));
  sac_ops_->SacJoin(replay.batch_obs(), obs_dim_, replay.batch_action_values(), action_dim_, rows, critic_in_.data());
  const nn::ConstBatchView q1 = learner_->q1().ForwardTrain(Rows(critic_in_.data(), rows, in, device_));
  const nn::ConstBatchView q2 = learner_->q2().ForwardTrain(Rows(critic_in_.data(), rows, in, device_));
  SacCriticBatch batch;
  batch.rewards = replay.batch_rewards();
  batch.bootstrap = replay.batch_bootstrap();
  batch.next_log_probs = next_log_probs_.data();
  batch.target_q1 = target_q1.data();
  batch.target_q2 = target_q2.data();
  batch.q1 = q1.data();
  batch.q2 = q2.data();
  batch.log_alpha = learner_->log_alpha();
  batch.grad_q1 = learner_->q1().OutputGrad().data();
  batch.grad_q2 = learner_->q2().OutputGrad().data();
  batch.stats = stats_.data();
  batch.row_terms = row_terms_.data();
  batch.lanes = lanes();
  batch.rows = b;
  sac_ops_->SacCriticLoss(batch);
  learner_->StepCritics(static_cast<float>(config_.tau));
}

// One actor step on the last minibatch's observations: a reparameterized draw, both critics at it,
// the smaller one's gradient with respect to the action back through the draw; then, with
// autotune, the temperature's step.
void SacAgent::UpdateActor(uint32_t repeat) {
  const int64_t b = config_.batch_size, rows = lanes() * b, in = obs_dim_ + action_dim_;
  ReplayMemory& replay = *replay_;
  nn::Mlp& actor = learner_->actor();
  const nn::ConstBatchView out = actor.ForwardTrain(Rows(replay.batch_obs(), rows, obs_dim_, device_));
  SacSample draw;
  draw.actions = pi_actions_.data();
  draw.log_probs = pi_log_probs_.data();
  draw.noise = pi_noise_.data();
  sac_ops_->SacSamplePolicy(head(), out.data(), lanes(), b,
                            SacKey{lanes_->seeds_dev(), nullptr, replay.draws_dev(), kActorTag + repeat}, false, draw);
  sac_ops_->SacJoin(replay.batch_obs(), obs_dim_, pi_actions_.data(), action_dim_, rows, critic_in_.data());
  nn::Mlp& q1 = learner_->q1();
  nn::Mlp& q2 = learner_->q2();
  const nn::ConstBatchView q1_values = q1.ForwardTrain(Rows(critic_in_.data(), rows, in, device_));
  const nn::ConstBatchView q2_values = q2.ForwardTrain(Rows(critic_in_.data(), rows, in, device_));
  SacActorBatch batch;
  batch.outputs = out.data();
  batch.noise = pi_noise_.data();
  batch.log_probs = pi_log_probs_.data();
  batch.q1 = q1_values.data();
  batch.q2 = q2_values.data();
  batch.log_alpha = learner_->log_alpha();
  batch.grad_q1 = q1.OutputGrad().data();
  batch.grad_q2 = q2.OutputGrad().data();
  batch.grad_outputs = actor.OutputGrad().data();
  batch.grad_log_alpha = learner_->log_alpha_grad();
  batch.stats = stats_.data();
  batch.row_terms = row_terms_.data();
  batch.obs_dim = obs_dim_;
  batch.target_entropy = config_.target_entropy_per_dim * action_dim_;
  batch.lanes = lanes();
  batch.rows = b;
  sac_ops_->SacActorPick(batch);
  // The critics' parameter gradients this computes are never stepped: the next critic update
  // overwrites them.
  q1.Backward(q1.OutputGrad());
  q2.Backward(q2.OutputGrad());
  batch.q1_input_grad = q1.InputGrad().data();
  batch.q2_input_grad = q2.InputGrad().data();
  sac_ops_->SacActorGrads(head(), batch);
  learner_->StepActor();
}

}  // namespace cugym::agent
