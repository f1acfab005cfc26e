// The PPO training loop (ppo.h): rollout, GAE, minibatch epochs of the clipped objective.
#include "agents/on_policy/ppo.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/policy.h"

namespace cugym::agent {
namespace {

const EnvSpec& PolicySpec(const Registry& registry, const TrainConfig& c) {
  const EnvSpec& spec = registry.Get(c.env_id).spec;
  const bool box = !spec.action_space.is_discrete();
  if ((c.policy == "categorical" && box) || (c.policy == "gaussian" && !box))
    throw std::invalid_argument("policy = \"" + c.policy + "\" does not fit " + c.env_id + "'s " +
                                spec.action_space.ToString() + " actions (" + (box ? "gaussian" : "categorical") +
                                " does)");
  if (box && spec.action_space.shape.size() != 1)
    throw std::invalid_argument("PPO needs a flat Box of actions, but " + c.env_id + " has " +
                                spec.action_space.ToString());
  return spec;
}

PpoLearnerOptions LearnerOptions(const TrainConfig& c, const EnvSpec& spec, const std::vector<uint64_t>& seeds) {
  PpoLearnerOptions o;
  const int obs = static_cast<int>(spec.obs_dim());
  o.actor_sizes = {obs};
  o.actor_sizes.insert(o.actor_sizes.end(), c.hidden_sizes.begin(), c.hidden_sizes.end());
  o.critic_sizes = o.actor_sizes;
  o.gaussian = !spec.action_space.is_discrete();
  o.actor_sizes.push_back(static_cast<int>(o.gaussian ? spec.action_dim() : spec.action_space.n));
  o.critic_sizes.push_back(1);
  o.conv = ConvForObservations(c.conv_channels, spec.observation_space.shape, spec.id);
  o.layer_norm = c.layer_norm;
  o.max_batch = static_cast<int>(std::max({c.num_envs, c.minibatch_size(), c.eval_episodes}));
  o.adam.lr = c.learning_rate;
  o.adam.eps = c.adam_eps;
  o.adam.max_grad_norm = c.max_grad_norm;
  o.adam.rectified = c.optimizer == "radam";
  if (c.anneal_lr) o.adam.lr_decay_updates = std::max<int64_t>(c.PlannedUpdates(), 1);
  o.init_log_std = static_cast<float>(c.init_log_std);
  o.seed = seeds.front();
  o.replicas = static_cast<int>(seeds.size());
  if (seeds.size() > 1) o.replica_seeds = seeds;
  return o;
}

}  // namespace

Algorithm PpoAlgorithm() {
  Algorithm a;
  a.name = "ppo";
  // CleanRL's ppo.py's columns and tags.
  a.metrics = {{"policy_loss", "losses/policy_loss"},
               {"value_loss", "losses/value_loss"},
               {"entropy", "losses/entropy"},
               {"approx_kl", "losses/approx_kl"},
               {"clipfrac", "losses/clipfrac"},
               {"explained_variance", "losses/explained_variance"},
               {"learning_rate", "charts/learning_rate"}};
  a.make = MakeAgentOf<PpoAgent>;
  a.reads = {"gae_lambda", "clip_coef", "clip_vloss",   "ent_coef",      "vf_coef",          "norm_adv",
             "policy",     "squash",    "init_log_std", "normalize_obs", "normalize_reward", "target_kl"};
  a.check = OnPolicyAgent::CheckRollout;
  a.planned_updates = OnPolicyAgent::PlannedUpdates;
  a.unbatchable = [](const Registry&, const TrainConfig& c) {
    return c.target_kl > 0
               ? "target_kl stops each seed's epochs at its own time; train the seeds apart (--lockstep off)"
               : std::string();
  };
  return a;
}

PpoAgent::PpoAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds)
    : PpoAgent(registry, config, LaneSeeds(config, std::move(seeds)), nn::MakeBackend(device)) {}

PpoAgent::PpoAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
                   std::shared_ptr<nn::Backend> backend)
    : OnPolicyAgent(registry, config, seeds, backend, "ppo"), spec_(PolicySpec(registry, config)) {
  const auto k = static_cast<int64_t>(seeds.size());
  learner_ = std::make_unique<PpoLearner>(std::move(backend), LearnerOptions(config_, spec_, seeds));
  obs_dim_ = static_cast<int>(spec_.obs_dim());
  outputs_ = learner_->action_outputs();
  MakeLanes(std::move(seeds), stream());
  norms_ = std::make_unique<Normalizers>(device_, k, config_.num_envs, obs_dim_, config_.normalize_obs,
                                         config_.normalize_reward, config_.gamma);
  head_.out = outputs_;
  head_.gaussian = learner_->options().gaussian;
  head_.squash = config_.squash;
  head_.log_std = learner_->log_std();
  if (head_.gaussian) {
    low_ = Buffer<float>(device_, outputs_);
    high_ = Buffer<float>(device_, outputs_);
    low_.FromHost(spec_.action_space.low.data(), outputs_);
    high_.FromHost(spec_.action_space.high.data(), outputs_);
    head_.low = low_.data();
    head_.high = high_.data();
  }
  loss_ = PpoLossConfig{config_.clip_coef, config_.clip_vloss, config_.clip_coef,
                        config_.norm_adv,  config_.ent_coef,   config_.vf_coef};
  const int64_t envs = k * config_.num_envs, rows = envs * config_.num_steps, b = k * config_.minibatch_size();
  const int64_t a = head_.gaussian ? outputs_ : 0;
  current_obs_ = Buffer<float>(device_, envs * obs_dim_);
  obs_ = Buffer<float>(device_, rows * obs_dim_);
  next_obs_ = Buffer<float>(device_, rows * obs_dim_);
  samples_ = Buffer<float>(device_, std::max<int64_t>(rows * a, 1));
  env_actions_ = Buffer<float>(device_, std::max<int64_t>(envs * a, 1));
  actions_ = Buffer<int32_t>(device_, rows);
  for (Buffer<float>* buffer : {&log_probs_, &values_, &next_values_, &rewards_, &advantages_, &returns_})
    *buffer = Buffer<float>(device_, rows);
  values_.Zero();  // a metrics row before the first rollout reads them (explained_variance)
  returns_.Zero();
  terminated_ = Buffer<uint8_t>(device_, rows);
  truncated_ = Buffer<uint8_t>(device_, rows);
  batch_obs_ = Buffer<float>(device_, b * obs_dim_);
  batch_samples_ = Buffer<float>(device_, std::max<int64_t>(b * a, 1));
  batch_actions_ = Buffer<int32_t>(device_, b);
  for (Buffer<float>* buffer : {&batch_log_probs_, &batch_values_, &batch_advantages_, &batch_returns_})
    *buffer = Buffer<float>(device_, b);
  stats_ = Buffer<float>(device_, k * kPpoStats);
  stats_.Zero();
  moments_ = Buffer<double>(device_, k * 2);
  row_terms_ = Buffer<double>(device_, b * kPpoRowTerms);
  ObserveCurrent(env_->obs(), current_obs_.data(), config_.num_envs, false);
}

PpoAgent::~PpoAgent() = default;

void PpoAgent::ObserveCurrent(const float* obs, float* out, int64_t m, bool frozen) {
  if (norms_->observations()) {
    policy_ops_->NormalizeObservations(norms_->observation_moments(), obs, out, m, frozen, kPpoObsClip);
  } else if (obs != out) {
    CopyBytesAsync(out, obs, lanes() * m * obs_dim_ * sizeof(float), device_, stream());
  }
}

void PpoAgent::IterationKernels(bool) {
  for (int64_t t = 0; t < config_.num_steps; ++t) CollectStep(t);
  // GAE over the whole rollout, then the minibatch epochs.
  GaeArrays gae;
  gae.rewards = rewards_.data();
  gae.terminated = terminated_.data();
  gae.truncated = truncated_.data();
  gae.values = values_.data();
  gae.next_values = next_values_.data();
  gae.advantages = advantages_.data();
  gae.returns = returns_.data();
  gae.steps = config_.num_steps;
  gae.envs = lanes() * config_.num_envs;
  rollout_ops_->GaeAdvantages(gae, config_.gamma, config_.gae_lambda);
  Epochs();
}

// The policy's draw for every env, the critic's value of what it acted on, one step of the K x n
// envs, their rewards (scaled), next observations (normalized with the statistics the step's new
// observations updated) and values, each lane's finished episodes, the step counters.
void PpoAgent::CollectStep(int64_t t) {
  const int64_t n = config_.num_envs, envs = lanes() * n;
  float* obs = obs_.data() + t * envs * obs_dim_;
  float* next_obs = next_obs_.data() + t * envs * obs_dim_;
  CopyBytesAsync(obs, current_obs_.data(), envs * obs_dim_ * sizeof(float), device_, stream());
  const nn::ConstBatchView obs_view(obs, envs, obs_dim_, device_);
  const nn::ConstBatchView logits = learner_->actor().Forward(obs_view);
  PolicySample sample;
  sample.actions = actions_.data() + t * envs;
  sample.samples = head_.gaussian ? samples_.data() + t * envs * outputs_ : nullptr;
  sample.env_actions = head_.gaussian ? env_actions_.data() : nullptr;
  sample.log_probs = log_probs_.data() + t * envs;
  policy_ops_->SamplePolicy(head_, logits.data(), lanes(), n, counters_dev_.data(), lanes_->seeds_dev(), false, sample);
  const nn::ConstBatchView values = learner_->critic().Forward(obs_view);
  CopyBytesAsync(values_.data() + t * envs, values.data(), envs * sizeof(float), device_, stream());
  if (head_.gaussian)
    env_->Step(env_actions_.data());
  else
    env_->Step(sample.actions);
  RolloutArrays r;
  r.next_obs = next_obs;
  r.rewards = rewards_.data() + t * envs;
  r.terminated = terminated_.data() + t * envs;
  r.truncated = truncated_.data() + t * envs;
  r.steps = 1;
  r.envs = envs;
  r.obs_dim = obs_dim_;
  r.lanes = lanes();
  rollout_ops_->StoreRolloutStep(r, 0, env_->obs(), env_->final_obs(), env_->rewards(), env_->terminated(),
                                 env_->truncated());
  if (norms_->rewards())
    policy_ops_->ScaleRewards(norms_->reward_scaler(), r.rewards, r.terminated, r.truncated, r.rewards, n, false,
                              kPpoRewardClip);
  ObserveCurrent(env_->obs(), current_obs_.data(), n, false);
  ObserveCurrent(next_obs, next_obs, n, true);
  const nn::ConstBatchView next_values =
      learner_->critic().Forward(nn::ConstBatchView(next_obs, envs, obs_dim_, device_));
  CopyBytesAsync(next_values_.data() + t * envs, next_values.data(), envs * sizeof(float), device_, stream());
  episode_ops_->CollectEpisodes(env_->terminated(), env_->truncated(), env_->episode_returns(), env_->episode_lengths(),
                                lanes(), n, lanes_->rings());
  episode_ops_->AdvanceSteps(counters_dev_.data(), n);
}

void PpoAgent::GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) {
  RolloutArrays shape;  // the rollout's layout: steps x (lanes x n) envs
  shape.steps = config_.num_steps;
  shape.envs = lanes() * config_.num_envs;
  shape.lanes = lanes();
  GatherColumns columns;
  columns.Add(obs_.data(), batch_obs_.data(), obs_dim_);
  if (head_.gaussian)
    columns.Add(samples_.data(), batch_samples_.data(), outputs_);
  else
    columns.Add(actions_.data(), batch_actions_.data(), 1);
  for (auto [from, to] : {std::pair{&log_probs_, &batch_log_probs_},
                          {&values_, &batch_values_},
                          {&advantages_, &batch_advantages_},
                          {&returns_, &batch_returns_}})
    columns.Add(from->data(), to->data(), 1);
  rollout_ops_->GatherMinibatch(shape, columns, first, rows, counters_dev_.data(), lanes_->seeds_dev(), epoch);
}

// CleanRL's target_kl: the epochs stop once the last minibatch's approx_kl exceeds it (a host read
// per epoch, so such iterations run eagerly; one lane: Unbatchable refuses more).
bool PpoAgent::StopEpochs() {
  return config_.target_kl > 0 && stats_.ToHost(kPpoApproxKl, 1).front() > config_.target_kl;
}

void PpoAgent::TrainMinibatch() {
  const int64_t rows = lanes() * config_.minibatch_size();
  const nn::ConstBatchView obs(batch_obs_.data(), rows, obs_dim_, device_);
  const nn::ConstBatchView outputs = learner_->actor().ForwardTrain(obs);
  const nn::ConstBatchView values = learner_->critic().ForwardTrain(obs);
  PpoBatch batch;
  batch.outputs = outputs.data();
  batch.actions = batch_actions_.data();
  batch.samples = batch_samples_.data();
  batch.old_log_probs = batch_log_probs_.data();
  batch.advantages = batch_advantages_.data();
  batch.returns = batch_returns_.data();
  batch.old_values = batch_values_.data();
  batch.values = values.data();
  batch.grad_outputs = learner_->actor().OutputGrad().data();
  batch.grad_log_std = learner_->log_std_grad();
  batch.grad_values = learner_->critic().OutputGrad().data();
  batch.stats = stats_.data();
  batch.moments = moments_.data();
  batch.row_terms = row_terms_.data();
  batch.lanes = lanes();
  batch.rows = config_.minibatch_size();
  ppo_ops_->PpoLoss(head_, batch, loss_);
  learner_->Step(*ppo_ops_);
}

}  // namespace cugym::agent
