// PpoAgent's reads, evaluations and files (ppo.h): metrics rows, deterministic evaluations, model
// files, checkpoints, and a batch shrunk to some of its lanes.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/policy.h"
#include "agents/on_policy/ppo.h"
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
  MetricsRow p = CommonRow(lane, seconds, steps, loop);
  if (read_step_ != global_step_) {
    read_stats_ = stats_.ToHost();
    read_values_ = values_.ToHost();
    read_returns_ = returns_.ToHost();
    read_updates_ = learner_->ReadUpdates();
    read_step_ = global_step_;
  }
  // CleanRL ppo.py's losses, of the last minibatch of the last update (NaN before any);
  // explained_variance over the last rollout.
  const int64_t updates = read_updates_;
  const float* s = read_stats_.data() + lane * kPpoStats;
  const double nan = MetricsRow::kNaN;
  p.Set("policy_loss", updates > 0 ? s[kPpoPolicyLoss] : nan);
  p.Set("value_loss", updates > 0 ? s[kPpoValueLoss] : nan);
  p.Set("entropy", updates > 0 ? s[kPpoEntropy] : nan);
  p.Set("approx_kl", updates > 0 ? s[kPpoApproxKl] : nan);
  p.Set("clipfrac", updates > 0 ? s[kPpoClipFraction] : nan);
  p.Set("explained_variance",
        updates > 0 ? ExplainedVariance(read_values_, read_returns_, lanes() * config_.num_envs, config_.num_envs, lane)
                    : nan);
  p.Set("learning_rate", updates > 0 ? learner_->LearningRate(updates) : nan);
  return p;
}

AgentLanes::Play PpoAgent::Play() {
  return DeterministicPolicyPlay(*episode_ops_, *policy_ops_, learner_->actor(), head_, norms_->observation_moments(),
                                 kPpoObsClip, lanes(), eval_scratch_);
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

void PpoAgent::SaveLane(int lane, CheckpointWriter& out) const {
  norms_->Save(lane, out);
  Solo(lane).Save(out);
}

void PpoAgent::LoadLane(int lane, const CheckpointReader& in) {
  PpoLearner& solo = Solo(lane);
  solo.Load(in);
  if (lanes() > 1) learner_->CopyReplicaFrom(lane, solo);
  norms_->Load(lane, in);
}

void PpoAgent::Resumed(const CheckpointReader&) {
  read_step_ = -1;
  // The observations the next step acts on, normalized with the loaded statistics as they were
  // when the checkpoint's step normalized them.
  ObserveCurrent(env_->obs(), current_obs_.data(), config_.num_envs, true);
}

std::unique_ptr<LaneAgent> PpoAgent::MakeLike(std::vector<uint64_t> seeds) const {
  return std::unique_ptr<LaneAgent>(new PpoAgent(*registry_, config_, std::move(seeds), backend_));
}

void PpoAgent::KeepLanes(const std::vector<int>& keep, LaneAgent& next) const {
  auto& to = static_cast<PpoAgent&>(next);
  // Each kept lane's networks, normalizers and current observations, as this agent normalized them.
  const int64_t lane_floats = config_.num_envs * obs_dim_;
  for (std::size_t i = 0; i < keep.size(); ++i) {
    to.learner_->CopyReplicaFrom(static_cast<int>(i), Solo(keep[i]));
    to.norms_->CopyLane(static_cast<int64_t>(i), *norms_, keep[i]);
    CopyBytes(to.current_obs_.data() + i * lane_floats, device_, current_obs_.data() + keep[i] * lane_floats, device_,
              lane_floats * sizeof(float));
  }
}

}  // namespace cugym::agent
