// Checkpoints, for every agent: one safetensors file per lane with everything a run needs to go
// on as if it had never stopped (LaneAgent::SaveCheckpoint writes it, LoadCheckpoints reads it),
// the reader and writer its parts use, the one header and counters scheme, the envs' snapshot,
// and the Q model file. The parts, by owner:
//   the loop (LaneAgent)    cugym.algo (absent: "dqn"), .env_id, .version, .config (with the lane's
//                           seed), .global_step, .vector_steps, .wall_time, .last_eval_return;
//   the off-policy family   cugym.draws, .update_debt, .learning_resumes_at, and the replay memory;
//   each algorithm          its own counters (DQN cugym.next_target_step; SAC cugym.updates,
//                           .actor_updates, .with_replay, sac.noise_state) and its learner's
//                           tensors: QLearner::Save (the online and target networks, Adam's
//                           moments and step, cugym.kind "q_learner"), PpoLearner's, SacLearner's;
//   EpisodeStats            episodes.returns, episodes.lengths, episodes.last_100, cugym.episodes,
//                           cugym.episodes_read;
//   the envs (VectorEnv)    env.states, env.rng_counters, env.elapsed, env.running_returns,
//                           cugym.env.seed, cugym.env.steps (when the env can save its state),
//                           env.episode_starts, env.episode_actions (host-stepped envs: Box2D);
//   the exploration holds   explore.held, explore.left (exploration_hold_mu > 0);
//   ReplayMemory            replay.obs, .next_obs, .actions, .rewards, .terminals, .ends, .priorities
//                           (prioritized replay: the sum tree's leaves), cugym.replay.position,
//                           cugym.replay.size, cugym.replay.max_priority (when save_replay).
// DQN files from before exact resumption (no cugym.update_debt) are refused. Otherwise: without
// env.states (an env that cannot save its state) the envs start new episodes; without
// cugym.replay.position (save_replay off) the replay memory is refilled first; replay.dones and
// cugym.kind "q_trainer" (the names before) are read as replay.terminals and "q_learner".
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "core/vector_env.h"

namespace cugym::agent {

class QLearner;
struct TrainConfig;

// What the training loop keeps of a lane besides the agent's state: its checkpoints hold it.
struct LoopState {
  double wall_time = 0;                                                // seconds of training so far
  double last_eval_return = std::numeric_limits<double>::quiet_NaN();  // NaN before any evaluation
};

// Collects a checkpoint's metadata and tensors from their owners; QLearner::Save writes them.
// Integers are written as tensors of int64, as every checkpoint before.
class CheckpointWriter {
 public:
  void Text(const std::string& key, std::string value) { metadata_[key] = std::move(value); }
  template <class T>
  void Int(const std::string& key, T value) {
    metadata_[key] = std::to_string(value);
  }
  void Real(const std::string& key, double value);  // MetadataNumber: reads back as the same double
  // A tensor of float32, of shape [values.size()] unless `shape` is given.
  void Floats(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape = {});
  template <class T>
  void Ints(const std::string& name, const std::vector<T>& values) {
    const std::vector<int64_t> wide(values.begin(), values.end());
    tensors_.push_back(NamedTensor::FromI64(name, {static_cast<int64_t>(wide.size())}, wide.data()));
  }

  const SafetensorsMetadata& metadata() const { return metadata_; }
  SafetensorsMetadata& metadata() { return metadata_; }
  std::vector<NamedTensor>& tensors() { return tensors_; }

 private:
  SafetensorsMetadata metadata_;
  std::vector<NamedTensor> tensors_;
};

// A checkpoint file read whole, with checked access: a missing key or tensor, or one of another
// size, throws std::invalid_argument naming the file and what is wrong.
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& path);

  const std::string& path() const { return path_; }
  const SafetensorsFile& file() const { return file_; }
  bool Has(const std::string& key) const { return file_.metadata.count(key) > 0; }
  bool HasTensor(const std::string& name) const { return file_.Find(name) != nullptr; }

  std::string Text(const std::string& key) const;
  int64_t Int(const std::string& key) const;
  double Real(const std::string& key) const;  // ParseMetadataNumber
  // Tensor `name` of exactly `size` elements, converted.
  std::vector<float> Floats(const std::string& name, int64_t size) const;
  std::vector<int64_t> Int64s(const std::string& name, int64_t size) const;
  std::vector<int32_t> Ints(const std::string& name, int64_t size) const;

 private:
  const NamedTensor& Tensor(const std::string& name, int64_t size) const;

  std::string path_;
  SafetensorsFile file_;
};

// The one header check of a checkpoint, before anything is restored: its algorithm (files without
// cugym.algo are DQN's) and env are the run's; std::invalid_argument naming the file otherwise.
void CheckCheckpointHeader(const CheckpointReader& in, const std::string& algo, const std::string& env_id);

// The envs' part of a checkpoint, shared by the agents: env.states, env.rng_counters, env.elapsed,
// env.running_returns, cugym.env.seed, cugym.env.steps, when the env can save its state.
void SaveEnvSnapshot(const VectorEnvSnapshot& snapshot, CheckpointWriter& out);
// The episodes of host-stepped envs (VectorEnvSnapshot::episode_starts and episode_actions: how
// each env's episode began and its actions since, which LoadSnapshot replays to rebuild a Box2D
// world bit for bit), part of the envs' state:
//   env.episode_starts   I64 [num_envs]  RNG counter before the episode's reset; -1: begun by SetStates
//   env.episode_actions  F32 [total]     env after env, elapsed[i] actions of action_dim floats
// Written only for envs that have episodes; a checkpoint without them (every other env, or one
// written before) leaves the snapshot's episodes empty. ReadEnvEpisodes throws
// std::invalid_argument naming the file for a count other than num_envs.
void SaveEnvEpisodes(const VectorEnvSnapshot& snapshot, CheckpointWriter& out);
void ReadEnvEpisodes(const CheckpointReader& in, int64_t num_envs, VectorEnvSnapshot* snapshot);
// What SaveEnvSnapshot wrote, as a snapshot of n envs (of `state_dim` floats each); false when the
// checkpoint holds none.
bool ReadEnvSnapshot(const CheckpointReader& in, int64_t n, int64_t state_dim, VectorEnvSnapshot* snapshot);

// A model file (nn::SaveMlp) of the learner's online network with the env, the training step and
// the head in its metadata: what eval, watch and record read, whichever agent trained it.
void SaveQModel(const std::string& path, const QLearner& learner, const std::string& env_id, int64_t global_step);
// Such a file into replica `lane` of `learner`, through `solo`, the lane's learner of one (the
// learner itself when it has one replica); throws std::invalid_argument for another network.
void LoadQModel(const std::string& path, QLearner& solo, int lane, QLearner& learner);

// The one header and counters scheme of every agent's checkpoint: cugym.algo, .env_id, .version,
// .config (`config` with the lane's seed), .global_step, .vector_steps, .wall_time,
// .last_eval_return.
void WriteCheckpointCounters(const std::string& algo, const TrainConfig& config, int64_t global_step,
                             int64_t vector_steps, const LoopState& loop, CheckpointWriter& out);
// The lanes' checkpoints (one per lane), checked before anything is restored: each of `algo` and
// the env (CheckCheckpointHeader), all of the same step; throws std::invalid_argument naming the
// file otherwise. Returns each lane's loop values (last_eval_return NaN where a file has none), and
// the counters into *global_step and *vector_steps.
std::vector<LoopState> ReadCheckpointCounters(const std::vector<std::unique_ptr<CheckpointReader>>& in,
                                              const std::string& algo, const std::string& env_id, int lanes,
                                              int64_t* global_step, int64_t* vector_steps);
// Whether every lane's file agrees with the first on `key` (a counter a batch shares); throws
// std::invalid_argument naming the file that does not.
void CheckSameCounter(const std::vector<std::unique_ptr<CheckpointReader>>& in, const std::string& key);

}  // namespace cugym::agent
