// The one driver of the training loop (trainer.h).
#include "agents/run/trainer.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/algorithm.h"
#include "core/atomic_file.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// One run: its config (its seed), folder, lane of the agent, record, schedule and result.
struct Trainer::RunState {
  TrainConfig config;
  fs::path dir;
  TrainRunOptions options;
  RunLane lane;
  std::unique_ptr<RunRecord> record;
  std::unique_ptr<TrainSchedule> schedule;
  TrainRunResult result;
  double eval_seconds = 0;  // of the last iteration's evaluation
};

Trainer::Trainer(const Registry& registry, const TrainConfig& config, const std::vector<uint64_t>& seeds,
                 const std::vector<TrainRunOptions>& runs, std::ostream& notes)
    : config_(config), notes_(notes), started_(Clock::now()) {
  if (runs.size() != seeds.size() || runs.empty())
    throw std::invalid_argument("Trainer: one run folder per seed, and at least one");
  for (const TrainRunOptions& run : runs)
    if (run.resume != runs.front().resume || run.device != runs.front().device)
      throw std::invalid_argument("Trainer: the runs of a batch all resume or all start, on one device");
  const bool resume = runs.front().resume;
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    auto run = std::make_unique<RunState>();
    run->config = config;
    run->config.seed = seeds[k];
    run->options = runs[k];
    run->dir = resume ? fs::path(runs[k].run_dir) : NewRunFolder(run->config, runs[k].run_dir);
    runs_.push_back(std::move(run));
  }
  agent_ = MakeAgent(registry, config, runs.front().device, seeds);
  std::vector<std::unique_ptr<CheckpointReader>> checkpoints;  // read once each, released after loading
  for (std::size_t k = 0; k < runs_.size(); ++k) {
    runs_[k]->lane = RunLane{agent_.get(), static_cast<int>(k), LoopState{}};
    if (resume) {
      checkpoints.push_back(ResumableCheckpoint(runs_[k]->dir, notes));
    } else {
      CreateRunFolder(runs_[k]->dir);
    }
  }
  if (resume) {
    const std::vector<LoopState> loops = agent_->LoadCheckpoints(checkpoints);
    for (std::size_t k = 0; k < runs_.size(); ++k) runs_[k]->lane.loop = loops[k];
  }
  global_step_ = agent_->global_step();
  // The runs write their files at the same steps: each step's files (config.toml here; the
  // checkpoints, models and eval.json later) are synced and renamed together (AtomicFileGroup), two
  // syncs for all instead of two per file. A resumed run reads back what it truncates: no group.
  std::optional<AtomicFileGroup> first_files;
  if (!resume) first_files.emplace();
  for (const std::unique_ptr<RunState>& run_ptr : runs_) {
    RunState& run = *run_ptr;
    run.record = std::make_unique<RunRecord>(registry, run.config, run.dir, run.options, run.lane, notes);
    run.schedule = std::make_unique<TrainSchedule>(
        run.config, global_step_, run.lane.loop,
        [&run](double seconds, int64_t steps) {
          return run.lane.agent->Progress(run.lane.lane, seconds, steps, run.lane.loop);
        },
        [&run](int64_t index) { return run.lane.agent->Evaluate(run.lane.lane, index); },
        [&run](const MetricsRow& p) { run.record->Log(p); }, [&run] { run.record->Checkpoint(); },
        [&run](const TrainEvaluation& e) { return run.record->Evaluated(e); });
  }
  if (first_files) first_files->Commit();
}

Trainer::~Trainer() = default;

std::vector<TrainRunResult> Trainer::Run(const std::function<bool()>& stop,
                                         const std::function<void(std::size_t, const TrainRunResult&)>& on_finished) {
  on_finished_ = on_finished;
  for (std::size_t k = 0; k < runs_.size(); ++k) {
    if (runs_[k]->record->done()) {
      StopRun(k, false);
    } else {
      training_.push_back(k);
    }
  }
  shrink_at_ = static_cast<std::size_t>(agent_->lanes()) / 2;
  spent_.setup = Since(started_);
  for (bool going = true; going;) Committed([&] { going = Step(stop); });
  Committed([&] { EvaluateWaiting(); });
  if (runs_.size() > 1) SayWhereTimeWent();
  std::vector<TrainRunResult> results;
  for (const std::unique_ptr<RunState>& run : runs_) results.push_back(run->result);
  return results;
}

// Each run's loop: an agent's lane leaves when its steps are done, an evaluation ends it, or its
// on_eval asks it to stop; stop() ends all of them at the same step (their checkpoints resume the
// batch).
bool Trainer::Step(const std::function<bool()>& stop) {
  std::vector<std::size_t> going;
  for (std::size_t k : training_) {
    RunState& run = *runs_[k];
    if (run.schedule->going() && !run.record->stop_asked()) {
      going.push_back(k);
      continue;
    }
    run.schedule->End();
    StopRun(k, run.record->stop_asked());  // interrupted when on_eval asked
  }
  training_.swap(going);
  if (!training_.empty() && stop()) {
    for (std::size_t k : training_) {
      runs_[k]->schedule->End();
      StopRun(k, true);
    }
    return false;
  }
  if (training_.empty()) return false;
  if (training_.size() <= shrink_at_) Shrink();
  const Clock::time_point t0 = Clock::now();
  agent_->Iterate();
  spent_.iterations += Since(t0);
  ++spent_.iteration_count;
  global_step_ = agent_->global_step();
  double all_evals = 0;
  for (std::size_t k : training_) all_evals += runs_[k]->eval_seconds = runs_[k]->schedule->Iterated();
  spent_.evaluations += all_evals;
  if (all_evals > 0)
    for (std::size_t k : training_) runs_[k]->schedule->Exclude(all_evals - runs_[k]->eval_seconds);
  return true;
}

// A run stops at once (its checkpoint and model); one that completed waits for its final
// evaluation, which the completed runs take together when the batch shrinks or ends.
void Trainer::StopRun(std::size_t k, bool interrupted) {
  RunState& run = *runs_[k];
  run.result = run.record->Stop(interrupted);
  if (run.options.on_stop) run.options.on_stop();
  if (!interrupted && config_.eval_episodes > 0) {
    waiting_.push_back(k);
    return;
  }
  run.record->Complete(run.result, nullptr);
  if (on_finished_) on_finished_(k, run.result);
}

// A lane that stopped before this step first gets its model file back into its replica (its lane
// trained on).
void Trainer::EvaluateWaiting() {
  if (waiting_.empty()) return;
  const Clock::time_point t0 = Clock::now();
  std::vector<int> lanes;
  for (std::size_t k : waiting_) {
    RunState& run = *runs_[k];
    if (run.result.global_step != agent_->global_step()) agent_->LoadModel(run.lane.lane, run.result.model);
    lanes.push_back(run.lane.lane);
  }
  const std::vector<EvalResult> evals =
      agent_->EvaluateModels(lanes, config_.eval_episodes, config_.eval_episodes, kFinalEvalSeed);
  std::string failed;  // every run completes before one that could not write its files is said
  for (std::size_t e = 0; e < waiting_.size(); ++e) {
    RunState& run = *runs_[waiting_[e]];
    try {
      run.record->Complete(run.result, &evals[e]);
    } catch (const std::runtime_error& error) {
      failed += (failed.empty() ? "" : "; ") + std::string(error.what());
      continue;
    }
    if (on_finished_) on_finished_(waiting_[e], run.result);
  }
  waiting_.clear();
  spent_.final_evaluations += Since(t0);
  ++spent_.final_rounds;
  if (!failed.empty()) throw std::runtime_error(failed);
}

// Once half the lanes or more have left, the agent shrinks to those training (Agent::Keep), which
// go on exactly as they would have. Halving bounds the copies to log2(K) rounds; an agent that
// cannot shrink (envs without snapshots, memory that does not fit beside it) tries again at the
// next halving.
void Trainer::Shrink() {
  shrink_at_ = training_.size() / 2;
  std::vector<int> keep;
  for (std::size_t k : training_) keep.push_back(runs_[k]->lane.lane);
  std::unique_ptr<Agent> next;
  const Clock::time_point t0 = Clock::now();
  try {
    next = agent_->Keep(keep);
  } catch (const std::invalid_argument& e) {
    notes_ << "cugym train: the batch goes on with all " << agent_->lanes() << " agents: " << e.what() << "\n";
  }
  spent_.shrinks += Since(t0);
  if (!next) return;
  ++spent_.shrink_count;
  EvaluateWaiting();  // the lanes that completed leave with this agent
  notes_ << "cugym train: " << training_.size() << " of " << agent_->lanes() << " agents train on at step "
         << global_step_ << "; the batch shrinks to them\n";
  for (const std::unique_ptr<RunState>& run : runs_) run->lane.agent = nullptr;  // the runs that left
  agent_ = std::move(next);
  for (std::size_t i = 0; i < training_.size(); ++i)
    runs_[training_[i]]->lane = RunLane{agent_.get(), static_cast<int>(i), runs_[training_[i]]->lane.loop};
}

// The files written by `work` are synced and renamed together, also when it throws: a run that
// could not write one file keeps those it wrote before.
void Trainer::Committed(const std::function<void()>& work) {
  AtomicFileGroup files;
  try {
    work();
  } catch (...) {
    files.Commit();
    throw;
  }
  const Clock::time_point t0 = Clock::now();
  files.Commit();
  spent_.syncs += Since(t0);
}

void Trainer::SayWhereTimeWent() {
  const double total = Since(started_);
  const auto count = [](int64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  char line[400];
  std::snprintf(line, sizeof(line),
                "cugym train: a batch of %zu agents took %.2f s: setup %.2f s, %s %.2f s, evaluations during "
                "training %.2f s, final evaluations %.2f s (%s), shrinking %.2f s (%s), file syncs %.2f s, the rest "
                "(logs, models, checkpoints) %.2f s\n",
                runs_.size(), total, spent_.setup, count(spent_.iteration_count, "iteration").c_str(),
                spent_.iterations, spent_.evaluations, spent_.final_evaluations,
                count(spent_.final_rounds, "round").c_str(), spent_.shrinks,
                count(spent_.shrink_count, "shrink").c_str(), spent_.syncs,
                total - spent_.setup - spent_.iterations - spent_.evaluations - spent_.final_evaluations -
                    spent_.shrinks - spent_.syncs);
  notes_ << line;
}

TrainRunResult RunTraining(const Registry& registry, const TrainConfig& config, const TrainRunOptions& options,
                           const std::function<bool()>& stop, std::ostream& notes) {
  Trainer trainer(registry, config, {config.seed}, {options}, notes);
  return trainer.Run(stop).front();
}

}  // namespace cugym::agent
