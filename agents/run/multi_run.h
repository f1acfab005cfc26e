// Many runs of one config in one process: a list of seeds crossed with a grid of config values
// (`cugym train --seeds 1-32 --sweep learning_rate=1e-3,2.3e-3`, cugym.train(seeds=..., sweep=...)).
// Each (grid point, seed) is an ordinary run folder trained by the one driver (Trainer, trainer.h),
// so it gives the bits a solo run with that seed and those keys gives (on the CPU). On the CPU the runs are spread
// over worker threads, one run per core at a time; on CUDA each grid point's seeds train in
// lockstep as one batch (MultiRunOptions::lockstep), the points one after the other. The batch
// folder holds batch.toml (what was asked), the run folders and summary.json / summary.md (per grid
// point: the seeds that reach the env's threshold, IQM and mean return with 95% bootstrap
// intervals, the time to threshold). The batch's spec is sweep_spec.h, its summary batch_summary.h;
// this is the scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "agents/common/train_config.h"
#include "agents/run/batch_summary.h"
#include "agents/run/config_source.h"
#include "agents/run/run_folder.h"
#include "agents/run/sweep_spec.h"

namespace cugym::agent {

struct MultiRunOptions {
  std::string out_dir;  // the batch folder: new or empty, or a batch to resume
  bool resume = false;  // continue every unfinished run of out_dir (its batch.toml) exactly
  Device device = Device::kCpu;
  int jobs = 0;  // runs (or lockstep batches) trained at once on the CPU; 0: one per hardware thread
  // Each grid point's seeds trained in lockstep as one agent of a lane per seed (one replicated
  // network for all K, the same bits per seed on the CPU) rather than as K runs of their own. Unset:
  // on CUDA, for configs that take lanes (Unbatchable: envs that cannot step in lanes train apart); true
  // refuses a config that cannot.
  std::optional<bool> lockstep;
};

struct MultiRunResult {
  std::vector<RunOutcome> runs;  // in batch order: grid points, then seeds
  bool interrupted = false;      // stop() ended it: every started run has a checkpoint
  std::string summary_json, summary_md;
};

// Progress of the whole batch, for a progress line.
struct MultiRunProgress {
  int total = 0, done = 0, running = 0;
  int interrupted = 0;                   // runs stopped by `stop` (each with its checkpoint): not done, resumed later
  double best_eval = 0, worst_eval = 0;  // latest evaluation of the running or finished runs (NaN: none yet)
};

// Trains every (grid point, seed) of `base` (a config source as cugym train's, without
// resume_dir) into options.out_dir. `on_progress` is called (from any worker, one call at a time)
// when a run starts or ends and after each evaluation; `stop` is polled on the calling thread
// every 20 ms (a signal flag, Python's Ctrl-C check): when it returns true each running run writes
// a checkpoint and stops, runs not started stay so, and a resume continues the batch. Throws
// std::invalid_argument for a bad spec or folder, std::runtime_error naming the run that failed.
MultiRunResult RunMany(const Registry& registry, const TrainConfigSource& base, const std::vector<uint64_t>& seeds,
                       const std::vector<SweepAxis>& sweep, const MultiRunOptions& options,
                       const std::function<void(const MultiRunProgress&)>& on_progress,
                       const std::function<bool()>& stop, std::ostream& notes);

}  // namespace cugym::agent
