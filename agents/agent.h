// What `cugym train` trains: an agent chosen by the config's `algo` (DQN, dqn.h, or PQN, pqn.h),
// driven by RunTraining (train_run.h) through this interface, and the loop schedule both share:
// iterations until total_steps, with a metrics row every log_interval env steps, an evaluation
// every eval_interval and a checkpoint every checkpoint_interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agents/dqn_config.h"
#include "agents/episode_stats.h"
#include "agents/evaluation.h"
#include "agents/q_learner.h"
#include "core/registry.h"

namespace cugym::agent {

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

// What a run folder keeps of an agent (RunTraining): its step, checkpoints and model files. An
// Agent is one; so is one agent of a DqnBatch (RunBatchTraining).
class AgentFiles {
 public:
  virtual ~AgentFiles() = default;
  virtual int64_t global_step() const = 0;
  // Everything a run needs to go on as if it had never stopped, in one safetensors file.
  virtual void SaveCheckpoint(const std::string& path) const = 0;
  // The online network with the env and training step in its metadata: all eval/watch/record need.
  virtual void SaveModel(const std::string& path) const = 0;
};

class Agent : public AgentFiles {
 public:
  virtual const DqnConfig& config() const = 0;
  // Trains until total_steps or until `stop()` returns true (checked every iteration: a signal
  // handler sets a flag). `on_log` gets a row every log_interval env steps and at the end;
  // `on_checkpoint` is called every checkpoint_interval env steps; `on_eval` gets an evaluation
  // every eval_interval env steps (when eval_episodes > 0) and returns true to end the run there
  // (a normal end, with a last metrics row; `stop` is an interruption, without one). Evaluations
  // change nothing the training reads: a run gives the same weights without them.
  virtual void Train(const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
                     const std::function<void()>& on_checkpoint,
                     const std::function<bool(const DqnEvaluation&)>& on_eval = {}) = 0;
  // The greedy evaluation Train runs: eval_episodes episodes of the online network on the eval
  // envs, the k-th evaluation of the run from seeds of its own.
  virtual EvalResult Evaluate(int64_t k) = 0;
  // Restores a checkpoint of the same env, algorithm and network (SaveCheckpoint's).
  virtual void LoadCheckpoint(const std::string& path) = 0;
};

// A metrics row from what both agents keep: the counters, the episodes that ended since the last
// row (`episodes` is read, which waits for the queued work) and the learner's last update.
DqnProgress ReadProgress(int64_t global_step, double wall_time, double epsilon, double interval_seconds,
                         int64_t interval_steps, EpisodeStats& episodes, const QLearner& learner,
                         double last_eval_return);
// The row from what was read: the episodes' interval and the learner's statistics.
DqnProgress MakeProgress(int64_t global_step, double wall_time, double epsilon, double interval_seconds,
                         int64_t interval_steps, const EpisodeStats::Interval& ended, const QLearner::Stats& stats,
                         double last_eval_return);

// The Q network and optimizer options a config asks for on `spec`'s env, shared by both agents
// (each then sets its minibatch, its largest act batch and whether it keeps a target network).
QLearnerOptions LearnerOptionsFor(const DqnConfig& config, const EnvSpec& spec);
// `id`'s spec; throws std::invalid_argument unless its actions are discrete ("AGENT needs a
// discrete action space, but ...").
const EnvSpec& DiscreteSpec(const Registry& registry, const std::string& id, const std::string& agent);

// DqnAgent or PqnAgent by config.algo. Throws std::invalid_argument for an unknown env, an env
// without discrete actions or a bad config.
std::unique_ptr<Agent> MakeAgent(const Registry& registry, const DqnConfig& config, Device device);

// The schedule both agents train by (Agent::Train's contract), one iteration at a time, so that one
// driver can keep the schedules of many agents (a DqnBatch's, RunBatchTraining). `progress` reads
// a metrics row for the last `seconds` and `steps`; `evaluate(k)` runs the k-th evaluation (unused
// when eval_episodes is 0). `wall_time` accumulates training seconds (evaluations not counted) and
// `last_eval_return` the latest evaluation's mean. An interval an iteration steps over is taken
// once, at the end of that iteration.
class TrainSchedule {
 public:
  TrainSchedule(const DqnConfig& config, const int64_t& global_step, double& wall_time, double& last_eval_return,
                std::function<DqnProgress(double seconds, int64_t steps)> progress,
                std::function<EvalResult(int64_t k)> evaluate, std::function<void(const DqnProgress&)> on_log,
                std::function<void()> on_checkpoint, std::function<bool(const DqnEvaluation&)> on_eval);
  // Whether training goes on: steps are left and no evaluation ended the run.
  bool going() const { return global_step_ < config_.total_steps && !finished_; }
  // After an iteration advanced global_step: the metrics row, evaluation and checkpoint that fall
  // on it. Returns the seconds its evaluation took (0 without one).
  double Iterated();
  // Seconds spent on other work (another agent's evaluation) that are not this agent's training.
  void Exclude(double seconds);
  // The end of training: a last row when it completed (an interrupted run writes none: its
  // checkpoint resumes the interval, so the resumed run's rows are the uninterrupted run's).
  void End();

 private:
  using Clock = std::chrono::steady_clock;
  void Log();

  const DqnConfig& config_;
  const int64_t& global_step_;
  double& wall_time_;
  double& last_eval_return_;
  std::function<DqnProgress(double, int64_t)> progress_;
  std::function<EvalResult(int64_t)> evaluate_;
  std::function<void(const DqnProgress&)> on_log_;
  std::function<void()> on_checkpoint_;
  std::function<bool(const DqnEvaluation&)> on_eval_;
  Clock::time_point interval_start_;
  int64_t interval_first_step_, next_log_, next_checkpoint_, next_eval_;
  bool finished_ = false;  // on_eval ended the run
};

// One agent's whole schedule: `iterate` runs one iteration and advances `global_step` (a vector
// step for DQN, a rollout and its updates for PQN); `stop` is polled before every iteration.
struct TrainLoop {
  std::function<void()> iterate;
  std::function<DqnProgress(double seconds, int64_t steps)> progress;
  std::function<EvalResult(int64_t k)> evaluate;
};
void RunTrainLoop(const DqnConfig& config, const int64_t& global_step, double& wall_time, double& last_eval_return,
                  const TrainLoop& loop, const std::function<void(const DqnProgress&)>& on_log,
                  const std::function<bool()>& stop, const std::function<void()>& on_checkpoint,
                  const std::function<bool(const DqnEvaluation&)>& on_eval);

}  // namespace cugym::agent
