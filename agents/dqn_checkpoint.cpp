// The DQN checkpoint format (dqn_checkpoint.h): its reader and writer, DqnAgent's SaveCheckpoint
// and LoadCheckpoints, which write and read the loop's own keys and hand the rest to each part's
// owner, Keep, and the model files (the online network alone, for eval, watch and record).
#include "agents/dqn_checkpoint.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "agents/dqn.h"
#include "core/build_info.h"
#include "nn/checkpoint.h"

namespace cugym::agent {

void CheckpointWriter::Real(const std::string& key, double value) { metadata_[key] = MetadataNumber(value); }

void CheckpointWriter::Floats(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  tensors_.push_back(NamedTensor::FromF32(name, std::move(shape), values.data()));
}

CheckpointReader::CheckpointReader(const std::string& path) : path_(path), file_(ReadSafetensors(path)) {}

std::string CheckpointReader::Text(const std::string& key) const {
  auto it = file_.metadata.find(key);
  if (it == file_.metadata.end()) throw std::invalid_argument(path_ + ": no '" + key + "' in its metadata");
  return it->second;
}

int64_t CheckpointReader::Int(const std::string& key) const {
  const std::string text = Text(key);
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(path_ + ": metadata " + key + " is not an integer ('" + text + "')");
}

double CheckpointReader::Real(const std::string& key) const {
  return ParseMetadataNumber(Text(key), path_ + ": metadata " + key);
}

const NamedTensor& CheckpointReader::Tensor(const std::string& name, int64_t size) const {
  const NamedTensor* t = file_.Find(name);
  if (t == nullptr || t->NumElements() != size)
    throw std::invalid_argument(path_ + ": tensor '" + name + "' is missing or not of " + std::to_string(size) +
                                " elements");
  return *t;
}

std::vector<float> CheckpointReader::Floats(const std::string& name, int64_t size) const {
  return Tensor(name, size).ToF32();
}

std::vector<int64_t> CheckpointReader::Int64s(const std::string& name, int64_t size) const {
  return Tensor(name, size).ToI64();
}

std::vector<int32_t> CheckpointReader::Ints(const std::string& name, int64_t size) const {
  const std::vector<int64_t> wide = Int64s(name, size);
  return std::vector<int32_t>(wide.begin(), wide.end());
}

void WriteDqnCounters(const TrainConfig& config, const DqnCounters& c, CheckpointWriter& out) {
  out.Text("cugym.algo", "dqn");
  out.Text("cugym.env_id", config.env_id);
  out.Text("cugym.version", VersionString());
  out.Text("cugym.config", config.ToToml());
  out.Int("cugym.global_step", c.global_step);
  out.Int("cugym.vector_steps", c.vector_steps);
  out.Int("cugym.draws", c.draws);
  out.Int("cugym.next_target_step", c.next_target_step);
  out.Real("cugym.update_debt", c.update_debt);
  out.Int("cugym.learning_resumes_at", c.learning_resumes_at);
  out.Real("cugym.wall_time", c.wall_time);
  out.Real("cugym.last_eval_return", c.last_eval_return);
}

DqnCounters ReadDqnCounters(const CheckpointReader& in) {
  // cugym.update_debt came with exact resumption (with the envs' state and the replay memory in
  // the checkpoint); a file from before holds too little to go on as the run would have.
  if (!in.Has("cugym.update_debt"))
    throw std::invalid_argument(in.path() +
                                ": a checkpoint from a cugym before exact resumption (no cugym.update_debt)" +
                                " cannot be resumed; cugym eval still reads its network");
  DqnCounters c;
  c.global_step = in.Int("cugym.global_step");
  c.vector_steps = in.Int("cugym.vector_steps");
  c.draws = static_cast<uint32_t>(in.Int("cugym.draws"));
  c.next_target_step = in.Int("cugym.next_target_step");
  c.update_debt = in.Real("cugym.update_debt");
  c.learning_resumes_at = in.Has("cugym.learning_resumes_at") ? in.Int("cugym.learning_resumes_at") : 0;
  c.wall_time = in.Real("cugym.wall_time");
  c.last_eval_return =
      in.Has("cugym.last_eval_return") ? in.Real("cugym.last_eval_return") : std::numeric_limits<double>::quiet_NaN();
  return c;
}

void DqnAgent::SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const {
  DqnCounters c;
  c.global_step = global_step_;
  c.vector_steps = global_step_ / n_;
  c.draws = replay_->draws();
  c.next_target_step = next_target_step_;
  c.update_debt = update_debt_;
  c.learning_resumes_at = learning_resumes_at_;
  c.wall_time = loop.wall_time;
  c.last_eval_return = loop.last_eval_return;
  TrainConfig config = config_;
  config.seed = seeds().at(lane);
  CheckpointWriter out;
  WriteDqnCounters(config, c, out);
  lanes_->Save(lane, *env_, global_step_, out);
  if (config_.save_replay) replay_->Save(out, lane);
  lanes_->Solo(*learner_, lane).Save(path, out.metadata(), std::move(out.tensors()));
}

namespace {

// The lanes' checkpoints, read and checked before anything changes: one algorithm, env and step,
// all with the replay memory or none. Returns the shared counters.
DqnCounters CheckLaneCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in, const TrainConfig& config,
                                 bool* with_replay) {
  DqnCounters shared;
  for (std::size_t a = 0; a < in.size(); ++a) {
    const CheckpointReader& r = *in[a];
    const std::string& path = r.path();
    const std::string& first = in.front()->path();
    CheckCheckpointHeader(r, "dqn", config.env_id);
    const DqnCounters c = ReadDqnCounters(r);
    if (a == 0) {
      shared = c;
      *with_replay = r.Has("cugym.replay.position");
    } else if (r.Has("cugym.replay.position") != *with_replay) {
      throw std::invalid_argument(path + (*with_replay ? " lacks" : " holds") + " the replay memory " + first +
                                  (*with_replay ? " holds" : " lacks") + ": a batch's agents go on together");
    } else if (c.global_step != shared.global_step || c.vector_steps != shared.vector_steps ||
               c.draws != shared.draws || c.next_target_step != shared.next_target_step ||
               c.update_debt != shared.update_debt || c.learning_resumes_at != shared.learning_resumes_at) {
      throw std::invalid_argument(path + ": not of the same step as " + first + " (step " +
                                  std::to_string(c.global_step) + " against " + std::to_string(shared.global_step) +
                                  "): a batch's agents go on together");
    }
  }
  return shared;
}

}  // namespace

std::vector<LoopState> DqnAgent::LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) {
  if (static_cast<int>(in.size()) != lanes())
    throw std::invalid_argument("DqnAgent::LoadCheckpoints: " + std::to_string(in.size()) + " checkpoints for " +
                                std::to_string(lanes()) + " lanes");
  bool with_replay = true;
  const DqnCounters shared = CheckLaneCheckpoints(in, config_, &with_replay);
  // A tensor missing further on still throws, and leaves this agent part-loaded (the CLI then exits).
  iteration_graph_.Drop();  // before anything it captured changes
  update_graph_.Drop();
  lanes_->Forget();
  global_step_ = shared.global_step;
  if (!lanes_->LoadEnvs(in, *env_))  // one lane without its envs' state: new episodes from a seed of their own
    env_->Reset(seeds().front() ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  std::vector<LoopState> loops;
  for (int a = 0; a < lanes(); ++a) {
    const CheckpointReader& r = *in[a];
    lanes_->Load(a, r, *learner_);
    if (with_replay) replay_->Load(r, a);
    const DqnCounters c = ReadDqnCounters(r);
    loops.push_back(LoopState{c.wall_time, c.last_eval_return});
  }
  replay_->set_draws(shared.draws);
  next_target_step_ = shared.next_target_step;
  update_debt_ = shared.update_debt;
  learning_resumes_at_ = shared.learning_resumes_at;
  if (!with_replay) {  // the memories refill before learning goes on
    replay_->Clear();
    learning_resumes_at_ = global_step_ + std::min(config_.learning_starts, config_.buffer_size);
  }
  const StepCounters counters{shared.vector_steps, shared.global_step};
  counters_dev_.FromHost(&counters, 1);
  return loops;
}

std::unique_ptr<Agent> DqnAgent::Keep(const std::vector<int>& keep) const {
  std::unique_ptr<DqnAgent> next(new DqnAgent(*registry_, config_,
                                              LaneSeeds(config_, lanes_->SeedsOf(keep, "DqnAgent::Keep")),
                                              learner_->online().shared_backend()));
  if (!AgentLanes::KeepEnvs(*env_, keep, *next->env_)) return nullptr;
  next->lanes_->TakeLanes(*lanes_, keep, *learner_, *next->learner_);
  next->replay_->TakeLanes(*replay_, std::vector<int64_t>(keep.begin(), keep.end()));
  CopyBytes(next->counters_dev_.data(), device_, counters_dev_.data(), device_, sizeof(StepCounters));
  next->global_step_ = global_step_;
  next->update_debt_ = update_debt_;
  next->next_target_step_ = next_target_step_;
  next->learning_resumes_at_ = learning_resumes_at_;
  next->iteration_graph_on_cpu_ = iteration_graph_on_cpu_;
  return next;
}

void DqnAgent::LoadModel(int lane, const std::string& path) {
  QLearner& solo = lanes_->Solo(*learner_, lane);  // a network of one of the lane's shape (convolution and all)
  nn::LoadMlp(path, solo.online());
  if (lanes() > 1) learner_->online().CopyReplicaFrom(lane, solo.online());
  lanes_->Forget();
}

void DqnAgent::SaveModel(int lane, const std::string& path) const {
  SaveQModel(path, lanes_->Solo(*learner_, lane), config_.env_id, global_step_);
}

void CheckCheckpointHeader(const CheckpointReader& in, const std::string& algo, const std::string& env_id) {
  const std::string written = in.Has("cugym.algo") ? in.Text("cugym.algo") : "dqn";
  if (written != algo)
    throw std::invalid_argument(in.path() + ": a " + written + " checkpoint; this run's algo is " + algo);
  if (in.Text("cugym.env_id") != env_id)
    throw std::invalid_argument(in.path() + ": a checkpoint for " + in.Text("cugym.env_id") + ", not " + env_id);
}

void SaveEnvEpisodes(const VectorEnvSnapshot& snapshot, CheckpointWriter& out) {
  if (snapshot.episode_starts.empty()) return;
  out.Ints("env.episode_starts", snapshot.episode_starts);
  out.Floats("env.episode_actions", snapshot.episode_actions);
}

void ReadEnvEpisodes(const CheckpointReader& in, int64_t num_envs, VectorEnvSnapshot* snapshot) {
  snapshot->episode_starts.clear();
  snapshot->episode_actions.clear();
  if (!in.HasTensor("env.episode_starts")) return;
  snapshot->episode_starts = in.Int64s("env.episode_starts", num_envs);
  const NamedTensor* actions = in.file().Find("env.episode_actions");
  if (actions == nullptr) throw std::invalid_argument(in.path() + ": env.episode_starts without env.episode_actions");
  if (actions->shape.size() != 1) throw std::invalid_argument(in.path() + ": env.episode_actions is not a vector");
  snapshot->episode_actions = actions->ToF32();
}

void SaveEnvSnapshot(const VectorEnvSnapshot& snapshot, CheckpointWriter& out) {
  out.Int("cugym.env.seed", snapshot.seed);
  out.Int("cugym.env.steps", snapshot.steps);
  out.Floats("env.states", snapshot.states);
  out.Ints("env.rng_counters", snapshot.rng_counters);
  out.Ints("env.elapsed", snapshot.elapsed);
  out.Floats("env.running_returns", snapshot.running_returns);
  SaveEnvEpisodes(snapshot, out);
}

bool ReadEnvSnapshot(const CheckpointReader& in, int64_t n, int64_t state_dim, VectorEnvSnapshot* snapshot) {
  if (!in.HasTensor("env.states")) return false;
  snapshot->seed = static_cast<uint64_t>(in.Int("cugym.env.seed"));
  snapshot->steps = static_cast<uint64_t>(in.Int("cugym.env.steps"));
  snapshot->states = in.Floats("env.states", n * state_dim);
  const std::vector<int64_t> rng_counters = in.Int64s("env.rng_counters", n);
  snapshot->rng_counters.assign(rng_counters.begin(), rng_counters.end());
  snapshot->elapsed = in.Ints("env.elapsed", n);
  snapshot->running_returns = in.Floats("env.running_returns", n);
  ReadEnvEpisodes(in, n, snapshot);
  return true;
}

void SaveQModel(const std::string& path, const QLearner& learner, const std::string& env_id, int64_t global_step) {
  nn::SaveMlp(path, learner.online(),
              {{"cugym.env_id", env_id},
               {"cugym.global_step", std::to_string(global_step)},
               {"cugym.head", learner.options().dueling ? "dueling" : "q"},
               {"cugym.version", VersionString()}});
}

}  // namespace cugym::agent
