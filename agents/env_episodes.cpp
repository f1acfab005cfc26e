// Host-stepped envs' episodes in a checkpoint (see env_episodes.h).
#include "agents/env_episodes.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace cugym::agent {

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

}  // namespace cugym::agent
