// The off-policy family (off_policy_agent.h): the replay memory, the update debt, and their part
// of checkpoints and Keep.
#include "agents/off_policy/off_policy_agent.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace cugym::agent {

OffPolicyAgent::OffPolicyAgent(const Registry& registry, const TrainConfig& config, const std::vector<uint64_t>& seeds,
                               std::shared_ptr<nn::Backend> backend, const std::string& algo)
    : LaneAgent(registry, config, seeds, std::move(backend), algo),
      n_(config_.num_envs),
      learning_resumes_at_(config_.learning_starts) {}

OffPolicyAgent::~OffPolicyAgent() = default;

const std::vector<std::string>& OffPolicyAgent::ReplayKeys() {
  static const std::vector<std::string> keys = {"buffer_size",     "batch_size",   "tau",
                                                "learning_starts", "replay_ratio", "save_replay"};
  return keys;
}

void OffPolicyAgent::CheckReplay(const TrainConfig& c) {
  RequireKey(c.num_envs <= c.buffer_size, "num_envs",
             "must not exceed buffer_size (" + ShowNumber(c.buffer_size) +
                 "): one vector step writes num_envs rows of the replay ring",
             c.num_envs);
  RequireKey(c.batch_size <= c.buffer_size, "batch_size",
             "must not exceed buffer_size (" + ShowNumber(c.buffer_size) + ")", c.batch_size);
}

int64_t OffPolicyAgent::PlannedUpdates(const TrainConfig& c) {
  const int64_t n = c.num_envs;
  const int64_t vector_steps = (c.total_steps + n - 1) / n;
  const int64_t first = std::max(c.learning_starts / n + 1, (c.batch_size + n - 1) / n);  // 1-based
  const int64_t learning = std::max<int64_t>(vector_steps - first + 1, 0);
  return static_cast<int64_t>(std::floor(c.replay_ratio * static_cast<double>(n * learning) + 1e-9));
}

void OffPolicyAgent::MakeReplay(ReplayOptions options, const std::vector<uint64_t>& seeds) {
  options.lanes = static_cast<int64_t>(seeds.size());
  replay_ = std::make_unique<ReplayMemory>(device_, options);
  replay_->SetLaneSeeds(seeds);
}

bool OffPolicyAgent::PlanUpdates(int64_t* updates) {
  const int64_t step = global_step_ + n_, stored = std::min(replay_->size() + n_, config_.buffer_size);
  if (step <= learning_resumes_at_ || stored < config_.batch_size) return false;
  update_debt_ += config_.replay_ratio * static_cast<double>(n_);
  for (; update_debt_ >= 1.0; update_debt_ -= 1.0) ++*updates;
  return true;
}

int64_t OffPolicyAgent::WholeUpdatesPerStep() const {
  const double per_step = config_.replay_ratio * static_cast<double>(n_);
  return per_step >= 1.0 && per_step == std::floor(per_step) ? static_cast<int64_t>(per_step) : -1;
}

void OffPolicyAgent::Stepped() {
  global_step_ += n_;
  vector_steps_ += 1;
  replay_->Stored(n_);
}

void OffPolicyAgent::SaveLane(int lane, CheckpointWriter& out) const {
  out.Int("cugym.draws", replay_->draws());
  out.Real("cugym.update_debt", update_debt_);
  out.Int("cugym.learning_resumes_at", learning_resumes_at_);
  if (config_.save_replay) replay_->Save(out, lane);
  SaveOwn(lane, out);
}

void OffPolicyAgent::CheckLanes(const std::vector<std::unique_ptr<CheckpointReader>>& in) const {
  const CheckpointReader& first = *in.front();
  const bool with_replay = first.Has("cugym.replay.position");
  for (const auto& r : in) {
    // cugym.update_debt came with exact resumption (with the envs' state and the replay memory in
    // the checkpoint); a file from before holds too little to go on as the run would have.
    if (!r->Has("cugym.update_debt"))
      throw std::invalid_argument(r->path() +
                                  ": a checkpoint from a cugym before exact resumption (no cugym.update_debt)" +
                                  " cannot be resumed; cugym eval still reads its network");
    if (r->Has("cugym.replay.position") != with_replay)
      throw std::invalid_argument(r->path() + (with_replay ? " lacks" : " holds") + " the replay memory " +
                                  first.path() + (with_replay ? " holds" : " lacks") +
                                  ": a batch's agents go on together");
  }
  for (const char* key : {"cugym.draws", "cugym.update_debt"}) CheckSameCounter(in, key);
  if (first.Has("cugym.learning_resumes_at")) CheckSameCounter(in, "cugym.learning_resumes_at");
  CheckOwn(in);
}

void OffPolicyAgent::LoadLane(int lane, const CheckpointReader& in) {
  if (lane == 0) loading_replay_ = in.Has("cugym.replay.position");
  if (loading_replay_) replay_->Load(in, lane);
  LoadOwn(lane, in);
}

void OffPolicyAgent::Resumed(const CheckpointReader& first) {
  replay_->set_draws(static_cast<uint32_t>(first.Int("cugym.draws")));
  update_debt_ = first.Real("cugym.update_debt");
  learning_resumes_at_ = first.Has("cugym.learning_resumes_at") ? first.Int("cugym.learning_resumes_at") : 0;
  if (!loading_replay_) {  // the memories refill before learning goes on
    replay_->Clear();
    learning_resumes_at_ = global_step_ + std::min(config_.learning_starts, config_.buffer_size);
  }
  ResumedOwn(first);
}

void OffPolicyAgent::KeepLanes(const std::vector<int>& keep, LaneAgent& next) const {
  auto& to = static_cast<OffPolicyAgent&>(next);
  to.replay_->TakeLanes(*replay_, std::vector<int64_t>(keep.begin(), keep.end()));
  to.update_debt_ = update_debt_;
  to.learning_resumes_at_ = learning_resumes_at_;
  KeepOwn(keep, next);
}

}  // namespace cugym::agent
