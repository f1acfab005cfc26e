// The episodes of host-stepped envs in a checkpoint (VectorEnvSnapshot::episode_starts and
// episode_actions: how each env's episode began and its actions since, which LoadSnapshot replays
// to rebuild a Box2D world bit for bit). Two tensors beside the envs' other state (dqn_checkpoint.h):
//   env.episode_starts   I64 [num_envs]  RNG counter before the episode's reset; -1: begun by SetStates
//   env.episode_actions  F32 [total]     env after env, elapsed[i] actions of action_dim floats
// Written only for envs that have episodes (host-stepped ones); a checkpoint without them (every
// other env, or one written before) leaves the snapshot's episodes empty.
#pragma once

#include <cstdint>

#include "agents/dqn_checkpoint.h"
#include "core/vector_env.h"

namespace cugym::agent {

// Adds the two tensors when `snapshot` has episodes.
void SaveEnvEpisodes(const VectorEnvSnapshot& snapshot, CheckpointWriter& out);
// Reads them into `snapshot` when the checkpoint has them (num_envs starts; throws
// std::invalid_argument naming the file otherwise); LoadSnapshot checks the actions' count.
void ReadEnvEpisodes(const CheckpointReader& in, int64_t num_envs, VectorEnvSnapshot* snapshot);

}  // namespace cugym::agent
