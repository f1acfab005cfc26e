// DQN (Mnih et al. 2015) on batched envs, everything on one device: act epsilon-greedily for all
// N envs from the Q network, step, write the transitions into a ring-buffer replay memory, sample
// minibatches with the counter RNG, regress onto r + gamma * (1 - terminated) * max_a' Q_target
// (Double DQN on request), update with Adam, copy or Polyak-average the target. The host reads
// only scalars for the progress line and metrics, every log_interval env steps.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent_ops.h"
#include "agents/dqn_config.h"
#include "agents/evaluation.h"
#include "agents/q_learner.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym {

// One metrics.csv row (CleanRL's names): means over the episodes that ended since the last row.
struct DqnProgress {
  int64_t global_step = 0;
  double wall_time = 0;        // seconds of training in this process
  double episodic_return = 0;  // NaN when no episode ended in the interval
  double episodic_length = 0;
  double td_loss = 0;   // of the last gradient step (NaN before learning starts)
  double q_values = 0;  // mean Q(s, a) of the last minibatch
  double epsilon = 0;
  double sps = 0;              // env steps per second over the interval
  double mean_return_100 = 0;  // over the last 100 finished episodes (NaN before any)
  int64_t episodes = 0;        // finished so far
  double eval_return = 0;      // mean return of the latest evaluation (NaN before any)
};

// One greedy evaluation during training: eval_episodes episodes on envs of their own (own seeds,
// no exploration), one episode each, with the online network.
struct DqnEvaluation {
  int64_t global_step = 0;
  double wall_time = 0;     // seconds of training so far (evaluations not counted)
  double eval_seconds = 0;  // what this evaluation took
  EvalResult result;
};

class DqnAgent {
 public:
  // Throws std::invalid_argument for an env with a Box action space (DQN needs discrete
  // actions), an unknown env or a bad config.
  DqnAgent(const Registry& registry, const DqnConfig& config, Device device);
  ~DqnAgent();

  const DqnConfig& config() const { return config_; }
  int64_t global_step() const { return global_step_; }
  double Epsilon(int64_t step) const;
  // CUDA with cuda_graph where the whole iteration cannot be one graph (a fractional number of
  // gradient steps per vector step, or an env stepped on the host): whether the gradient steps
  // are replayed from a captured graph (false before the second update, on the CPU, and after a
  // failed capture).
  bool replays_update_graph() const { return update_graph_ != nullptr; }
  // CUDA with cuda_graph, an integral replay_ratio * num_envs and an env stepped on the device:
  // whether whole iterations (act, env step, store, the gradient steps, the target updates
  // that fall on every vector step) are replayed from one captured graph (false before the
  // second learning iteration, and after a failed capture).
  bool replays_iteration_graph() const { return iteration_graph_ != nullptr; }
  // Tests: takes the whole-iteration graph path on the CPU as well, where nn's Graph calls the
  // recorded work again, so its scheduling is checked against the eager loop without a GPU.
  void set_iteration_graph_on_cpu(bool on) { iteration_graph_on_cpu_ = on; }

  // Trains until total_steps or until `stop()` returns true (checked every vector step: a
  // signal handler sets a flag). `on_log` gets a row every log_interval env steps and at the
  // end; `on_checkpoint` is called every checkpoint_interval env steps; `on_eval` gets an
  // evaluation every eval_interval env steps (when eval_episodes > 0) and returns true to end the
  // run there (a normal end, with a last metrics row; `stop` is an interruption, without one).
  // Evaluations change nothing the training reads: a run gives the same weights without them.
  void Train(const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
             const std::function<void()>& on_checkpoint, const std::function<bool(const DqnEvaluation&)>& on_eval = {});
  // The greedy evaluation Train runs: eval_episodes episodes of the online network on the eval
  // envs, the k-th evaluation of the run from seeds of its own.
  EvalResult Evaluate(int64_t k);

  // Everything a run needs to go on as if it had never stopped, in one safetensors file: both
  // networks and Adam, the envs' full state, the exploration holds, the episode ring and the
  // return(100) window, every counter (env and vector steps, replay draws, target schedule,
  // update debt, wall time), the config, and the replay memory when config.save_replay.
  void SaveCheckpoint(const std::string& path) const;
  // Restores a checkpoint of the same env and network. Without a replay memory in it (save_replay
  // = false), learning waits until the buffer has been refilled with min(learning_starts,
  // buffer_size) new transitions; a checkpoint without the envs' state (written before cugym
  // kept it) restarts their episodes. Either way the run is then no longer the uninterrupted one.
  // CUDA graphs captured before are dropped (DropGraphs): the restored run captures its own, and
  // an agent that loads a checkpoint trains on as a new agent that loads it would.
  void LoadCheckpoint(const std::string& path);
  // The online network with the env and training step in its metadata: all eval/watch/record need.
  void SaveModel(const std::string& path) const;

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
  bool CaptureIterationGraph();
  void CaptureFailed(const std::exception& e);
  // Drops the captured graphs and their warm-ups, so the next iterations warm up and capture
  // again. A graph replays the pointers and host values of its capture (the env's seed, its
  // per-env seed array or none, every argument read on the host), which LoadCheckpoint replaces.
  // A failed capture stays failed: everything then runs eagerly for the rest of the process.
  void DropGraphs();
  // Act, explore, copy the observations, step the envs, store the transitions and finished
  // episodes, advance the device's counters: all on the back end's stream, no host values that
  // change between iterations.
  void CollectKernels(bool greedy);
  void Update();
  void UpdateKernels();  // the gradient step's work, all on the back end's stream
  agent::ReplayArrays replay_arrays();
  agent::EpisodeRing episode_ring();
  agent::ExploreHold explore_hold();
  agent::EpsilonSchedule epsilon_schedule() const;
  void ResetPriorities();  // every leaf 0, the largest priority 1
  DqnProgress ReadProgress(double interval_seconds, int64_t interval_steps);

  DqnConfig config_;
  Device device_;
  EnvSpec spec_;
  std::unique_ptr<VectorEnv> env_;
  std::unique_ptr<VectorEnv> eval_env_;  // eval_episodes envs, when evaluating
  Buffer<int32_t> eval_actions_;
  std::unique_ptr<agent::QLearner> learner_;
  std::unique_ptr<agent::AgentOps> ops_;
  int obs_dim_;
  int num_actions_;

  // Replay memory and one minibatch, on the device.
  Buffer<float> replay_obs_, replay_next_obs_, replay_rewards_, replay_dones_;
  Buffer<uint8_t> replay_ends_;
  Buffer<int32_t> replay_actions_;
  Buffer<float> batch_obs_, batch_next_obs_, batch_rewards_, batch_bootstrap_, next_q_, targets_;
  Buffer<int32_t> batch_actions_, next_actions_;
  // Prioritized replay: the sum tree (2 x tree_.leaves), its largest leaf and the minibatch's
  // least draw probability; each sample's row, importance weight and TD error.
  Buffer<float> priority_nodes_, max_priority_, min_prob_, batch_weights_, td_errors_;
  Buffer<int64_t> batch_rows_;
  agent::PriorityTree tree_;  // views of the buffers above, set once; nodes == nullptr without PER
  Buffer<float> prev_obs_;
  Buffer<int32_t> actions_;
  Buffer<int32_t> held_actions_, hold_left_;  // [n] ez-greedy holds (exploration_hold_mu > 0)
  Buffer<float> ring_returns_;
  Buffer<int32_t> ring_lengths_;
  Buffer<unsigned long long> ring_count_;
  Buffer<int64_t> replay_size_dev_;           // [1] transitions stored, kept by the insertion kernel
  Buffer<int64_t> replay_head_dev_;           // [1] next row to write, kept by the insertion kernel
  Buffer<uint32_t> draws_dev_;                // [1] minibatches sampled (keys the replay RNG)
  Buffer<agent::StepCounters> counters_dev_;  // [1] vector and env steps, kept by AdvanceSteps
  std::unique_ptr<nn::Graph> update_graph_;   // CUDA: the gradient step, captured once
  bool warmed_up_ = false;                    // the first update ran eagerly
  // The whole iteration as one graph: its gradient steps (-1: the config has no such graph) and
  // target updates (n / target_update_interval where that divides n, else 0: they are launched
  // after the replay on the iterations where they fall).
  std::unique_ptr<nn::Graph> iteration_graph_;
  int64_t graph_updates_ = -1;
  int64_t graph_targets_ = 0;
  bool iteration_warmed_up_ = false;  // the first iteration that fits the graph ran eagerly
  bool iteration_graph_on_cpu_ = false;
  bool graph_failed_ = false;  // a capture failed: everything runs eagerly

  int64_t global_step_ = 0;
  int64_t vector_steps_ = 0;
  int64_t replay_position_ = 0;
  int64_t replay_size_ = 0;       // host mirror of replay_size_dev_
  double update_debt_ = 0;        // gradient steps owed (replay_ratio * env steps)
  int64_t next_target_step_ = 0;  // env step of the next target update
  int64_t learning_resumes_at_ = 0;
  uint64_t episodes_read_ = 0;       // ring entries already reported
  std::vector<float> last_returns_;  // the last 100 finished episodes, host side
  double wall_time_ = 0;
  double last_eval_return_;  // of the latest evaluation, NaN before any
};

}  // namespace cugym
