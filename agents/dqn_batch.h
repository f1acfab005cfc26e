// K DQN agents of one config, differing only in their seeds, trained in lockstep with their K
// Q-networks as one replicated learner (QLearnerOptions::replicas): the core of issue 23's batched
// agents. Every agent keeps what DqnAgent keeps (its envs, replay memory, exploration holds and
// episode statistics, seeded from its own seed); the network work of all K is one call per op,
// and the schedule (update debt, target updates, step counters) is one for all, as lockstep
// makes it. Agent k's network, model file, metrics row and evaluations after T iterations are,
// on the CPU, bit for bit those of a DqnAgent with seed seeds[k] after T iterations; its
// checkpoint is one that DqnAgent resumes from exactly, and a batch loaded from its agents'
// checkpoints goes on exactly (tests/agents/test_dqn_batch.cpp).
//
// The K agents' envs are lanes of one VectorEnv (VectorEnv::ResetLanes) and their replay memories
// lanes of one (ReplayOptions::lanes): every op of an iteration is one launch for all K, whatever K
// is, and on CUDA the iteration is one CUDA graph, as DqnAgent's is. RunBatchTraining
// (train_run.h) gives each agent its run folder and early stop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/agent_ops.h"
#include "agents/cuda_graph.h"
#include "agents/dqn_config.h"
#include "agents/episode_stats.h"
#include "agents/evaluation.h"
#include "agents/q_learner.h"
#include "agents/replay_memory.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class DqnBatch {
 public:
  // Throws std::invalid_argument for no seeds, a seed listed twice, what Unbatchable names, what
  // DqnAgent refuses, and K replay memories that would not fit in the device's free memory (before
  // allocating anything; the message names the agents, envs and bytes).
  DqnBatch(const Registry& registry, const DqnConfig& config, const std::vector<uint64_t>& seeds, Device device);
  // Why `agents` agents of `config` cannot train as one batch, "" when they can: PQN, an env that
  // cannot step in lanes, and for more than one agent what a replicated learner refuses (gradient
  // clipping, a convolution, LayerNorm).
  static std::string Unbatchable(const Registry& registry, const DqnConfig& config, int agents);
  ~DqnBatch();

  // The agents `keep` (indices into seeds(), in that order) as a batch of their own that goes on
  // exactly as they would have in this one: their networks and Adam states, replay lanes, envs,
  // exploration holds and episodes, copied on the device, and the shared schedule. RunBatchTraining
  // shrinks a batch to the agents still training, so that those that stopped cost nothing.
  // Returns null when the envs cannot save their state (VectorEnv::SaveSnapshot); throws
  // std::out_of_range for an index outside and what the constructor throws (an index listed
  // twice, replay memories that do not fit beside this batch's).
  std::unique_ptr<DqnBatch> Keep(const std::vector<int>& keep) const;

  int agents() const { return static_cast<int>(seeds_.size()); }
  const std::vector<uint64_t>& seeds() const { return seeds_; }
  const int64_t& global_step() const { return global_step_; }  // env steps of each agent

  // One vector step of every agent: act, step, store, then the gradient steps and target updates
  // that fall on it (DqnAgent's iteration).
  void Iterate();

  // Agent k's online network into `solo`, a network of one with the learner's layer sizes.
  void CopyNetworkTo(int agent, nn::Mlp& solo) const;
  // What DqnAgent's Train loop asks of its agent, for agent k: a metrics row over the last
  // `seconds` and `steps` (its episodes since the last row, its learner's last update), its
  // `index`-th greedy evaluation (config.eval_episodes episodes on envs of its own; throws
  // std::logic_error when eval_episodes is 0; the first agent to ask at a step evaluates every
  // agent at once, the others get their results), and its model file. Each is the result DqnAgent
  // with agent k's seed gives at the same step (the same bits on the CPU).
  DqnProgress Progress(int agent, double wall_time, double seconds, int64_t steps, double last_eval_return);
  EvalResult Evaluate(int agent, int64_t index);
  void SaveModel(int agent, const std::string& path) const;
  // Agent k's online network from a model file of its shape (SaveModel's): for EvaluateModels of
  // a model saved earlier, once training is over (its optimizer state stays as it was).
  void LoadModel(int agent, const std::string& path);
  // EvaluateModel's evaluation of the listed agents' model files (their networks now): `episodes`
  // greedy episodes over `num_envs` envs (fewer when episodes are fewer) reset with each agent's
  // seed + seed_offset, every listed agent at once. Agent k's is EvaluateModel's for its model
  // file (the same bits on the CPU). Results in the order of `agents`.
  std::vector<EvalResult> EvaluateModels(const std::vector<int>& agents, int64_t episodes, int64_t num_envs,
                                         uint64_t seed_offset);
  // Agent k's checkpoint in DqnAgent's format (its config with its own seed, its envs, replay
  // memory, holds, episodes, networks and Adam state, the shared counters), with the training
  // loop's `wall_time` and `last_eval_return`: a DqnAgent that loads it goes on exactly as agent k
  // would have alone.
  void SaveCheckpoint(int agent, const std::string& path, double wall_time, double last_eval_return) const;
  // The training loop's own values a checkpoint keeps for its agent.
  struct LoopState {
    double wall_time = 0, last_eval_return = 0;
  };
  // Every agent from its checkpoint (paths[k] for seeds[k], as SaveCheckpoint or a DqnAgent of
  // that seed wrote them), then the batch goes on as each agent would have alone (without the
  // replay memories, save_replay off, as a DqnAgent resumed from that file: refilling them first).
  // Throws std::invalid_argument naming the file for another algorithm, env or network, a damaged
  // file or one without the envs' state, some with the replay memory and some without, and when
  // the checkpoints are not of one step (their counters differ). Returns each agent's loop values.
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::string>& paths);
  const QLearner& learner() const { return *learner_; }
  // CUDA with cuda_graph, an integral replay_ratio * num_envs and envs stepped on the device: the
  // iterations once learning runs are replayed from one captured graph, DqnAgent's (false before
  // the second such iteration, on the CPU, and after a failed capture).
  bool replays_iteration_graph() const { return iteration_graph_.replaying(); }
  // Tests: takes the graph path on the CPU as well, where nn's Graph calls the work again.
  void set_iteration_graph_on_cpu(bool on) { iteration_graph_on_cpu_ = on; }
  EpisodeStats& episodes(int agent) { return *episodes_.at(agent); }

 private:
  // The public constructor's batch on `backend` (Keep's: the learners on one back end exchange
  // replicas).
  DqnBatch(const Registry& registry, const DqnConfig& config, const std::vector<uint64_t>& seeds,
           std::shared_ptr<nn::Backend> backend);
  void Collect(bool greedy);
  void Update();
  // The whole-iteration graph's work: Collect(true), graph_updates_ gradient steps and
  // graph_targets_ target updates.
  void IterationKernels();
  ExploreHold explore_hold();  // every agent's holds ({} without ez-greedy)
  EpsilonSchedule epsilon_schedule() const;
  // A learner of one holding agent k's networks and Adam state (model files, checkpoints).
  QLearner& Solo(int agent) const;

  const Registry* registry_;
  DqnConfig config_;
  std::vector<uint64_t> seeds_;
  Device device_;
  int64_t n_;  // envs per agent
  int obs_dim_, num_actions_;
  std::unique_ptr<QLearner> learner_;
  std::unique_ptr<AgentOps> ops_;
  std::unique_ptr<VectorEnv> env_;        // K x n envs in lanes (VectorEnv::ResetLanes), agent a's the a-th
  Buffer<uint64_t> seeds_dev_;            // [K] the agents' seeds (exploration)
  Buffer<EpisodeRing> rings_;             // [K] the agents' episode rings
  std::unique_ptr<ReplayMemory> replay_;  // a lane per agent
  std::vector<std::unique_ptr<EpisodeStats>> episodes_;  // views of the rings below
  Buffer<float> ring_returns_;                           // [K kCapacity] every agent's episode ring
  Buffer<int32_t> ring_lengths_;                         // [K kCapacity]
  Buffer<unsigned long long> ring_counts_;               // [K]
  // Host copies of the rings and the learner's statistics, read at read_step_ for every agent.
  std::vector<float> read_returns_;
  std::vector<int32_t> read_lengths_;
  std::vector<unsigned long long> read_counts_;
  std::vector<QLearner::Stats> read_stats_;
  int64_t read_step_ = -1;
  // The envs' snapshot at saved_envs_step_, which every agent's checkpoint at that step slices.
  mutable VectorEnvSnapshot saved_envs_;
  mutable bool has_saved_envs_ = false;
  mutable int64_t saved_envs_step_ = -1;
  QLearnerOptions solo_options_;            // a learner of one, evaluation rows included
  mutable std::unique_ptr<QLearner> solo_;  // made at the first use
  std::unique_ptr<VectorEnv> eval_env_;     // K lanes of eval_episodes envs, when evaluating
  std::unique_ptr<VectorEnv> model_env_;    // K lanes of EvaluateModels' envs, made at its first use
  Buffer<int32_t> eval_actions_;
  // The latest evaluation of every agent, of evaluation index evaluated_index_ at evaluated_step_.
  std::vector<EvalResult> evaluations_;
  int64_t evaluated_index_ = -1, evaluated_step_ = -1;
  Buffer<float> obs_;                         // [K n, obs_dim] every agent's observations before the step
  Buffer<int32_t> actions_;                   // [K n]
  Buffer<int32_t> held_actions_, hold_left_;  // [K n] ez-greedy holds
  Buffer<StepCounters> counters_dev_;         // [1] one for all: every agent steps n envs per iteration
  // The learner's inputs and outputs on every agent's minibatch [K b] (the replay memory's).
  Buffer<int32_t> next_actions_;
  Buffer<float> next_q_, targets_;

  // The whole iteration as one CUDA graph (DqnAgent's): its gradient steps (-1: the config has no
  // such graph) and target updates (0: they do not fall on every iteration, and run outside).
  CudaGraph iteration_graph_;
  int64_t graph_updates_ = -1;
  int64_t graph_targets_ = 0;
  bool iteration_graph_on_cpu_ = false;

  // The host's schedule, DqnAgent's for one agent (all K share it).
  int64_t global_step_ = 0;
  double update_debt_ = 0;
  int64_t next_target_step_ = 0;
  int64_t learning_resumes_at_ = 0;
};

}  // namespace cugym::agent
