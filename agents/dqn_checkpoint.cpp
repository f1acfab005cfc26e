// The DQN checkpoint format (dqn_checkpoint.h): its reader and writer, DqnAgent's SaveCheckpoint
// and LoadCheckpoint, which write and read the loop's own keys and hand the rest to each part's
// owner, and SaveModel (the online network alone, for eval, watch and record).
#include "agents/dqn_checkpoint.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <stdexcept>

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

void SaveDqnCheckpoint(const std::string& path, const DqnConfig& config, const DqnCounters& c,
                       const EpisodeStats& episodes, const VectorEnvSnapshot* envs, const std::vector<int32_t>& held,
                       const std::vector<int32_t>& left, const ReplayMemory& replay, int64_t replay_lane,
                       const QLearner& learner) {
  CheckpointWriter out;
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
  episodes.Save(out);
  if (envs != nullptr) SaveEnvSnapshot(*envs, out);
  if (config.exploration_hold_mu > 0) {
    out.Ints("explore.held", held);
    out.Ints("explore.left", left);
  }
  if (config.save_replay) replay.Save(out, replay_lane);
  learner.Save(path, out.metadata(), std::move(out.tensors()));
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

void DqnAgent::SaveCheckpoint(const std::string& path) const {
  DqnCounters c;
  c.global_step = global_step_;
  c.vector_steps = vector_steps_;
  c.draws = replay_->draws();
  c.next_target_step = next_target_step_;
  c.update_debt = update_debt_;
  c.learning_resumes_at = learning_resumes_at_;
  c.wall_time = wall_time_;
  c.last_eval_return = last_eval_return_;
  const bool holds = config_.exploration_hold_mu > 0;
  VectorEnvSnapshot envs;
  const bool has_envs = env_->SaveSnapshot(&envs);
  SaveDqnCheckpoint(path, config_, c, *episodes_, has_envs ? &envs : nullptr,
                    holds ? held_actions_.ToHost() : std::vector<int32_t>(),
                    holds ? hold_left_.ToHost() : std::vector<int32_t>(), *replay_, 0, *learner_);
}

void DqnAgent::LoadCheckpoint(const std::string& path) {
  const CheckpointReader in(path);
  if (in.Has("cugym.algo") && in.Text("cugym.algo") != "dqn")
    throw std::invalid_argument(path + ": a " + in.Text("cugym.algo") + " checkpoint; this run's algo is dqn");
  if (in.Text("cugym.env_id") != config_.env_id)
    throw std::invalid_argument(path + ": a checkpoint for " + in.Text("cugym.env_id") + ", not " + config_.env_id);
  const int64_t n = config_.num_envs;
  // The counters are read (and checked) before anything changes; a tensor missing further on
  // still throws, and leaves this agent part-loaded (the CLI then exits).
  const DqnCounters c = ReadDqnCounters(in);
  const bool has_replay = in.Has("cugym.replay.position");
  DropGraphs();  // before anything they captured changes
  learner_->Load(in.file(), path);
  global_step_ = c.global_step;
  vector_steps_ = c.vector_steps;
  const StepCounters counters{c.vector_steps, c.global_step};
  counters_dev_.FromHost(&counters, 1);
  replay_->set_draws(c.draws);
  next_target_step_ = c.next_target_step;
  update_debt_ = c.update_debt;
  wall_time_ = c.wall_time;
  last_eval_return_ = c.last_eval_return;
  episodes_->Load(in);
  if (config_.exploration_hold_mu > 0) {
    held_actions_.FromHost(in.Ints("explore.held", n).data(), n);
    hold_left_.FromHost(in.Ints("explore.left", n).data(), n);
  }
  if (!LoadEnvState(*env_, in, n, spec_.state_dim)) {
    // No envs' state in the checkpoint: they start new episodes from a seed of their own.
    env_->Reset(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(global_step_)));
  }
  if (!has_replay) {
    replay_->Clear();
    learning_resumes_at_ = global_step_ + std::min(config_.learning_starts, config_.buffer_size);
    return;
  }
  replay_->Load(in);
  learning_resumes_at_ = c.learning_resumes_at;
}

void DqnAgent::SaveModel(const std::string& path) const { SaveQModel(path, *learner_, config_.env_id, global_step_); }

void SaveEnvState(const VectorEnv& env, CheckpointWriter& out) {
  VectorEnvSnapshot snapshot;
  if (env.SaveSnapshot(&snapshot)) SaveEnvSnapshot(snapshot, out);
}

void SaveEnvSnapshot(const VectorEnvSnapshot& snapshot, CheckpointWriter& out) {
  out.Int("cugym.env.seed", snapshot.seed);
  out.Int("cugym.env.steps", snapshot.steps);
  out.Floats("env.states", snapshot.states);
  out.Ints("env.rng_counters", snapshot.rng_counters);
  out.Ints("env.elapsed", snapshot.elapsed);
  out.Floats("env.running_returns", snapshot.running_returns);
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
  return true;
}

bool LoadEnvState(VectorEnv& env, const CheckpointReader& in, int64_t n, int64_t state_dim) {
  VectorEnvSnapshot snapshot;
  if (!ReadEnvSnapshot(in, n, state_dim, &snapshot)) return false;
  env.LoadSnapshot(snapshot);
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
