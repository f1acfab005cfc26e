// What every agent keeps per lane besides its algorithm (agent.h: lane k is the solo run of seed
// k, K = 1 the solo run itself), written once for every agent (LaneAgent, lane_agent.h, owns one):
//   - the seeds, on the host and on the device (exploration and shuffles read them there);
//   - the lanes' episode rings side by side (CollectEpisodes appends to them), an EpisodeStats per
//     lane, and the ez-greedy holds of every lane's n envs;
//   - the eval envs of all lanes, and the reads the lanes share at one step, made by the first lane
//     to ask: the metrics rows (every ring and the learner's statistics copied once), the
//     evaluations, the envs' snapshot that every lane's checkpoint slices;
//   - a lane's parts of a checkpoint as the solo run writes them (its episodes, its envs as a batch
//     of n of its own, its holds), and the lanes' envs joined on resume.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/checkpoint.h"
#include "agents/common/episode_ops.h"
#include "agents/common/episode_stats.h"
#include "agents/common/exploration_kernels.h"
#include "agents/common/policy.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

// The K x n training envs of a lane per seed (config.num_envs each) on `stream`, lane k's n envs
// reset as the solo run's of seed k (ResetInLanes).
std::unique_ptr<VectorEnv> MakeLaneEnvs(const Registry& registry, const TrainConfig& config,
                                        const std::vector<uint64_t>& seeds, Device device, void* stream);

// The scratch of DeterministicPolicyPlay, grown to the envs it plays.
struct PolicyPlayScratch {
  Buffer<float> obs, samples, env_actions;
  Buffer<int32_t> actions;
};

class AgentLanes {
 public:
  // A lane per seed, n envs each (config.num_envs), eval envs when config.eval_episodes > 0, all on
  // `device` and its `stream` (the learner's).
  AgentLanes(const Registry& registry, const TrainConfig& config, Device device, void* stream,
             std::vector<uint64_t> seeds);
  ~AgentLanes();

  int count() const { return static_cast<int>(seeds_.size()); }
  const std::vector<uint64_t>& seeds() const { return seeds_; }
  const uint64_t* seeds_dev() const { return seeds_dev_.data(); }  // [K]
  const EpisodeRing* rings() const { return rings_.data(); }       // [K], a device array
  EpisodeStats& episodes(int lane) { return *episodes_.at(lane); }
  ExploreHold hold();  // every lane's holds, {} without ez-greedy
  // Throws std::out_of_range "AGENT::OP: lane L of K" for a lane outside.
  void Check(int lane, const char* agent_op) const;

  // Lane k's episodes that ended since its last row, at `step`: the lanes log at the same steps, and
  // the first to ask at a step copies every ring at once.
  EpisodeStats::Interval Ended(int lane, int64_t step);
  // Lane k's metrics row at `step` (MakeProgress), the learner's statistics read with the rings.
  MetricsRow Progress(int lane, int64_t step, double epsilon, double seconds, int64_t steps, const QLearner& learner,
                      const LoopState& loop);

  // How an agent plays its evaluations: EvaluateLanes on `env` (K lanes, reset with `seeds`) with
  // the lanes' networks acting deterministically, `episodes` episodes in each lane `evaluate` lists.
  using Play = std::function<std::vector<EvalResult>(VectorEnv& env, const std::vector<uint64_t>& seeds,
                                                     const std::vector<bool>& evaluate, int64_t episodes)>;
  // Lane k's `index`-th evaluation at `step`: every lane's eval envs (one episode each, reset with
  // TrainingEvalSeeds), played by the first lane to ask at a step.
  EvalResult Evaluate(int lane, int64_t index, int64_t step, const Play& play);
  // Play by replica a of the learner's online network on lane a, greedily (EvaluateReplicas).
  Play ReplicasPlay(QLearner& learner);
  // Agent::EvaluateModels: the listed lanes played on K lanes of min(num_envs, episodes) envs (made
  // at the first call or when that size changes, at most `max_envs` per lane), lane a reset with
  // seeds[a] + seed_offset; results in the order of `listed`. Throws std::invalid_argument for more
  // envs than max_envs and std::out_of_range for a lane outside.
  std::vector<EvalResult> EvaluateModels(const std::vector<int>& listed, int64_t episodes, int64_t num_envs,
                                         uint64_t seed_offset, int64_t max_envs, const Play& play);

  // Lane k's checkpoint parts at `step`: its episodes, its envs (of `env`, K lanes of n) as the
  // snapshot of a batch of n of its own, its holds.
  void Save(int lane, const VectorEnv& env, int64_t step, CheckpointWriter& out) const;
  // Lane k's episodes and holds.
  void Load(int lane, const CheckpointReader& in);
  // The lanes' envs from their checkpoints, as one snapshot in lanes (each lane seeded as its solo
  // run's envs were), into `env`; false, changing nothing, when the (one) checkpoint holds none.
  // Throws std::invalid_argument naming the file for envs at another step, and for a lane of a
  // batch without them.
  bool LoadEnvs(const std::vector<std::unique_ptr<CheckpointReader>>& in, VectorEnv& env) const;
  // Forgets the reads shared at a step (after a load, which changes what they read).
  void Forget();

  // Agent::Keep: the seeds of lanes `keep` (checked, in that order), for the new agent's lanes;
  // then, once it is made, its envs from `from_env`'s lanes `keep` (false when the env cannot save
  // its state) and each of its lanes i from lane keep[i] (episodes, holds, and with learners its
  // network replica).
  std::vector<uint64_t> SeedsOf(const std::vector<int>& keep, const char* agent_op) const;
  static bool KeepEnvs(const VectorEnv& from_env, const std::vector<int>& keep, VectorEnv& env);
  void TakeLanes(const AgentLanes& from, const std::vector<int>& keep);

 private:
  const Registry* registry_;
  std::string env_id_;
  Device device_;
  void* stream_;
  int64_t n_;
  std::vector<uint64_t> seeds_;
  Buffer<uint64_t> seeds_dev_;
  float hold_mu_;
  int32_t max_hold_;
  Buffer<int32_t> held_actions_, hold_left_;  // [K n] ez-greedy holds (hold_mu_ > 0)
  // The rings side by side: a progress read copies all of them at once.
  Buffer<float> ring_returns_;              // [K kCapacity]
  Buffer<int32_t> ring_lengths_;            // [K kCapacity]
  Buffer<unsigned long long> ring_counts_;  // [K]
  Buffer<EpisodeRing> rings_;               // [K]
  std::vector<std::unique_ptr<EpisodeStats>> episodes_;
  // Host copies of the rings and the learner's statistics, read at read_step_.
  std::vector<float> read_returns_;
  std::vector<int32_t> read_lengths_;
  std::vector<unsigned long long> read_counts_;
  std::vector<QLearner::Stats> read_stats_;
  int64_t read_step_ = -1, stats_step_ = -1;
  std::unique_ptr<VectorEnv> eval_env_;   // K lanes of eval_episodes envs, when evaluating
  std::unique_ptr<VectorEnv> model_env_;  // K lanes of EvaluateModels' envs, made at its first use
  Buffer<int32_t> eval_actions_;
  std::vector<EvalResult> evaluations_;  // every lane's, of evaluation evaluated_index_ at evaluated_step_
  int64_t evaluated_index_ = -1, evaluated_step_ = -1;
  // The envs' snapshot at saved_envs_step_, which every lane's checkpoint at that step slices.
  mutable VectorEnvSnapshot saved_envs_;
  mutable bool has_saved_envs_ = false;
  mutable int64_t saved_envs_step_ = -1;
};

// PPO's and SAC's play: every lane's actor (replica l on lane l) acting deterministically through
// ActDeterministically (the normalizer `moments`, or none, and `head`'s argmax or mean), the
// sequence GreedyPolicy runs for a model file, so a lane's evaluation and its model file's give
// the same bits; Discrete envs step with int32 actions, Box envs with float ones.
AgentLanes::Play DeterministicPolicyPlay(EpisodeOps& episode_ops, PolicyOps& ops, nn::Mlp& actor,
                                         const PolicyHead& head, const RunningMoments& moments, double clip, int lanes,
                                         PolicyPlayScratch& scratch);

}  // namespace cugym::agent
