// Many runs of one config in one process: the scheduler (see multi_run.h).
#include "agents/run/multi_run.h"
#include "agents/common/algorithm.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "agents/off_policy/replay_memory.h"
#include "agents/run/config_source.h"
#include "agents/run/trainer.h"
#include "core/atomic_file.h"
#include "core/memory.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The runs alive at once (`jobs` of them: every seed of a grid point for each batch in lockstep) each hold a replay
// memory, which dominates a DQN run's memory: refused before anything trains when together they would not fit. (A run
// alone is checked by its ReplayMemory.)
void CheckBatchMemory(const Registry& registry, const std::vector<TrainConfig>& configs, int jobs, Device device,
                      const std::string& hint) {
  std::vector<std::pair<int64_t, const TrainConfig*>> runs;  // replay bytes, config
  for (const TrainConfig& c : configs) {
    const Algorithm* algorithm = FindAlgorithm(c.algo);
    if (algorithm == nullptr || !algorithm->replay_bytes) continue;  // no replay memory
    runs.emplace_back(algorithm->replay_bytes(c, registry.Get(c.env_id).spec), &c);
  }
  const int alive = std::min<int>(jobs, static_cast<int>(runs.size()));
  if (alive < 2) return;
  // Swept keys keep array shapes: every run's memory is the same size.
  const TrainConfig& c = *runs.front().second;
  CheckMemoryFits(
      std::to_string(configs.size()) + " runs, " + std::to_string(alive) + " at a time: their replay memories", alive,
      static_cast<double>(runs.front().first), device,
      "each: buffer_size " + std::to_string(c.buffer_size) + " transitions of " +
          std::to_string(registry.Get(c.env_id).spec.obs_dim()) + " floats per observation; " + hint);
}

// A unit of work for one worker: a run alone (an agent of one lane), or some of a grid point's seeds
// in lockstep (an agent of a lane per seed).
struct Unit {
  std::vector<std::size_t> runs;  // indices into the plan
  bool lockstep = false;
};

// The batch as it trains: the plan, the workers, the progress and the first failure.
class Scheduler {
 public:
  Scheduler(const Registry& registry, const MultiRunOptions& options,
            const std::function<void(const MultiRunProgress&)>& on_progress, std::ostream& notes)
      : registry_(registry), options_(options), on_progress_(on_progress), notes_(notes) {}

  // The batch folder, new or resumed: its seeds, sweep and config source.
  void Open(const TrainConfigSource& base, std::vector<uint64_t> seeds, std::vector<SweepAxis> sweep);
  // Every run's config, resolved and checked, and the units, before anything trains.
  void Plan();
  MultiRunResult Run(const std::function<bool()>& stop);

 private:
  void Report();  // under mutex_
  bool should_stop() const { return stopped_.load(); }
  TrainRunOptions RunOptions(std::size_t i, int& live);
  TrainConfig RunConfig(std::size_t i, const TrainRunOptions& run) const;
  void Started(int runs, int& live);
  void Finished(std::size_t i, const TrainRunResult& r);
  void TrainAlone(std::size_t i, int& live);
  void TrainLockstep(const std::vector<std::size_t>& unit, int& live);
  void Work();

  const Registry& registry_;
  const MultiRunOptions& options_;
  const std::function<void(const MultiRunProgress&)>& on_progress_;
  std::ostream& notes_;
  fs::path out_;
  std::vector<uint64_t> seeds_;
  std::vector<SweepAxis> sweep_;
  TrainConfigSource source_;
  std::vector<PlannedRun> plan_;
  std::vector<TrainConfig> configs_;
  std::vector<Unit> units_;
  int jobs_ = 1;

  MultiRunResult result_;
  std::vector<double> latest_;  // each run's latest evaluation (NaN: none yet)
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stopped_{false};
  std::mutex mutex_;  // progress, notes, the first error
  int done_ = 0, interrupted_ = 0, running_ = 0;
  std::string failure_;
};

void Scheduler::Open(const TrainConfigSource& base, std::vector<uint64_t> seeds, std::vector<SweepAxis> sweep) {
  out_ = options_.out_dir;
  if (out_.empty()) throw std::invalid_argument("a batch of runs needs its folder (--out DIR)");
  seeds_ = std::move(seeds);
  sweep_ = std::move(sweep);
  source_ = base;
  if (options_.resume) {
    if (!IsBatchFolder(out_.string()))
      throw std::invalid_argument("resume " + out_.string() + ": no batch.toml there (not a cugym batch)");
    ReadBatchToml(out_ / "batch.toml", seeds_, sweep_);
    for (const auto& entry : base.overrides) {
      if (entry.first == "seed")
        throw std::invalid_argument(
            "resume of a batch: its runs keep their seeds (batch.toml); drop the seed override");
      for (const SweepAxis& axis : sweep_)
        if (axis.key == entry.first)
          throw std::invalid_argument("resume of a batch: it sweeps " + entry.first +
                                      " (batch.toml); drop its override");
    }
    source_ = TrainConfigSource{};
    source_.config_path = (out_ / "base_config.toml").string();
    source_.overrides = base.overrides;  // --set on resume, as for one run
    return;
  }
  if (seeds_.empty()) throw std::invalid_argument("a batch of runs needs seeds");
  CheckSweep(sweep_);
  if (fs::exists(out_) && !(fs::is_directory(out_) && fs::is_empty(out_)))
    throw std::invalid_argument("batch folder " + out_.string() +
                                " exists and is not empty (use another folder, or resume it)");
}

// On the CPU, where a lockstep batch is one thread, a point's seeds split into as many batches as it
// takes to give every worker one (contiguous slices of the seed list).
void Scheduler::Plan() {
  plan_ = PlanRuns(out_, seeds_, sweep_);
  std::ostringstream quiet;
  for (const PlannedRun& p : plan_) {
    TrainConfigSource s = source_;
    for (const auto& [key, value] : p.keys) s.overrides[key] = value;
    s.overrides["seed"] = ParseTomlValue(std::to_string(p.seed), "seed");
    configs_.push_back(ResolveTrainConfig(registry_, s, configs_.empty() ? notes_ : quiet));
  }
  const bool want_lockstep = options_.lockstep.value_or(options_.device == Device::kCuda);
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = options_.device == Device::kCuda ? 1 : options_.jobs > 0 ? options_.jobs : hardware;
  const std::size_t k = seeds_.size(), points = plan_.size() / k;
  const std::size_t slices = std::min(k, std::max<std::size_t>(1, (workers + points - 1) / points));
  for (std::size_t first = 0; first < plan_.size(); first += k) {
    const std::string why = Unbatchable(registry_, configs_[first], static_cast<int>(k));
    if (options_.lockstep.value_or(false) && !why.empty())
      throw std::invalid_argument("lockstep" + (plan_[first].point.empty() ? "" : " at " + plan_[first].point) + ": " +
                                  why);
    if (want_lockstep && why.empty()) {
      for (std::size_t s = 0; s < slices; ++s) {
        units_.push_back({{}, true});
        for (std::size_t j = s * k / slices; j < (s + 1) * k / slices; ++j) units_.back().runs.push_back(first + j);
      }
    } else {
      for (std::size_t i = first; i < first + k; ++i) units_.push_back({{i}, false});
    }
  }
  const bool any_lockstep = std::any_of(units_.begin(), units_.end(), [](const Unit& u) { return u.lockstep; });
  jobs_ = std::max(1, std::min<int>(workers, static_cast<int>(units_.size())));
  std::size_t largest = 1;
  for (const Unit& u : units_) largest = std::max(largest, u.runs.size());
  CheckBatchMemory(
      registry_, configs_, jobs_ * static_cast<int>(largest), options_.device,
      any_lockstep ? "fewer seeds per batch, --lockstep off, or a smaller buffer_size" : "lower --jobs or buffer_size");
  if (!options_.resume) {  // made once every check passed: a refused batch leaves nothing behind
    std::error_code error;
    fs::create_directories(out_, error);
    if (error) throw std::invalid_argument("cannot create batch folder " + out_.string() + ": " + error.message());
    WriteFileAtomically((out_ / "base_config.toml").string(), ResolveTrainConfig(registry_, source_, quiet).ToToml());
    WriteFileAtomically((out_ / "batch.toml").string(), BatchToml(seeds_, sweep_));
  }
  notes_ << "cugym train: " << plan_.size() << " runs (" << points << " grid points x " << k << " seeds), "
         << (!any_lockstep ? ""
             : slices == 1 ? "each grid point's seeds in lockstep as one batch, "
                           : "each grid point's seeds in lockstep as " + std::to_string(slices) + " batches, ")
         << jobs_ << " at a time on " << DeviceName(options_.device) << "\n";
}

void Scheduler::Report() {
  MultiRunProgress p;
  p.total = static_cast<int>(plan_.size());
  p.done = done_;
  p.interrupted = interrupted_;
  p.running = running_;
  p.best_eval = p.worst_eval = kNaN;
  for (double x : latest_) {
    if (std::isnan(x)) continue;
    p.best_eval = std::isnan(p.best_eval) ? x : std::max(p.best_eval, x);
    p.worst_eval = std::isnan(p.worst_eval) ? x : std::min(p.worst_eval, x);
  }
  on_progress_(p);
}

// Run i's options: a run with a checkpoint continues; one that stopped before its first checkpoint,
// or never started, starts again in an empty folder (what it wrote is the batch's own).
TrainRunOptions Scheduler::RunOptions(std::size_t i, int& live) {
  const PlannedRun& p = plan_[i];
  result_.runs[i].point = p.point;
  result_.runs[i].seed = p.seed;
  TrainRunOptions run;
  run.run_dir = p.dir.string();
  run.device = options_.device;
  const bool has_checkpoint = !NewestCheckpoint(p.dir.string()).empty();
  run.resume = options_.resume && has_checkpoint;
  if (options_.resume && !has_checkpoint) fs::remove_all(p.dir);
  if (!run.resume) fs::create_directories(p.dir.parent_path());
  run.on_eval = [this, i](const TrainEvaluation& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_[i] = e.result.mean_return;
    Report();
    return false;
  };
  run.on_stop = [this, &live] {  // training over; its final evaluation may still wait (lockstep)
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    --live;
    Report();
  };
  return run;
}

// A finished run resumes from its last checkpoint too: nothing is left to train, and its model and
// evaluation come out again, the same bits. A resumed run takes its own config.toml and the
// overrides given on resume (--total-steps extends every run of the batch, as it does a run alone).
TrainConfig Scheduler::RunConfig(std::size_t i, const TrainRunOptions& run) const {
  if (!run.resume) return configs_[i];
  std::ostringstream run_notes;
  TrainConfigSource s;
  s.resume_dir = plan_[i].dir.string();
  s.overrides = source_.overrides;
  return ResolveTrainConfig(registry_, s, run_notes);
}

// `live` counts a unit's runs training (taken off `running_` if it fails).
void Scheduler::Started(int runs, int& live) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ += runs;
  live += runs;
  Report();
}

void Scheduler::Finished(std::size_t i, const TrainRunResult& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  result_.runs[i].result = r;
  ++(r.interrupted ? interrupted_ : done_);
  if (r.evaluated) latest_[i] = r.eval.mean_return;
  Report();
}

void Scheduler::TrainAlone(std::size_t i, int& live) {
  const TrainRunOptions run = RunOptions(i, live);
  const TrainConfig config = RunConfig(i, run);
  Started(1, live);
  std::ostringstream run_notes;
  Finished(i, RunTraining(
                  registry_, config, run, [this] { return should_stop(); }, run_notes));
}

// A grid point's runs in lockstep. Resumed, they go on in groups of one step and one config (a batch
// stopped together has one; runs trained apart before may not), the others start afresh.
void Scheduler::TrainLockstep(const std::vector<std::size_t>& unit, int& live) {
  struct Group {
    TrainConfig config;
    std::vector<std::size_t> runs;
    std::vector<uint64_t> seeds;
    std::vector<TrainRunOptions> options;
  };
  std::map<std::string, Group> groups;
  for (std::size_t i : unit) {
    TrainRunOptions run = RunOptions(i, live);
    TrainConfig config = RunConfig(i, run);
    const uint64_t seed = config.seed;
    config.seed = 0;
    const std::string checkpoint = run.resume ? fs::path(NewestCheckpoint(run.run_dir)).filename().string() : "";
    Group& group = groups[checkpoint + "\n" + config.ToToml()];
    group.config = config;
    group.runs.push_back(i);
    group.seeds.push_back(seed);
    group.options.push_back(std::move(run));
  }
  for (auto& [key, group] : groups) {
    if (should_stop()) break;
    Started(static_cast<int>(group.runs.size()), live);
    std::ostringstream batch_notes;  // its shrinks and where its time went, said once it ends
    Trainer trainer(registry_, group.config, group.seeds, group.options, batch_notes);
    trainer.Run([this] { return should_stop(); },
                [&](std::size_t k, const TrainRunResult& r) { Finished(group.runs[k], r); });
    std::lock_guard<std::mutex> lock(mutex_);
    notes_ << batch_notes.str();
  }
}

void Scheduler::Work() {
#ifdef _OPENMP
  omp_set_num_threads(1);  // one run (or one batch) per core: its envs step on this thread
#endif
  for (std::size_t u; (u = next_.fetch_add(1)) < units_.size();) {
    if (should_stop()) break;
    const Unit& unit = units_[u];
    int live = 0;
    try {
      if (unit.lockstep) {
        TrainLockstep(unit.runs, live);
      } else {
        TrainAlone(unit.runs.front(), live);
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      running_ -= live;
      if (failure_.empty()) failure_ = plan_[unit.runs.front()].dir.string() + ": " + e.what();
      stopped_.store(true);
    }
  }
}

// stop() is polled on the calling thread only (Python handles signals on its main thread); the runs
// read the flag it sets.
MultiRunResult Scheduler::Run(const std::function<bool()>& stop) {
  result_.runs.resize(plan_.size());
  latest_.assign(plan_.size(), kNaN);
  std::atomic<int> workers_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs_; ++t)
    threads.emplace_back([&] {
      Work();
      ++workers_done;
    });
  while (workers_done.load() < jobs_) {
    if (!stopped_.load() && stop()) stopped_.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& t : threads) t.join();
  if (!failure_.empty()) throw std::runtime_error(failure_);
  result_.interrupted = stopped_.load();
  if (!result_.interrupted) {
    std::tie(result_.summary_json, result_.summary_md) =
        WriteBatchSummary(registry_.Get(configs_.front().env_id).spec, result_.runs, out_);
  }
  return std::move(result_);
}

}  // namespace

MultiRunResult RunMany(const Registry& registry, const TrainConfigSource& base, const std::vector<uint64_t>& seeds,
                       const std::vector<SweepAxis>& sweep, const MultiRunOptions& options,
                       const std::function<void(const MultiRunProgress&)>& on_progress,
                       const std::function<bool()>& stop, std::ostream& notes) {
  Scheduler scheduler(registry, options, on_progress, notes);
  scheduler.Open(base, seeds, sweep);
  scheduler.Plan();
  return scheduler.Run(stop);
}

}  // namespace cugym::agent
