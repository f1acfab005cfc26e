// SacAgent's reads, evaluations and files (sac.h): metrics rows, deterministic evaluations, model
// files, checkpoints, and a batch shrunk to some of its lanes.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/policy.h"
#include "agents/off_policy/sac.h"
#include "core/safetensors.h"

namespace cugym::agent {

MetricsRow SacAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  MetricsRow p = CommonRow(lane, seconds, steps, loop);
  if (read_step_ != global_step_) {
    read_stats_ = stats_.ToHost();
    read_step_ = global_step_;
  }
  // CleanRL sac_continuous_action.py's losses, of the last update (NaN before any); entropy is
  // the estimate -mean log pi of the last actor step.
  const float* s = read_stats_.data() + lane * kSacStats;
  const bool critics = updates_ > 0, actor = actor_updates_ > 0;
  const double nan = MetricsRow::kNaN;
  p.Set("qf1_loss", critics ? s[kSacQf1Loss] : nan);
  p.Set("qf2_loss", critics ? s[kSacQf2Loss] : nan);
  p.Set("qf1_values", critics ? s[kSacQf1Values] : nan);
  p.Set("actor_loss", actor ? s[kSacActorLoss] : nan);
  p.Set("alpha", actor ? s[kSacAlpha] : nan);
  p.Set("alpha_loss", actor ? s[kSacAlphaLoss] : nan);
  p.Set("entropy", actor ? s[kSacEntropy] : nan);
  return p;
}

AgentLanes::Play SacAgent::Play() {
  return DeterministicPolicyPlay(*episode_ops_, *policy_ops_, learner_->actor(), eval_head_, RunningMoments{}, 10.0,
                                 lanes(), eval_scratch_);
}

void SacAgent::SaveModel(int lane, const std::string& path) const {
  PolicyModelInfo info;
  info.algo = "sac";
  info.env_id = config_.env_id;
  info.global_step = global_step_;
  info.gaussian = true;
  info.squash = true;
  info.state_log_std = true;
  SavePolicyModel(path, Solo(lane).actor(), info);
}

void SacAgent::LoadModel(int lane, const std::string& path) {
  SacLearner& solo = Solo(lane);
  const PolicyModelInfo info = LoadPolicyModel(path, solo.actor());
  if (!info.gaussian || !info.squash || !info.state_log_std || !info.obs_mean.empty())
    throw std::invalid_argument(path + ": not a SAC policy (a squashed Gaussian with state-dependent log-stds)");
  if (lanes() > 1) learner_->actor().CopyReplicaFrom(lane, solo.actor());
  lanes_->Forget();
}

void SacAgent::SaveOwn(int lane, CheckpointWriter& out) const {
  out.Int("cugym.updates", updates_);
  out.Int("cugym.actor_updates", actor_updates_);
  const int64_t noise = n_ * action_dim_;
  out.Floats("sac.noise_state", noise_state_.ToHost(lane * noise, noise));
  Solo(lane).Save(out);
}

void SacAgent::CheckOwn(const std::vector<std::unique_ptr<CheckpointReader>>& in) const {
  CheckSameCounter(in, "cugym.updates");
  CheckSameCounter(in, "cugym.actor_updates");
}

void SacAgent::LoadOwn(int lane, const CheckpointReader& in) {
  const int64_t noise = n_ * action_dim_;
  noise_state_.FromHost(in.Floats("sac.noise_state", noise).data(), noise, lane * noise);
  SacLearner& solo = Solo(lane);
  solo.Load(in);
  if (lanes() > 1) learner_->CopyReplicaFrom(lane, solo);
}

void SacAgent::ResumedOwn(const CheckpointReader& first) {
  read_step_ = -1;
  updates_ = first.Int("cugym.updates");
  actor_updates_ = first.Int("cugym.actor_updates");
}

std::unique_ptr<LaneAgent> SacAgent::MakeLike(std::vector<uint64_t> seeds) const {
  return std::unique_ptr<LaneAgent>(new SacAgent(*registry_, config_, std::move(seeds), backend_));
}

void SacAgent::KeepOwn(const std::vector<int>& keep, LaneAgent& next) const {
  auto& to = static_cast<SacAgent&>(next);
  const int64_t noise = n_ * action_dim_;
  for (std::size_t i = 0; i < keep.size(); ++i) {
    to.learner_->CopyReplicaFrom(static_cast<int>(i), Solo(keep[i]));
    CopyBytes(to.noise_state_.data() + i * noise, device_, noise_state_.data() + keep[i] * noise, device_,
              noise * sizeof(float));
  }
  to.updates_ = updates_;
  to.actor_updates_ = actor_updates_;
}

}  // namespace cugym::agent
