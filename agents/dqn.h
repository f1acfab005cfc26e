// DQN (Mnih et al. 2015) on batched envs, everything on one device: act epsilon-greedily for all
// N envs from the Q network, step, write the transitions into a ring-buffer replay memory, sample
// minibatches with the counter RNG, regress onto r + gamma * (1 - terminated) * max_a' Q_target
// (Double DQN on request), update with Adam, copy or Polyak-average the target. The host reads
// only scalars for the progress line and metrics, every log_interval env steps. DqnAgent owns the
// loop; the replay memory, the episode statistics, the CUDA graphs and the checkpoint format are
// parts of their own (replay_memory.h, episode_stats.h, cuda_graph.h, dqn_checkpoint.h).
#pragma once

#include <cstdint>
#include <functional>
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

class DqnAgent final : public Agent {
 public:
  // Throws std::invalid_argument for an env with a Box action space (DQN needs discrete
  // actions), an unknown env or a bad config.
  DqnAgent(const Registry& registry, const DqnConfig& config, Device device);
  ~DqnAgent() override;

  const DqnConfig& config() const override { return config_; }
  int64_t global_step() const override { return global_step_; }
  double Epsilon(int64_t step) const;
  // CUDA with cuda_graph where the whole iteration cannot be one graph (a fractional number of
  // gradient steps per vector step, or an env stepped on the host): whether the gradient steps
  // are replayed from a captured graph (false before the second update, on the CPU, and after a
  // failed capture).
  bool replays_update_graph() const { return update_graph_.replaying(); }
  // CUDA with cuda_graph, an integral replay_ratio * num_envs and an env stepped on the device:
  // whether whole iterations (act, env step, store, the gradient steps, the target updates
  // that fall on every vector step) are replayed from one captured graph (false before the
  // second learning iteration, and after a failed capture).
  bool replays_iteration_graph() const { return iteration_graph_.replaying(); }
  // Tests: takes the whole-iteration graph path on the CPU as well, where nn's Graph calls the
  // recorded work again, so its scheduling is checked against the eager loop without a GPU.
  void set_iteration_graph_on_cpu(bool on) { iteration_graph_on_cpu_ = on; }

  // Agent::Train: one iteration per vector step.
  void Train(const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
             const std::function<void()>& on_checkpoint,
             const std::function<bool(const DqnEvaluation&)>& on_eval = {}) override;
  EvalResult Evaluate(int64_t k) override;

  // Everything a run needs to go on as if it had never stopped, in one safetensors file: both
  // networks and Adam, the envs' full state, the exploration holds, the episode ring and the
  // return(100) window, every counter (env and vector steps, replay draws, target schedule,
  // update debt, wall time), the config, and the replay memory when config.save_replay. The
  // format, tensor by tensor: agents/dqn_checkpoint.h.
  void SaveCheckpoint(const std::string& path) const override;
  // Restores a checkpoint of the same env and network. Without a replay memory in it (save_replay
  // = false), learning waits until the buffer has been refilled with min(learning_starts,
  // buffer_size) new transitions; a checkpoint without the envs' state (written before cugym
  // kept it) restarts their episodes. Either way the run is then no longer the uninterrupted one.
  // CUDA graphs captured before are dropped (DropGraphs): the restored run captures its own, and
  // an agent that loads a checkpoint trains on as a new agent that loads it would.
  void LoadCheckpoint(const std::string& path) override;
  void SaveModel(const std::string& path) const override;

 private:
  // What one iteration queues after its vector step, decided on the host from its mirrors of
  // the counters (PlanIteration advances the update debt and the target schedule).
  struct IterationPlan {
    bool greedy = true;   // the greedy forward runs (it is skipped while epsilon is 1)
    int64_t updates = 0;  // gradient steps
    int64_t targets = 0;  // target updates
  };
  IterationPlan PlanIteration();
  void RunIteration(IterationPlan plan);
  // Whether the whole-iteration graph holds exactly this plan's work (it always runs the greedy
  // forward, whose actions epsilon 1 overwrites anyway).
  bool IterationGraphFits(const IterationPlan& plan) const;
  // The whole-iteration graph's work: CollectKernels(true), graph_updates_ gradient steps and
  // graph_targets_ target updates.
  void IterationKernels();
  // Drops the captured graphs and their warm-ups (CudaGraph::Drop), so the next iterations warm
  // up and capture again. A graph replays the pointers and host values of its capture (the env's
  // seed, its per-env seed array or none, every argument read on the host), which LoadCheckpoint
  // replaces. A failed capture stays failed: everything then runs eagerly for the rest of the
  // process.
  void DropGraphs();
  // Act, explore, copy the observations, step the envs, store the transitions and finished
  // episodes, advance the device's counters: all on the back end's stream, no host values that
  // change between iterations.
  void CollectKernels(bool greedy);
  void Update();
  void UpdateKernels();  // the gradient step's work, all on the back end's stream
  void UpdateTarget() { learner_->UpdateTarget(static_cast<float>(config_.tau)); }
  ExploreHold explore_hold();
  EpsilonSchedule epsilon_schedule() const;

  DqnConfig config_;
  Device device_;
  EnvSpec spec_;
  std::unique_ptr<VectorEnv> env_;
  std::unique_ptr<VectorEnv> eval_env_;  // eval_episodes envs, when evaluating
  Buffer<int32_t> eval_actions_;
  std::unique_ptr<QLearner> learner_;
  std::unique_ptr<AgentOps> ops_;
  int obs_dim_;
  int num_actions_;

  std::unique_ptr<ReplayMemory> replay_;
  Buffer<int32_t> next_actions_;              // [batch_size] Double DQN: the online argmax at next_obs
  Buffer<float> next_q_, targets_;            // [batch_size] the target network's Q at next_obs, the TD targets
  Buffer<float> prev_obs_;                    // [n, obs_dim] the observations the actions were taken at
  Buffer<int32_t> actions_;                   // [n]
  Buffer<int32_t> held_actions_, hold_left_;  // [n] ez-greedy holds (exploration_hold_mu > 0)
  std::unique_ptr<EpisodeStats> episodes_;
  Buffer<StepCounters> counters_dev_;  // [1] vector and env steps, kept by AdvanceSteps

  // CUDA graphs (cuda_graph): the whole iteration where every learning iteration queues the same
  // work (graph_updates_ >= 0), else the gradient step alone; never both.
  CudaGraph iteration_graph_;
  CudaGraph update_graph_;
  // The whole iteration's gradient steps (-1: the config has no such graph) and target updates
  // (n / target_update_interval where that divides n, else 0: they are launched after the replay
  // on the iterations where they fall).
  int64_t graph_updates_ = -1;
  int64_t graph_targets_ = 0;
  bool iteration_graph_on_cpu_ = false;

  // The host's counters (the device keeps its own copies of the step counters).
  int64_t global_step_ = 0;
  int64_t vector_steps_ = 0;
  double update_debt_ = 0;        // gradient steps owed (replay_ratio * env steps)
  int64_t next_target_step_ = 0;  // env step of the next target update
  int64_t learning_resumes_at_ = 0;
  double wall_time_ = 0;
  double last_eval_return_;  // of the latest evaluation, NaN before any
};

}  // namespace cugym::agent
