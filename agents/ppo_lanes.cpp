// PpoAgent's reads, evaluations and files (ppo.h): metrics rows, deterministic evaluations, model
// files, checkpoints, and a batch shrunk to some of its lanes.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/dqn_checkpoint.h"
#include "agents/policy.h"
#include "agents/ppo.h"
#include "core/build_info.h"
#include "core/safetensors.h"

namespace cugym::agent {
namespace {

// 1 - Var(returns - values) / Var(returns) over lane l's part of the rollout (CleanRL's
// explained_variance: NaN when the returns do not vary).
double ExplainedVariance(const std::vector<float>& values, const std::vector<float>& returns, int64_t envs, int64_t n,
                         int64_t lane) {
  double sum_r = 0, sum_d = 0, sq_r = 0, sq_d = 0;
  const int64_t steps = static_cast<int64_t>(values.size()) / envs, count = steps * n;
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = t * envs + lane * n + j;
      const double r = returns[at], d = static_cast<double>(returns[at]) - values[at];
      sum_r += r;
      sum_d += d;
      sq_r += r * r;
      sq_d += d * d;
    }
  }
  if (count == 0) return MetricsRow::kNaN;
  const double var_r = sq_r / count - (sum_r / count) * (sum_r / count);
  const double var_d = sq_d / count - (sum_d / count) * (sum_d / count);
  return var_r > 0 ? 1.0 - var_d / var_r : MetricsRow::kNaN;
}

}  // namespace

MetricsRow PpoAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  const EpisodeStats::Interval ended = lanes_->Ended(lane, global_step_);
  if (read_step_ != global_step_) {
    read_stats_ = stats_.ToHost();
    read_values_ = values_.ToHost();
    read_returns_ = returns_.ToHost();
    read_updates_ = learner_->ReadUpdates();
    read_step_ = global_step_;
  }
  MetricsRow p;
  p.global_step = global_step_;
  p.wall_time = loop.wall_time;
  p.epsilon = MetricsRow::kNaN;
  p.td_loss = MetricsRow::kNaN;
  p.q_values = MetricsRow::kNaN;
  p.sps = seconds > 0 ? static_cast<double>(steps) / seconds : 0;
  p.episodic_return = ended.mean_return;
  p.episodic_length = ended.mean_length;
  p.mean_return_100 = ended.mean_return_100;
  p.episodes = ended.episodes;
  p.eval_return = loop.last_eval_return;
  const int64_t updates = read_updates_;
  if (updates > 0) {
    const float* s = read_stats_.data() + lane * kPpoStats;
    p.policy_loss = s[kPpoPolicyLoss];
    p.value_loss = s[kPpoValueLoss];
    p.entropy = s[kPpoEntropy];
    p.approx_kl = s[kPpoApproxKl];
    p.clipfrac = s[kPpoClipFraction];
    p.explained_variance =
        ExplainedVariance(read_values_, read_returns_, lanes() * config_.num_envs, config_.num_envs, lane);
    p.learning_rate = learner_->LearningRate(updates);
  }
  return p;
}

AgentLanes::Play PpoAgent::DeterministicPlay() {
  return DeterministicPolicyPlay(*ops_, learner_->actor(), head_, norms_->observation_moments(), kPpoObsClip, lanes(),
                                 eval_scratch_);
}

EvalResult PpoAgent::Evaluate(int lane, int64_t index) {
  return lanes_->Evaluate(lane, index, global_step_, DeterministicPlay());
}

std::vector<EvalResult> PpoAgent::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) {
  return lanes_->EvaluateModels(listed, episodes, num_envs, seed_offset, learner_->options().max_batch,
                                DeterministicPlay());
}

PpoLearner& PpoAgent::Solo(int lane) const {
  lanes_->Check(lane, "Solo");
  if (lanes() == 1) return *learner_;
  if (!solo_) {
    PpoLearnerOptions one = learner_->options();
    one.replicas = 1;
    one.replica_seeds.clear();
    solo_ = std::make_unique<PpoLearner>(learner_->actor().shared_backend(), one);
  }
  learner_->CopyReplicaTo(lane, *solo_);
  return *solo_;
}

void PpoAgent::SaveModel(int lane, const std::string& path) const {
  PpoLearner& solo = Solo(lane);
  PolicyModelInfo info;
  info.env_id = config_.env_id;
  info.global_step = global_step_;
  info.gaussian = head_.gaussian;
  info.squash = head_.squash;
  info.log_std = solo.ReadLogStd(0);
  if (norms_->observations()) norms_->ReadObservationMoments(lane, &info.obs_mean, &info.obs_var);
  info.obs_clip = kPpoObsClip;
  SavePolicyModel(path, solo.actor(), info);
}

void PpoAgent::LoadModel(int lane, const std::string& path) {
  PpoLearner& solo = Solo(lane);
  const PolicyModelInfo info = LoadPolicyModel(path, solo.actor());
  if (info.gaussian != head_.gaussian || info.log_std.size() != static_cast<std::size_t>(head_.gaussian ? outputs_ : 0))
    throw std::invalid_argument(path + ": not a policy of this agent's kind");
  if (head_.gaussian)
    CopyBytes(learner_->log_std() + static_cast<int64_t>(lane) * outputs_, device_, info.log_std.data(), Device::kCpu,
              outputs_ * sizeof(float));
  if (lanes() > 1) learner_->actor().CopyReplicaFrom(lane, solo.actor());
  if (norms_->observations()) norms_->WriteObservationMoments(lane, info.obs_mean, info.obs_var);
  lanes_->Forget();
}

void PpoAgent::SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const {
  CheckpointWriter out;
  WriteRolloutCounters("ppo", config_, seeds().at(lane), global_step_, vector_steps_, loop, out);
  lanes_->Save(lane, *env_, global_step_, out);
  norms_->Save(lane, out);
  Solo(lane).Save(out);
  WriteSafetensors(path, out.tensors(), out.metadata());
}

std::vector<LoopState> PpoAgent::LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) {
  int64_t step = 0, vector_steps = 0;
  const std::vector<LoopState> loops = ReadRolloutCounters(in, "ppo", config_.env_id, lanes(), &step, &vector_steps);
  global_step_ = step;
  vector_steps_ = vector_steps;
  iteration_graph_.Drop();
  lanes_->Forget();
  read_step_ = -1;
  for (int a = 0; a < lanes(); ++a) {
    PpoLearner& solo = Solo(a);
    solo.Load(*in[a]);
    if (lanes() > 1) learner_->CopyReplicaFrom(a, solo);
    norms_->Load(a, *in[a]);
    lanes_->Load(a, *in[a]);
  }
  if (!lanes_->LoadEnvs(in, *env_))
    env_->Reset(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  // The observations the next step acts on, normalized with the loaded statistics as they were
  // when the checkpoint's step normalized them.
  ObserveCurrent(env_->obs(), current_obs_.data(), config_.num_envs, true);
  const StepCounters counters{vector_steps_, global_step_};
  counters_dev_.FromHost(&counters, 1);
  return loops;
}

std::unique_ptr<Agent> PpoAgent::Keep(const std::vector<int>& keep) const {
  std::unique_ptr<PpoAgent> next(new PpoAgent(*registry_, config_,
                                              LaneSeeds(config_, lanes_->SeedsOf(keep, "PpoAgent::Keep")),
                                              learner_->actor().shared_backend()));
  if (!AgentLanes::KeepEnvs(*env_, keep, *next->env_)) return nullptr;
  next->lanes_->TakeLanes(*lanes_, keep);
  for (std::size_t to = 0; to < keep.size(); ++to) {
    next->learner_->CopyReplicaFrom(static_cast<int>(to), Solo(keep[to]));
    next->norms_->CopyLane(static_cast<int64_t>(to), *norms_, keep[to]);
  }
  CopyBytes(next->counters_dev_.data(), device_, counters_dev_.data(), device_, sizeof(StepCounters));
  // Each kept lane's current observations, as this agent normalized them.
  const int64_t lane_floats = config_.num_envs * obs_dim_;
  for (std::size_t to = 0; to < keep.size(); ++to)
    CopyBytes(next->current_obs_.data() + to * lane_floats, device_, current_obs_.data() + keep[to] * lane_floats,
              device_, lane_floats * sizeof(float));
  next->global_step_ = global_step_;
  next->vector_steps_ = vector_steps_;
  next->iteration_graph_on_cpu_ = iteration_graph_on_cpu_;
  return next;
}

}  // namespace cugym::agent
