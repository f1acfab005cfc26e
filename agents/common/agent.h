// What `cugym train` trains: an agent chosen by the config's `algo` (algorithm.h: DQN, PQN, PPO, SAC),
// each written once for K >= 1 lanes. K seeds of one config step, learn and are evaluated
// together, each lane with its own envs, memory, exploration and statistics, the K networks as one
// replicated network; lane k is the solo run of seed k (the same bits on the CPU), and K = 1 is the
// solo run itself. An agent owns no loop: the one driver (Trainer, trainer.h) calls Iterate and
// keeps each lane's schedule (TrainSchedule, train_schedule.h), run folder and early stop.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/common/checkpoint.h"
#include "agents/common/episode_stats.h"
#include "agents/common/evaluation.h"
#include "agents/common/exploration_kernels.h"
#include "agents/common/q_learner.h"
#include "agents/common/train_config.h"
#include "core/registry.h"

namespace cugym::agent {

// One of an algorithm's own metrics: its metrics.csv column (and key of Python's row dict) and its
// TensorBoard tag (CleanRL's names; empty: the column only). Algorithm::metrics lists them.
struct MetricColumn {
  std::string name;
  std::string tag;
};

// One metrics.csv row (CleanRL's names): means over the episodes that ended since the last row,
// and the algorithm's own values (its MetricColumns': DQN's td_loss, PPO's policy_loss, ...).
struct MetricsRow {
  int64_t global_step = 0;
  double wall_time = 0;        // seconds of training in this process
  double episodic_return = 0;  // NaN when no episode ended in the interval
  double episodic_length = 0;
  double sps = 0;              // env steps per second over the interval
  double mean_return_100 = 0;  // over the last 100 finished episodes (NaN before any)
  int64_t episodes = 0;        // finished so far
  double eval_return = 0;      // mean return of the latest evaluation (NaN before any)
  // The algorithm's values by column name, in its columns' order (NaN before they mean anything).
  std::vector<std::pair<std::string, double>> scalars;

  void Set(const std::string& name, double value);
  // The value of column `name`, NaN when the row has none.
  double Get(const std::string& name) const;

  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
};

// One greedy evaluation during training: eval_episodes episodes on envs of their own (own seeds,
// no exploration), one episode each, with the online network.
struct TrainEvaluation {
  int64_t global_step = 0;
  double wall_time = 0;     // seconds of training so far (evaluations not counted)
  double eval_seconds = 0;  // what this evaluation took
  EvalResult result;
};

class Agent {
 public:
  virtual ~Agent() = default;

  // The config, with lane 0's seed.
  virtual const TrainConfig& config() const = 0;
  // The lanes' seeds, one per lane.
  virtual const std::vector<uint64_t>& seeds() const = 0;
  int lanes() const { return static_cast<int>(seeds().size()); }
  // Env steps of each lane (every lane steps the same).
  virtual int64_t global_step() const = 0;

  // One iteration of every lane, all queued on the device: DQN a vector step with the gradient
  // steps and target updates that fall on it, PQN a rollout and its updates.
  virtual void Iterate() = 0;

  // Lane k's metrics row over the last `seconds` and `steps` (its episodes since its last row, its
  // learner's last update). The lanes log at the same steps: the first to ask reads all of them.
  virtual MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) = 0;
  // Lane k's `index`-th greedy evaluation during training (eval_episodes episodes on envs of its
  // own, one each, from seeds of their own); the first lane to ask at a step evaluates every lane
  // at once. Throws std::logic_error when eval_episodes is 0.
  virtual EvalResult Evaluate(int lane, int64_t index) = 0;
  // The greedy evaluation of the listed lanes' networks now (EvaluateModel's of their model files:
  // `episodes` episodes over `num_envs` envs, reset with each lane's seed + seed_offset), every
  // listed lane at once; results in the order of `lanes`.
  virtual std::vector<EvalResult> EvaluateModels(const std::vector<int>& lanes, int64_t episodes, int64_t num_envs,
                                                 uint64_t seed_offset) = 0;

  // Lane k's online network as a model file (what eval, watch and record read), and back (for
  // EvaluateModels of a model saved earlier, once the lane's training is over).
  virtual void SaveModel(int lane, const std::string& path) const = 0;
  virtual void LoadModel(int lane, const std::string& path) = 0;
  // Everything lane k needs to go on as if it had never stopped, in one safetensors file of the
  // solo run's format (an agent of one lane resumes from it exactly), with the loop's values.
  virtual void SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const = 0;
  // Every lane from its checkpoint (files[k] for lane k, each read whole and checked once, as
  // ResumableCheckpoint gives them); then the agent goes on as each lane would have alone. Throws
  // std::invalid_argument naming the file for another algorithm, env or network, and checkpoints of
  // different steps. Returns each lane's loop values.
  virtual std::vector<LoopState> LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& files) = 0;
  // The same from the files at `paths` (paths[k] for lane k), a damaged one refused with its name.
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::string>& paths);
  // The lanes `keep` (indices, in that order) as an agent of their own that goes on exactly as they
  // would have in this one, copied on the device: the driver shrinks a batch to the lanes still
  // training. Null when the agent cannot (envs that cannot save their state); throws
  // std::out_of_range for an index outside and std::invalid_argument when it does not fit in memory.
  virtual std::unique_ptr<Agent> Keep(const std::vector<int>& keep) const = 0;

  // CUDA: whether whole iterations are replayed from one captured graph.
  virtual bool replays_iteration_graph() const = 0;
  // Tests: takes the whole-iteration graph path on the CPU as well, where nn's Graph calls the
  // recorded work again, so its scheduling is checked against the eager loop without a GPU.
  virtual void set_iteration_graph_on_cpu(bool on) = 0;
};

// Why `lanes` lanes of `config` cannot train as one agent, "" when they can. One lane always can.
std::string Unbatchable(const Registry& registry, const TrainConfig& config, int lanes);

// The Q-learners' epsilon: start_e to end_e over exploration_fraction of total_steps.
EpsilonSchedule EpsilonScheduleOf(const TrainConfig& config);

// A metrics row's fields every agent fills the same way: the episodes that ended since the last
// row, the steps per second over the interval, the loop's values.
MetricsRow EpisodeRow(int64_t global_step, double interval_seconds, int64_t interval_steps,
                      const EpisodeStats::Interval& ended, const LoopState& loop);
// A metrics row from what the Q-learning agents (DQN, PQN) keep: the episodes that ended since the last row and the
// learner's last update.
MetricsRow MakeProgress(int64_t global_step, double epsilon, double interval_seconds, int64_t interval_steps,
                        const EpisodeStats::Interval& ended, const QLearner::Stats& stats, const LoopState& loop);

// The Q network and optimizer options a config asks for on `spec`'s env, shared by DQN and PQN
// (each then sets its minibatch, its largest act batch and whether it keeps a target network).
QLearnerOptions LearnerOptionsFor(const TrainConfig& config, const EnvSpec& spec);
// `options` for a lane per seed: K replicas, replica k's initial weights those of seed k's solo run.
QLearnerOptions ForLanes(QLearnerOptions options, const std::vector<uint64_t>& seeds);
// The Q-learners' (DQN's and PQN's) part of their Algorithm (algorithm.h): the keys they read
// (exploration, replay memory, targets, Q(lambda)) and their metrics columns.
const std::vector<std::string>& QLearningKeys();
std::vector<MetricColumn> QMetricColumns();
// `id`'s spec; throws std::invalid_argument unless its actions are discrete ("AGENT needs a
// discrete action space, but ...").
const EnvSpec& DiscreteSpec(const Registry& registry, const std::string& id, const std::string& agent);
// `seeds`, or {config.seed} when empty; throws std::invalid_argument for a seed listed twice.
std::vector<uint64_t> LaneSeeds(const TrainConfig& config, std::vector<uint64_t> seeds);

}  // namespace cugym::agent
