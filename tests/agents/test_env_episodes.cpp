// Host-stepped envs' episodes in a checkpoint (agents/common/checkpoint.h) round trip through a file,
// and a batch's per-lane snapshots join into one (AppendEnvs) and split again (LanesOf) with them.
#include "agents/common/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "core/vector_env.h"

namespace cugym::agent {
namespace {

// Three envs, state_dim 2, action_dim 2: env 0 two steps into its episode, env 1 begun by
// SetStates (no actions kept), env 2 one step in.
VectorEnvSnapshot Sample(float base) {
  VectorEnvSnapshot s;
  s.seed = 7;
  s.states = {base, 1, 2, 3, 4, 5};
  s.rng_counters = {10, 11, 12};
  s.elapsed = {2, 5, 1};
  s.running_returns = {0.5f, 1.5f, 2.5f};
  s.episode_starts = {4, kEpisodeFromStates, 9};
  s.episode_actions = {base, 0.25f, -1, 1, 0.5f, 0.75f};  // env 0: 2 x 2 floats, env 2: 1 x 2
  return s;
}

std::string Path(const std::string& name) {
  return ::testing::TempDir() + "cugym_episodes_" + std::to_string(::getpid()) + "_" + name;
}

TEST(EnvEpisodes, RoundTripThroughACheckpointFile) {
  const VectorEnvSnapshot s = Sample(0.125f);
  CheckpointWriter out;
  SaveEnvEpisodes(s, out);
  const std::string path = Path("with.safetensors");
  WriteSafetensors(path, out.tensors(), out.metadata());
  VectorEnvSnapshot read;
  ReadEnvEpisodes(CheckpointReader(path), 3, &read);
  EXPECT_EQ(read.episode_starts, s.episode_starts);
  EXPECT_EQ(read.episode_actions, s.episode_actions);
  EXPECT_THROW(ReadEnvEpisodes(CheckpointReader(path), 4, &read), std::invalid_argument);  // another batch size
  std::remove(path.c_str());

  // An env without episodes writes nothing, and a checkpoint without them reads as none.
  CheckpointWriter plain;
  SaveEnvEpisodes(VectorEnvSnapshot{}, plain);
  EXPECT_TRUE(plain.tensors().empty());
  const float one = 1;
  const std::string other = Path("without.safetensors");
  WriteSafetensors(other, {NamedTensor::FromF32("env.states", {1}, &one)});
  ReadEnvEpisodes(CheckpointReader(other), 3, &read);
  EXPECT_TRUE(read.episode_starts.empty() && read.episode_actions.empty());
  std::remove(other.c_str());
}

TEST(EnvEpisodes, LanesJoinAndSplitWithTheirEpisodes) {
  VectorEnvSnapshot both;
  AppendEnvs(&both, Sample(0.125f));
  AppendEnvs(&both, Sample(8));
  both.lane_size = 3;
  both.env_seeds = {7, 7, 7, 8, 8, 8};
  ASSERT_EQ(both.episode_starts.size(), 6u);
  ASSERT_EQ(both.episode_actions.size(), 12u);
  const VectorEnvSnapshot second = LanesOf(both, {1}, 2);
  EXPECT_EQ(second.episode_starts, Sample(8).episode_starts);
  EXPECT_EQ(second.episode_actions, Sample(8).episode_actions);
  EXPECT_EQ(second.states, Sample(8).states);
  const VectorEnvSnapshot swapped = LanesOf(both, {1, 0}, 2);
  std::vector<float> expected = Sample(8).episode_actions;
  for (float a : Sample(0.125f).episode_actions) expected.push_back(a);
  EXPECT_EQ(swapped.episode_actions, expected);
  // A part without episodes (an env restored from flat states) drops them for the whole batch.
  VectorEnvSnapshot mixed;
  AppendEnvs(&mixed, Sample(1));
  VectorEnvSnapshot flat = Sample(2);
  flat.episode_starts.clear();
  flat.episode_actions.clear();
  AppendEnvs(&mixed, flat);
  AppendEnvs(&mixed, Sample(3));
  EXPECT_TRUE(mixed.episode_starts.empty() && mixed.episode_actions.empty());
  EXPECT_EQ(mixed.states.size(), 18u);
  // Actions that do not fit the episodes' steps are refused.
  both.episode_actions.pop_back();
  EXPECT_THROW(LanesOf(both, {0}, 2), std::invalid_argument);
}

}  // namespace
}  // namespace cugym::agent
