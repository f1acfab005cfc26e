// SacAgent's reads, evaluations and files (sac.h): metrics rows, deterministic evaluations, model
// files, checkpoints, and a batch shrunk to some of its lanes.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/dqn_checkpoint.h"
#include "agents/policy.h"
#include "agents/sac.h"
#include "core/safetensors.h"

namespace cugym::agent {

MetricsRow SacAgent::Progress(int lane, double seconds, int64_t steps, const LoopState& loop) {
  const EpisodeStats::Interval ended = lanes_->Ended(lane, global_step_);
  if (read_step_ != global_step_) {
    read_stats_ = stats_.ToHost();
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
  const float* s = read_stats_.data() + lane * kSacStats;
  if (updates_ > 0) {
    p.qf1_loss = s[kSacQf1Loss];
    p.qf2_loss = s[kSacQf2Loss];
    p.qf1_values = s[kSacQf1Values];
  }
  if (actor_updates_ > 0) {
    p.actor_loss = s[kSacActorLoss];
    p.alpha = s[kSacAlpha];
    p.alpha_loss = s[kSacAlphaLoss];
    p.entropy = s[kSacEntropy];
  }
  return p;
}

// Tanh of the means, rescaled to the Box (eval_head_), as the model file acts.
AgentLanes::Play SacAgent::DeterministicPlay() {
  return DeterministicPolicyPlay(*ops_, learner_->actor(), eval_head_, RunningMoments{}, 10.0, lanes(), eval_scratch_);
}

EvalResult SacAgent::Evaluate(int lane, int64_t index) {
  return lanes_->Evaluate(lane, index, global_step_, DeterministicPlay());
}

std::vector<EvalResult> SacAgent::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) {
  return lanes_->EvaluateModels(listed, episodes, num_envs, seed_offset, learner_->options().max_batch,
                                DeterministicPlay());
}

SacLearner& SacAgent::Solo(int lane) const {
  lanes_->Check(lane, "Solo");
  if (lanes() == 1) return *learner_;
  if (!solo_) {
    SacLearnerOptions one = learner_->options();
    one.replicas = 1;
    one.replica_seeds.clear();
    solo_ = std::make_unique<SacLearner>(learner_->actor().shared_backend(), one);
  }
  learner_->CopyReplicaTo(lane, *solo_);
  return *solo_;
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

void SacAgent::SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const {
  CheckpointWriter out;
  WriteRolloutCounters("sac", config_, seeds().at(lane), global_step_, vector_steps_, loop, out);
  out.Int("cugym.updates", updates_);
  out.Int("cugym.actor_updates", actor_updates_);
  out.Real("cugym.update_debt", update_debt_);
  out.Int("cugym.learning_resumes_at", learning_resumes_at_);
  out.Int("cugym.draws", replay_->draws());
  out.Text("cugym.with_replay", config_.save_replay ? "true" : "false");
  const int64_t noise = n_ * action_dim_;
  out.Floats("sac.noise_state", noise_state_.ToHost(lane * noise, noise));
  lanes_->Save(lane, *env_, global_step_, out);
  if (config_.save_replay) replay_->Save(out, lane);
  Solo(lane).Save(out);
  WriteSafetensors(path, out.tensors(), out.metadata());
}

std::vector<LoopState> SacAgent::LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) {
  int64_t step = 0, vector_steps = 0;
  const std::vector<LoopState> loops = ReadRolloutCounters(in, "sac", config_.env_id, lanes(), &step, &vector_steps);
  const CheckpointReader& first = *in.front();
  const bool with_replay = first.Text("cugym.with_replay") == "true";
  for (const auto& r : in)
    if (r->Int("cugym.updates") != first.Int("cugym.updates") ||
        r->Text("cugym.with_replay") != first.Text("cugym.with_replay"))
      throw std::invalid_argument(r->path() + ": not of the same update or replay memory as " + first.path());
  iteration_graph_.Drop();
  lanes_->Forget();
  read_step_ = -1;
  global_step_ = step;
  vector_steps_ = vector_steps;
  updates_ = first.Int("cugym.updates");
  actor_updates_ = first.Int("cugym.actor_updates");
  update_debt_ = first.Real("cugym.update_debt");
  learning_resumes_at_ = first.Int("cugym.learning_resumes_at");
  const int64_t noise = n_ * action_dim_;
  for (int a = 0; a < lanes(); ++a) {
    noise_state_.FromHost(in[a]->Floats("sac.noise_state", noise).data(), noise, a * noise);
    SacLearner& solo = Solo(a);
    solo.Load(*in[a]);
    if (lanes() > 1) learner_->CopyReplicaFrom(a, solo);
    lanes_->Load(a, *in[a]);
    if (with_replay) replay_->Load(*in[a], a);
  }
  replay_->set_draws(static_cast<uint32_t>(first.Int("cugym.draws")));
  if (!with_replay) {  // the memories refill before learning goes on
    replay_->Clear();
    learning_resumes_at_ = global_step_ + std::min(config_.learning_starts, config_.buffer_size);
  }
  if (!lanes_->LoadEnvs(in, *env_))
    env_->Reset(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  const StepCounters counters{vector_steps_, global_step_};
  counters_dev_.FromHost(&counters, 1);
  return loops;
}

std::unique_ptr<Agent> SacAgent::Keep(const std::vector<int>& keep) const {
  std::unique_ptr<SacAgent> next(new SacAgent(*registry_, config_,
                                              LaneSeeds(config_, lanes_->SeedsOf(keep, "SacAgent::Keep")),
                                              learner_->actor().shared_backend()));
  if (!AgentLanes::KeepEnvs(*env_, keep, *next->env_)) return nullptr;
  next->lanes_->TakeLanes(*lanes_, keep);
  const int64_t noise = n_ * action_dim_;
  for (std::size_t to = 0; to < keep.size(); ++to) {
    next->learner_->CopyReplicaFrom(static_cast<int>(to), Solo(keep[to]));
    CopyBytes(next->noise_state_.data() + to * noise, device_, noise_state_.data() + keep[to] * noise, device_,
              noise * sizeof(float));
  }
  next->replay_->TakeLanes(*replay_, std::vector<int64_t>(keep.begin(), keep.end()));
  CopyBytes(next->counters_dev_.data(), device_, counters_dev_.data(), device_, sizeof(StepCounters));
  next->global_step_ = global_step_;
  next->vector_steps_ = vector_steps_;
  next->updates_ = updates_;
  next->actor_updates_ = actor_updates_;
  next->update_debt_ = update_debt_;
  next->learning_resumes_at_ = learning_resumes_at_;
  next->iteration_graph_on_cpu_ = iteration_graph_on_cpu_;
  return next;
}

}  // namespace cugym::agent
