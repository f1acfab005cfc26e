// Every agent's checkpoint files (checkpoint.h): the reader and writer, the header and counters,
// the envs' part, and the Q model file (the online network alone, for eval, watch and record).
#include "agents/common/checkpoint.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "agents/common/q_learner.h"
#include "agents/common/train_config.h"
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

void WriteCheckpointCounters(const std::string& algo, const TrainConfig& config, int64_t global_step,
                             int64_t vector_steps, const LoopState& loop, CheckpointWriter& out) {
  out.Text("cugym.algo", algo);
  out.Text("cugym.env_id", config.env_id);
  out.Text("cugym.version", VersionString());
  out.Text("cugym.config", config.ToToml());
  out.Int("cugym.global_step", global_step);
  out.Int("cugym.vector_steps", vector_steps);
  out.Real("cugym.wall_time", loop.wall_time);
  out.Real("cugym.last_eval_return", loop.last_eval_return);
}

std::vector<LoopState> ReadCheckpointCounters(const std::vector<std::unique_ptr<CheckpointReader>>& in,
                                              const std::string& algo, const std::string& env_id, int lanes,
                                              int64_t* global_step, int64_t* vector_steps) {
  if (static_cast<int>(in.size()) != lanes)
    throw std::invalid_argument("LoadCheckpoints: " + std::to_string(in.size()) + " checkpoints for " +
                                std::to_string(lanes) + " lanes");
  const CheckpointReader& first = *in.front();
  std::vector<LoopState> loops;
  for (const auto& r : in) {
    CheckCheckpointHeader(*r, algo, env_id);
    if (r->Int("cugym.global_step") != first.Int("cugym.global_step") ||
        r->Int("cugym.vector_steps") != first.Int("cugym.vector_steps"))
      throw std::invalid_argument(r->path() + ": not of the same step as " + first.path() + " (step " +
                                  std::to_string(r->Int("cugym.global_step")) + " against " +
                                  std::to_string(first.Int("cugym.global_step")) +
                                  "): a batch's agents go on together");
    const double last_eval =
        r->Has("cugym.last_eval_return") ? r->Real("cugym.last_eval_return") : std::numeric_limits<double>::quiet_NaN();
    loops.push_back(LoopState{r->Real("cugym.wall_time"), last_eval});
  }
  *global_step = first.Int("cugym.global_step");
  *vector_steps = first.Int("cugym.vector_steps");
  return loops;
}

void CheckSameCounter(const std::vector<std::unique_ptr<CheckpointReader>>& in, const std::string& key) {
  const CheckpointReader& first = *in.front();
  for (const auto& r : in)
    if (r->Text(key) != first.Text(key))
      throw std::invalid_argument(r->path() + ": not of the same step as " + first.path() + " (" + key + " " +
                                  r->Text(key) + " against " + first.Text(key) + "): a batch's agents go on together");
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

void LoadQModel(const std::string& path, QLearner& solo, int lane, QLearner& learner) {
  nn::LoadMlp(path, solo.online());
  if (&solo != &learner) learner.online().CopyReplicaFrom(lane, solo.online());
}

}  // namespace cugym::agent
