// The lane-agent base (lane_agent.h): config checks, the lanes, evaluations, the checkpoint and
// resume skeletons, Keep.
#include "agents/common/lane_agent.h"

#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/safetensors.h"

namespace cugym::agent {

LaneAgent::LaneAgent(const Registry& registry, const TrainConfig& config, const std::vector<uint64_t>& seeds,
                     std::shared_ptr<nn::Backend> backend, const std::string& algo)
    : registry_(&registry), config_(config), backend_(std::move(backend)), device_(backend_->device()) {
  config_.Validate();
  config_.seed = seeds.front();
  if (config_.algo != algo) {
    std::string name = algo + "Agent";  // "dqn" -> "DqnAgent"
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    throw std::invalid_argument(name + ": the config's algo is \"" + config_.algo + "\"");
  }
  const std::string refused = Unbatchable(registry, config_, static_cast<int>(seeds.size()));
  if (!refused.empty()) throw std::invalid_argument(refused);
}

LaneAgent::~LaneAgent() = default;

void LaneAgent::MakeLanes(std::vector<uint64_t> seeds, void* stream) {
  env_ = MakeLaneEnvs(*registry_, config_, seeds, device_, stream);
  lanes_ = std::make_unique<AgentLanes>(*registry_, config_, device_, stream, std::move(seeds));
  counters_dev_ = Buffer<StepCounters>(device_, 1);
  const StepCounters zero{0, 0};
  counters_dev_.FromHost(&zero, 1);
}

bool LaneAgent::GraphAllowed() const {
  if (iteration_graph_.failed()) return false;
  return iteration_graph_on_cpu_ || (device_ == Device::kCuda && config_.cuda_graph && env_->step_capturable());
}

MetricsRow LaneAgent::CommonRow(int lane, double seconds, int64_t steps, const LoopState& loop) {
  return EpisodeRow(global_step_, seconds, steps, lanes_->Ended(lane, global_step_), loop);
}

EvalResult LaneAgent::Evaluate(int lane, int64_t index) { return lanes_->Evaluate(lane, index, global_step_, Play()); }

std::vector<EvalResult> LaneAgent::EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                                  uint64_t seed_offset) {
  return lanes_->EvaluateModels(listed, episodes, num_envs, seed_offset, max_play_envs(), Play());
}

void LaneAgent::SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const {
  lanes_->Check(lane, "SaveCheckpoint");
  TrainConfig config = config_;
  config.seed = seeds()[lane];
  CheckpointWriter out;
  WriteCheckpointCounters(config_.algo, config, global_step_, vector_steps_, loop, out);
  lanes_->Save(lane, *env_, global_step_, out);
  SaveLane(lane, out);
  WriteSafetensors(path, out.tensors(), out.metadata());
}

std::vector<LoopState> LaneAgent::LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) {
  int64_t step = 0, vector_steps = 0;
  const std::vector<LoopState> loops =
      ReadCheckpointCounters(in, config_.algo, config_.env_id, lanes(), &step, &vector_steps);
  CheckLanes(in);
  // A tensor missing further on still throws, and leaves this agent part-loaded (the CLI then exits).
  DropGraphs();  // they replay pointers and host values of their capture that change here
  lanes_->Forget();
  global_step_ = step;
  vector_steps_ = vector_steps;
  for (int a = 0; a < lanes(); ++a) {
    lanes_->Load(a, *in[a]);
    LoadLane(a, *in[a]);
  }
  // One lane without its envs' state (an env that cannot save it): new episodes.
  if (!lanes_->LoadEnvs(in, *env_)) env_->Reset(ResumeSeed(config_.seed, global_step_));
  const StepCounters counters{vector_steps_, global_step_};
  counters_dev_.FromHost(&counters, 1);
  Resumed(*in.front());
  return loops;
}

std::unique_ptr<Agent> LaneAgent::Keep(const std::vector<int>& keep) const {
  std::unique_ptr<LaneAgent> next = MakeLike(LaneSeeds(config_, lanes_->SeedsOf(keep, "Keep")));
  if (!AgentLanes::KeepEnvs(*env_, keep, *next->env_)) return nullptr;
  next->lanes_->TakeLanes(*lanes_, keep);
  KeepLanes(keep, *next);
  CopyBytes(next->counters_dev_.data(), device_, counters_dev_.data(), device_, sizeof(StepCounters));
  next->global_step_ = global_step_;
  next->vector_steps_ = vector_steps_;
  next->iteration_graph_on_cpu_ = iteration_graph_on_cpu_;
  return next;
}

}  // namespace cugym::agent
