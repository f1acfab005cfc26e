// DQN (Mnih et al. 2015) on batched envs, everything on one device, for K >= 1 lanes: act
// epsilon-greedily for every lane's N envs from its Q network, step, write the transitions into
// each lane's ring-buffer replay memory, sample minibatches with the counter RNG, regress onto
// r + gamma * (1 - terminated) * max_a' Q_target (Double DQN on request), update with Adam, copy
// or Polyak-average the target. The K lanes' networks are one replicated learner
// (QLearnerOptions::replicas), their envs lanes of one VectorEnv (VectorEnv::ResetLanes) and their
// replay memories lanes of one (ReplayOptions::lanes): every op of an iteration is one launch for
// all K, and on CUDA the iteration is one CUDA graph. Lane k's network, model file, metrics row,
// evaluations and checkpoint after T iterations are, on the CPU, bit for bit those of the solo run
// (K = 1) of seed k; the schedule (update debt, target updates, step counters) is one for all, as
// lockstep makes it. The replay memory, the episode statistics, the CUDA graphs and the checkpoint
// format are parts of their own (replay_memory.h, episode_stats.h, cuda_graph.h, dqn_checkpoint.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/agent_lanes.h"
#include "agents/agent_ops.h"
#include "agents/cuda_graph.h"
#include "agents/episode_stats.h"
#include "agents/evaluation.h"
#include "agents/q_learner.h"
#include "agents/replay_memory.h"
#include "agents/train_config.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class DqnAgent final : public Agent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // env with a Box action space (DQN needs discrete actions), an unknown env, a bad config, a seed
  // listed twice, what Unbatchable names, and K replay memories that would not fit in the device's
  // free memory (before allocating anything; the message names the lanes, envs and bytes).
  DqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~DqnAgent() override;

  const TrainConfig& config() const override { return config_; }
  const std::vector<uint64_t>& seeds() const override { return lanes_->seeds(); }
  int64_t global_step() const override { return global_step_; }
  double Epsilon(int64_t step) const;

  void Iterate() override;
  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  EvalResult Evaluate(int lane, int64_t index) override;
  std::vector<EvalResult> EvaluateModels(const std::vector<int>& lanes, int64_t episodes, int64_t num_envs,
                                         uint64_t seed_offset) override;
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;

  // Lane k's checkpoint (dqn_checkpoint.h): both networks and Adam, its envs' full state, its
  // exploration holds, episode ring and return(100) window, every counter (env and vector steps,
  // replay draws, target schedule, update debt), the loop's values, its config with its own seed,
  // and its replay memory when config.save_replay.
  void SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const override;
  // Without the replay memories in them (save_replay = false), learning waits until the buffers
  // have been refilled with min(learning_starts, buffer_size) new transitions; one lane from a
  // checkpoint without the envs' state (written before cugym kept it, or by an env that cannot save
  // it) restarts their episodes. Either way the run is then no longer the uninterrupted one. CUDA
  // graphs captured before are dropped: the restored agent captures its own.
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) override;
  using Agent::LoadCheckpoints;
  std::unique_ptr<Agent> Keep(const std::vector<int>& keep) const override;

  // CUDA with cuda_graph, an integral replay_ratio * num_envs and envs stepped on the device:
  // whether whole iterations (act, env step, store, the gradient steps, the target updates that
  // fall on every vector step) are replayed from one captured graph (false before the second
  // learning iteration, and after a failed capture).
  bool replays_iteration_graph() const override { return iteration_graph_.replaying(); }
  // CUDA with cuda_graph where the whole iteration cannot be one graph (a fractional number of
  // gradient steps per vector step, or an env stepped on the host): whether the gradient steps are
  // replayed from a captured graph.
  bool replays_update_graph() const { return update_graph_.replaying(); }
  void set_iteration_graph_on_cpu(bool on) override { iteration_graph_on_cpu_ = on; }
  const QLearner& learner() const { return *learner_; }
  EpisodeStats& episodes(int lane) { return lanes_->episodes(lane); }

 private:
  // The public constructor's agent on `backend` (Keep's: learners on one back end exchange replicas).
  DqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
           std::shared_ptr<nn::Backend> backend);
  void AllocateBuffers();
  // What one iteration queues after its vector step, decided on the host (advances the update
  // debt and the target schedule).
  struct IterationPlan {
    bool greedy = true;   // the greedy forward runs (it is skipped while epsilon is 1)
    int64_t updates = 0;  // gradient steps
    int64_t targets = 0;  // target updates
  };
  IterationPlan PlanIteration();
  // Whether the whole-iteration graph holds exactly this plan's work.
  bool IterationGraphFits(const IterationPlan& plan) const;
  // The whole-iteration graph's work: Collect(true), graph_updates_ gradient steps and
  // graph_targets_ target updates.
  void IterationKernels();
  void Collect(bool greedy);
  void Update();
  void UpdateKernels();
  void UpdateTarget() { learner_->UpdateTarget(static_cast<float>(config_.tau)); }
  EpsilonSchedule epsilon_schedule() const;

  const Registry* registry_;
  TrainConfig config_;
  Device device_;
  int64_t n_;  // envs per lane
  int obs_dim_, num_actions_;
  std::unique_ptr<QLearner> learner_;
  std::unique_ptr<AgentOps> ops_;
  std::unique_ptr<VectorEnv> env_;        // K x n envs in lanes, lane k's the k-th n
  std::unique_ptr<ReplayMemory> replay_;  // a lane per lane
  std::unique_ptr<AgentLanes> lanes_;     // seeds, episodes, holds, evaluations (agent_lanes.h)
  Buffer<float> obs_;                     // [K n, obs_dim] every lane's observations before the step
  Buffer<int32_t> actions_;               // [K n]
  Buffer<StepCounters> counters_dev_;     // [1] one for all: every lane steps n envs per iteration
  // The learner's inputs and outputs on every lane's minibatch [K b] (the replay memory's).
  Buffer<int32_t> next_actions_;
  Buffer<float> next_q_, targets_;

  // CUDA graphs (cuda_graph.h): the whole iteration where every learning iteration queues the same
  // work (graph_updates_ >= 0), else the gradient step alone; never both. graph_targets_: target
  // updates in the graph (0: they do not fall on every iteration, and run outside).
  CudaGraph iteration_graph_;
  CudaGraph update_graph_;
  int64_t graph_updates_ = -1;
  int64_t graph_targets_ = 0;
  bool iteration_graph_on_cpu_ = false;

  // The host's schedule (all K share it).
  int64_t global_step_ = 0;
  double update_debt_ = 0;
  int64_t next_target_step_ = 0;
  int64_t learning_resumes_at_ = 0;
};

}  // namespace cugym::agent
