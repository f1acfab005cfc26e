// Many runs in one process (agents/run/multi_run.h): seed s of a batch gives the model bits of a solo
// run with seed s (K = 1, 3 and 8 on the CPU, apart and in lockstep), a grid of values, the
// summary, an interrupted batch resumed, an agent leaving a lockstep batch, the one-line errors
// for seed lists, sweep keys and unbatchable configs, and batches too big for memory.
#include "agents/run/multi_run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agents/off_policy/replay_memory.h"
#include "agents/run/config_source.h"
#include "agents/run/trainer.h"
#include "core/memory.h"
#include "tests/agents/agent_test_util.h"
#include "tests/core/test_util.h"

namespace cugym::agent {
namespace {

namespace fs = std::filesystem;

using testing::Builtins;
using testing::ScratchDir;

// A short CartPole run (the defaults otherwise); shorter under the sanitizers.
TrainConfigSource Source() {
  TrainConfigSource source;
  const std::string steps = testing::kSanitizerBuild ? "1500" : "3000";
  source.table = TomlTable{{"total_steps", ParseTomlValue(steps, "t")},
                           {"learning_starts", ParseTomlValue("500", "t")},
                           {"eval_interval", ParseTomlValue("1000", "t")},
                           {"eval_episodes", ParseTomlValue("4", "t")},
                           {"checkpoint_interval", ParseTomlValue("1000", "t")}};
  return source;
}

std::string Bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A CSV log's columns `keep` (0-based), row by row: evals.csv's and metrics.csv's without their
// times, which differ from run to run.
std::string Columns(const fs::path& csv, const std::vector<int>& keep) {
  std::ifstream in(csv);
  std::string line, out;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    for (int k : keep) out += (k < static_cast<int>(fields.size()) ? fields[k] : "") + ",";
    out += "\n";
  }
  EXPECT_GT(out.size(), 80u) << csv;  // the header and rows
  return out;
}

// eval.json's mean_return.
double ReadEvalReturn(const fs::path& run_dir) {
  const std::string json = Bytes(run_dir / "eval.json");
  const std::size_t at = json.find("\"mean_return\": ");
  EXPECT_NE(at, std::string::npos) << json;
  return std::stod(json.substr(at + 15));
}

// The model of a solo run of Source() with `seed` (and `keys`), trained into `dir`.
std::string SoloModel(uint64_t seed, const fs::path& dir, const TomlTable& keys = {}) {
  TrainConfigSource source = Source();
  source.overrides = keys;
  source.overrides["seed"] = ParseTomlValue(std::to_string(seed), "seed");
  std::ostringstream notes;
  const TrainConfig config = ResolveTrainConfig(Builtins(), source, notes);
  TrainRunOptions options;
  options.run_dir = dir.string();
  RunTraining(
      Builtins(), config, options, [] { return false; }, notes);
  return Bytes(dir / "model.safetensors");
}

MultiRunResult Batch(
    const fs::path& dir, const std::vector<uint64_t>& seeds, const std::vector<SweepAxis>& sweep, int jobs,
    const std::function<bool()>& stop = [] { return false; }, bool resume = false,
    std::optional<bool> lockstep = std::nullopt,
    const std::function<void(const MultiRunProgress&)>& on_progress = [](const MultiRunProgress&) {}) {
  MultiRunOptions options;
  options.out_dir = dir.string();
  options.jobs = jobs;
  options.resume = resume;
  options.lockstep = lockstep;
  std::ostringstream notes;
  return RunMany(Builtins(), Source(), seeds, sweep, options, on_progress, stop, notes);
}

TEST(MultiRun, SeedsOfABatchGiveTheSoloModels) {
  const ScratchDir scratch("cugym_multi_run_seeds");
  // K = 1, 3 and 8 (the sanitizer build, which runs the same code slower: 1 and 3).
  std::vector<std::vector<uint64_t>> batches = {{5}, {7, 2, 4}};
  if (!testing::kSanitizerBuild) batches.push_back({1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<std::string> solo(9);  // by seed
  for (const std::vector<uint64_t>& seeds : batches)
    for (uint64_t seed : seeds)
      if (solo[seed].empty()) solo[seed] = SoloModel(seed, scratch / ("solo_" + std::to_string(seed)));
  for (const std::vector<uint64_t>& seeds : batches) {
    const fs::path dir = scratch / ("batch_" + std::to_string(seeds.size()));
    const MultiRunResult result = Batch(dir, seeds, {}, 2);
    ASSERT_EQ(result.runs.size(), seeds.size());
    EXPECT_FALSE(result.interrupted);
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      EXPECT_EQ(result.runs[i].seed, seeds[i]);
      EXPECT_EQ(Bytes(dir / ("seed_" + std::to_string(seeds[i])) / "model.safetensors"), solo[seeds[i]])
          << "K = " << seeds.size() << ", seed " << seeds[i];
    }
    EXPECT_TRUE(fs::is_regular_file(dir / "summary.json"));
    EXPECT_TRUE(fs::is_regular_file(dir / "batch.toml"));
  }
}

TEST(MultiRun, AGridOfValuesGivesTheSoloRunsOfEachPointAndASummaryRowEach) {
  const ScratchDir scratch("cugym_multi_run_grid");
  const fs::path dir = scratch / "batch";
  const MultiRunResult result =
      Batch(dir, {1, 2}, {ParseSweep("learning_rate=1e-3,2.3e-3"), ParseSweep("gamma=0.98,0.99")}, 2);
  ASSERT_EQ(result.runs.size(), 8u);
  EXPECT_EQ(result.runs[0].point, "learning_rate=1e-3,gamma=0.98");
  EXPECT_EQ(result.runs[7].point, "learning_rate=2.3e-3,gamma=0.99");
  EXPECT_EQ(result.runs[7].seed, 2u);
  const TomlTable keys{{"learning_rate", ParseTomlValue("2.3e-3", "k")}, {"gamma", ParseTomlValue("0.98", "k")}};
  EXPECT_EQ(Bytes(dir / "learning_rate=2.3e-3,gamma=0.98" / "seed_2" / "model.safetensors"),
            SoloModel(2, scratch / "solo", keys));
  const std::string md = Bytes(dir / "summary.md");
  for (const char* point : {"learning_rate=1e-3,gamma=0.98", "learning_rate=1e-3,gamma=0.99",
                            "learning_rate=2.3e-3,gamma=0.98", "learning_rate=2.3e-3,gamma=0.99"})
    EXPECT_NE(md.find(std::string("| ") + point + " | 2 | "), std::string::npos) << point << "\n" << md;
  const std::string json = Bytes(dir / "summary.json");
  EXPECT_NE(json.find("\"final_iqm_ci\": ["), std::string::npos);
  EXPECT_NE(json.find("\"solved_final\": "), std::string::npos);
}

TEST(MultiRun, AnInterruptedBatchResumesToTheSameModels) {
  const ScratchDir scratch("cugym_multi_run_resume");
  const fs::path dir = scratch / "batch";
  std::atomic<int> polls{0};
  // stop() is polled every 20 ms: about 0.2 s in, the first of three runs (0.3 s or more each).
  MultiRunProgress last;
  const MultiRunResult first = Batch(
      dir, {3, 4, 5}, {}, 1, [&] { return ++polls > 10; }, false, std::nullopt,
      [&](const MultiRunProgress& p) { last = p; });
  EXPECT_TRUE(first.interrupted);
  // The progress counts a stopped run as interrupted, not done.
  int done = 0, interrupted = 0;
  for (const RunOutcome& run : first.runs) {
    interrupted += run.result.interrupted;
    done += !run.result.interrupted && !run.result.model.empty();
  }
  EXPECT_EQ(last.total, 3);
  EXPECT_EQ(last.done, done);
  EXPECT_EQ(last.interrupted, interrupted);
  EXPECT_LT(done, 3);
  EXPECT_EQ(last.running, 0);
  EXPECT_FALSE(fs::exists(dir / "summary.json"));
  const MultiRunResult resumed = Batch(
      dir, {}, {}, 2, [] { return false; }, true);
  EXPECT_FALSE(resumed.interrupted);
  ASSERT_EQ(resumed.runs.size(), 3u);
  for (uint64_t seed : {3u, 4u, 5u})
    EXPECT_EQ(Bytes(dir / ("seed_" + std::to_string(seed)) / "model.safetensors"),
              SoloModel(seed, scratch / ("solo_" + std::to_string(seed))))
        << seed;
  EXPECT_TRUE(fs::is_regular_file(dir / "summary.md"));
}

// Overrides given on resume reach the runs that resume, as they reach a run alone: --total-steps
// extends a finished batch. The seed and a swept key are the batch's own and cannot be overridden.
TEST(MultiRun, AResumedBatchTakesTheOverridesOfItsResume) {
  const ScratchDir scratch("cugym_multi_run_extend");
  const fs::path dir = scratch / "batch";
  Batch(dir, {3}, {ParseSweep("tau=1")}, 1);
  const TomlTable longer = {{"total_steps", ParseTomlValue(testing::kSanitizerBuild ? "2000" : "4000", "t")}};
  const auto resume = [&](const TomlTable& overrides) {
    TrainConfigSource source;
    source.overrides = overrides;
    MultiRunOptions options;
    options.out_dir = dir.string();
    options.resume = true;
    std::ostringstream notes;
    return RunMany(
        Builtins(), source, {}, {}, options, [](const MultiRunProgress&) {}, [] { return false; }, notes);
  };
  const MultiRunResult extended = resume(longer);
  ASSERT_EQ(extended.runs.size(), 1u);
  EXPECT_EQ(extended.runs[0].result.global_step, longer.at("total_steps").integer);
  // The same run alone: trained, then resumed with the longer total_steps.
  const fs::path solo = scratch / "solo";
  SoloModel(3, solo, {{"tau", ParseTomlValue("1", "t")}});
  TrainConfigSource source;
  source.resume_dir = solo.string();
  source.overrides = longer;
  std::ostringstream notes;
  TrainRunOptions options;
  options.run_dir = solo.string();
  options.resume = true;
  RunTraining(
      Builtins(), ResolveTrainConfig(Builtins(), source, notes), options, [] { return false; }, notes);
  EXPECT_EQ(Bytes(dir / "tau=1" / "seed_3" / "model.safetensors"), Bytes(solo / "model.safetensors"));
  EXPECT_EQ(Columns(dir / "tau=1" / "seed_3" / "evals.csv", {0, 2, 3}), Columns(solo / "evals.csv", {0, 2, 3}));
  using cugym::testing::InvalidArgumentMessage;
  EXPECT_EQ(InvalidArgumentMessage([&] {
              resume({{"seed", ParseTomlValue("4", "t")}});
            }),
            "resume of a batch: its runs keep their seeds (batch.toml); drop the seed override");
  EXPECT_EQ(InvalidArgumentMessage([&] {
              resume({{"tau", ParseTomlValue("0.5", "t")}});
            }),
            "resume of a batch: it sweeps tau (batch.toml); drop its override");
}

// A grid point's seeds in lockstep (one agent of a lane per seed): each seed's run folder holds
// the model, best model, evaluations and metrics rows of the solo run with that seed, K = 1, 3 and
// 8, and with two workers (the CPU splits the seeds into a batch per worker: 7, 2 and 4).
TEST(MultiRun, SeedsInLockstepGiveTheSoloModels) {
  const ScratchDir scratch("cugym_multi_run_lockstep");
  std::vector<std::pair<std::vector<uint64_t>, int>> batches = {{{5}, 1}, {{7, 2, 4}, 1}, {{7, 2, 4}, 2}};
  if (!testing::kSanitizerBuild) batches.push_back({{1, 2, 3, 4, 5, 6, 7, 8}, 1});
  for (const auto& [seeds, jobs] : batches) {
    const fs::path dir = scratch / ("batch_" + std::to_string(seeds.size()) + "_" + std::to_string(jobs));
    MultiRunOptions options;
    options.out_dir = dir.string();
    options.jobs = jobs;
    options.lockstep = true;
    std::ostringstream notes;
    const MultiRunResult result = RunMany(
        Builtins(), Source(), seeds, {}, options, [](const MultiRunProgress&) {}, [] { return false; }, notes);
    EXPECT_NE(
        notes.str().find(jobs == 1 ? "in lockstep as one batch, 1 at a time" : "in lockstep as 2 batches, 2 at a time"),
        std::string::npos)
        << notes.str();
    // Each batch of more than one says where its time went once it ends.
    if (jobs == 1 && seeds.size() > 1) {
      EXPECT_NE(notes.str().find("a batch of " + std::to_string(seeds.size()) + " agents took "), std::string::npos)
          << notes.str();
    }
    ASSERT_EQ(result.runs.size(), seeds.size());
    EXPECT_FALSE(result.interrupted);
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      const fs::path solo = scratch / ("solo_" + std::to_string(seeds[i]));
      if (!fs::exists(solo)) SoloModel(seeds[i], solo);
      const fs::path run = dir / ("seed_" + std::to_string(seeds[i]));
      EXPECT_EQ(Bytes(run / "model.safetensors"), Bytes(solo / "model.safetensors"))
          << "K = " << seeds.size() << ", seed " << seeds[i];
      EXPECT_EQ(Bytes(run / "best.safetensors"), Bytes(solo / "best.safetensors")) << seeds[i];
      EXPECT_EQ(Columns(run / "evals.csv", {0, 2, 3, 4, 5, 6}), Columns(solo / "evals.csv", {0, 2, 3, 4, 5, 6}))
          << seeds[i];
      // metrics.csv without wall_time and sps: episodes, losses, Q values, epsilon, evaluations.
      EXPECT_EQ(Columns(run / "metrics.csv", {0, 2, 3, 4, 5, 6, 8}),
                Columns(solo / "metrics.csv", {0, 2, 3, 4, 5, 6, 8}))
          << seeds[i];
      EXPECT_EQ(result.runs[i].result.eval.mean_return, ReadEvalReturn(solo)) << seeds[i];
    }
    EXPECT_TRUE(fs::is_regular_file(dir / "summary.md"));
  }
}

// The shipped CartPole config stops each run once an evaluation clears the threshold: in lockstep,
// seed 8 stops at 5,000 steps, seed 1 at 20,000 and seed 5 at 25,000 (2-core CPU figures). Seed 8
// waits for its final evaluation (its lane trains on) until seed 1 stops; the batch then shrinks to
// seed 5, and both are evaluated first (seed 8 from its model file). Every seed keeps its solo
// run's model, evaluations and final evaluation.
TEST(MultiRun, AnAgentThatStopsEarlyInLockstepKeepsItsSoloResult) {
  if (testing::kSanitizerBuild) GTEST_SKIP() << "25,000 steps of three agents: too slow under the sanitizers";
  const ScratchDir scratch("cugym_multi_run_early");
  TrainConfigSource shipped;
  shipped.config_path = std::string(CUGYM_SOURCE_DIR) + "/configs/cartpole.toml";
  MultiRunOptions options;
  options.out_dir = (scratch / "batch").string();
  options.lockstep = true;
  std::ostringstream notes;
  bool waited = false, shrunk = false;  // seed 8 stopped but not done; seeds 8 and 1 done, 5 training
  const MultiRunResult batch = RunMany(
      Builtins(), shipped, {8, 1, 5}, {}, options,
      [&](const MultiRunProgress& p) {
        waited |= p.running == 2 && p.done == 0;
        shrunk |= p.running == 1 && p.done == 2;
      },
      [] { return false; }, notes);
  EXPECT_TRUE(waited);
  EXPECT_TRUE(shrunk);
  ASSERT_EQ(batch.runs.size(), 3u);
  EXPECT_LT(batch.runs[0].result.global_step, batch.runs[1].result.global_step) << "seed 8 stopped first";
  EXPECT_LT(batch.runs[1].result.global_step, batch.runs[2].result.global_step) << "seed 5 stopped last";
  for (const RunOutcome& run : batch.runs) {
    TrainConfigSource source = shipped;
    source.overrides["seed"] = ParseTomlValue(std::to_string(run.seed), "seed");
    const TrainConfig config = ResolveTrainConfig(Builtins(), source, notes);
    TrainRunOptions solo;
    solo.run_dir = (scratch / ("solo_" + std::to_string(run.seed))).string();
    const TrainRunResult alone = RunTraining(
        Builtins(), config, solo, [] { return false; }, notes);
    EXPECT_EQ(run.result.global_step, alone.global_step) << run.seed;
    EXPECT_EQ(Bytes(run.result.model), Bytes(alone.model)) << run.seed;
    EXPECT_EQ(run.result.eval.mean_return, alone.eval.mean_return) << run.seed;
    EXPECT_EQ(run.result.eval.std_return, alone.eval.std_return) << run.seed;
    EXPECT_EQ(Columns(fs::path(run.result.run_dir) / "evals.csv", {0, 2, 3, 4, 5, 6}),
              Columns(fs::path(solo.run_dir) / "evals.csv", {0, 2, 3, 4, 5, 6}))
        << run.seed;
  }
}

// PQN's seeds in a batch, trained apart and in lockstep (one agent of a lane per seed): each gives
// its solo run's model file, evaluation and evals.csv, bit for bit.
TEST(MultiRun, PqnSeedsGiveTheSoloModels) {
  const ScratchDir scratch("cugym_multi_run_pqn");
  TrainConfigSource source;
  source.config_path = std::string(CUGYM_SOURCE_DIR) + "/configs/cartpole_pqn.toml";
  source.overrides["total_steps"] = ParseTomlValue("2048", "t");
  source.overrides["eval_interval"] = ParseTomlValue("1024", "t");
  source.overrides["eval_episodes"] = ParseTomlValue("4", "t");
  std::ostringstream notes;
  std::map<uint64_t, std::string> solo_dirs;
  for (const bool lockstep : {false, true}) {
    SCOPED_TRACE(lockstep ? "lockstep" : "apart");
    MultiRunOptions options;
    options.out_dir = (scratch / (lockstep ? "lockstep" : "apart")).string();
    options.jobs = 2;
    options.lockstep = lockstep;
    const MultiRunResult batch = RunMany(
        Builtins(), source, {3, 8, 21}, {}, options, [](const MultiRunProgress&) {}, [] { return false; }, notes);
    ASSERT_EQ(batch.runs.size(), 3u);
    for (const RunOutcome& run : batch.runs) {
      std::string& solo_dir = solo_dirs[run.seed];
      if (solo_dir.empty()) {
        TrainConfigSource one = source;
        one.overrides["seed"] = ParseTomlValue(std::to_string(run.seed), "seed");
        TrainRunOptions solo;
        solo.run_dir = solo_dir = (scratch / ("solo_" + std::to_string(run.seed))).string();
        RunTraining(
            Builtins(), ResolveTrainConfig(Builtins(), one, notes), solo, [] { return false; }, notes);
      }
      EXPECT_EQ(Bytes(run.result.model), Bytes(solo_dir + "/model.safetensors")) << run.seed;
      EXPECT_EQ(Columns(fs::path(run.result.run_dir) / "evals.csv", {0, 2, 3, 4, 5, 6}),
                Columns(fs::path(solo_dir) / "evals.csv", {0, 2, 3, 4, 5, 6}))
          << run.seed;
    }
    EXPECT_NE(Bytes(batch.runs[0].result.model), Bytes(batch.runs[1].result.model)) << "the seeds differ";
  }
}

// Ctrl-C stops every agent of a lockstep batch at one step, each with a checkpoint; the resumed
// batch ends with the uninterrupted solo runs' models. Runs trained apart before (stopped at
// different steps, finished, or never started) resume in lockstep too, in groups of one step.
TEST(MultiRun, AnInterruptedLockstepBatchResumesToTheSameModels) {
  const ScratchDir scratch("cugym_multi_run_lockstep_resume");
  const std::vector<uint64_t> seeds = {3, 4, 5};
  for (const bool first_in_lockstep : {true, false}) {
    const fs::path dir = scratch / (first_in_lockstep ? "lockstep" : "apart");
    std::atomic<int> polls{0};
    // stop() is polled every 20 ms: about 0.3 s in, mid-run (a run takes 0.3 s or more).
    const MultiRunResult first = Batch(
        dir, seeds, {}, 1, [&] { return ++polls > 15; }, false, first_in_lockstep);
    EXPECT_TRUE(first.interrupted);
    if (first_in_lockstep) {
      std::set<std::string> steps;  // every agent's newest checkpoint, at one step
      for (uint64_t seed : seeds)
        steps.insert(fs::path(NewestCheckpoint((dir / ("seed_" + std::to_string(seed))).string())).filename());
      EXPECT_EQ(steps.size(), 1u);
    }
    const MultiRunResult resumed = Batch(
        dir, {}, {}, 1, [] { return false; }, true, true);
    EXPECT_FALSE(resumed.interrupted);
    ASSERT_EQ(resumed.runs.size(), 3u);
    for (uint64_t seed : seeds) {
      const fs::path solo = scratch / ("solo_" + std::to_string(seed));
      if (!fs::exists(solo)) SoloModel(seed, solo);
      EXPECT_EQ(Bytes(dir / ("seed_" + std::to_string(seed)) / "model.safetensors"), Bytes(solo / "model.safetensors"))
          << (first_in_lockstep ? "lockstep" : "apart") << ", seed " << seed;
    }
  }
}

// An agent whose on_eval asks it to stop leaves the batch with a checkpoint at that step while the
// others go on (in a batch shrunk to them); resumed alone it ends with the solo run's model. Seeds
// whose gradients are clipped train in lockstep as their solo runs.
TEST(MultiRun, AnAgentLeavesTheBatchAloneAndClippedSeedsTrainInLockstep) {
  using cugym::testing::InvalidArgumentMessage;
  const ScratchDir scratch("cugym_multi_run_leave");
  std::ostringstream notes;
  TrainConfig config = ResolveTrainConfig(Builtins(), Source(), notes);
  const std::vector<uint64_t> seeds = {6, 9};
  std::vector<TrainRunOptions> runs(2);
  for (std::size_t k = 0; k < 2; ++k) runs[k].run_dir = (scratch / ("seed_" + std::to_string(seeds[k]))).string();
  runs[0].on_eval = [](const TrainEvaluation& e) { return e.global_step >= 1000; };  // the first evaluation
  std::vector<std::size_t> order;
  const std::vector<TrainRunResult> results =
      Trainer(Builtins(), config, seeds, runs, notes)
          .Run([] { return false; }, [&](std::size_t k, const TrainRunResult&) { order.push_back(k); });
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1}));
  EXPECT_NE(notes.str().find("1 of 2 agents train on at step 1000; the batch shrinks to them"), std::string::npos)
      << notes.str();
  // Where the batch's time went: seed 9's final evaluation is the one round (seed 6 was
  // interrupted), after the one shrink.
  EXPECT_NE(notes.str().find("cugym train: a batch of 2 agents took "), std::string::npos) << notes.str();
  EXPECT_NE(notes.str().find(" s (1 round), shrinking "), std::string::npos) << notes.str();
  EXPECT_NE(notes.str().find(" s (1 shrink), file syncs "), std::string::npos) << notes.str();
  EXPECT_TRUE(results[0].interrupted);
  EXPECT_EQ(results[0].global_step, 1000);
  EXPECT_FALSE(results[1].interrupted);
  EXPECT_GE(results[1].global_step, config.total_steps);  // whole vector steps: at most num_envs - 1 more
  TrainRunOptions resume;
  resume.run_dir = runs[0].run_dir;
  resume.resume = true;
  config.seed = 6;
  RunTraining(
      Builtins(), config, resume, [] { return false; }, notes);
  EXPECT_EQ(Bytes(fs::path(runs[0].run_dir) / "model.safetensors"), SoloModel(6, scratch / "solo_6"));
  EXPECT_EQ(Bytes(fs::path(runs[1].run_dir) / "model.safetensors"), SoloModel(9, scratch / "solo_9"));

  // Gradient clipping in lockstep: each seed's network clipped by its own norm, each seed its solo
  // run's bits.
  const std::vector<SweepAxis> clipped = {ParseSweep("max_grad_norm=0.5")};
  Batch(
      scratch / "clipped", {1, 2}, clipped, 1, [] { return false; }, false, true);
  for (uint64_t seed : {1, 2}) {
    EXPECT_EQ(Bytes(scratch / "clipped" / "max_grad_norm=0.5" / ("seed_" + std::to_string(seed)) / "model.safetensors"),
              SoloModel(seed, scratch / ("clipped_solo_" + std::to_string(seed)),
                        {{"max_grad_norm", ParseTomlValue("0.5", "t")}}))
        << "seed " << seed;
  }
  EXPECT_EQ(InvalidArgumentMessage([&] { Trainer(Builtins(), config, {1}, {}, notes); }),
            "Trainer: one run folder per seed, and at least one");
}

// A lockstep batch writes each step's files as one group (AtomicFileGroup): its checkpoint rotation
// counts the checkpoint whose rename waits for the group, so each run keeps keep_checkpoints of
// them, the newest, and no temporary file is left.
TEST(MultiRun, ALockstepBatchKeepsItsNewestCheckpoints) {
  const ScratchDir scratch("cugym_multi_run_rotation");
  std::ostringstream notes;
  TrainConfig config = ResolveTrainConfig(Builtins(), Source(), notes);
  config.total_steps = 2000;  // checkpoints at 504, 1000, 1504 and 2000, an evaluation at each
  config.checkpoint_interval = 500;
  config.eval_interval = 500;
  config.keep_checkpoints = 2;
  const std::vector<uint64_t> seeds = {2, 7};
  std::vector<TrainRunOptions> runs(2);
  std::size_t most = 0;  // checkpoints on disk at any evaluation
  for (std::size_t k = 0; k < 2; ++k) {
    runs[k].run_dir = (scratch / ("seed_" + std::to_string(seeds[k]))).string();
    runs[k].on_eval = [&most, dir = fs::path(runs[k].run_dir) / "checkpoints"](const TrainEvaluation&) {
      const auto files = fs::directory_iterator(dir);
      most = std::max<std::size_t>(most, std::distance(fs::begin(files), fs::end(files)));
      return false;
    };
  }
  Trainer(Builtins(), config, seeds, runs, notes).Run([] { return false; });
  EXPECT_EQ(most, 2u) << "at most keep_checkpoints during the run";
  // The last two: the end (2000, a whole number of vector steps), and 1504, the first vector step at
  // or past the interval before it.
  const int64_t n = config.num_envs, previous = (config.total_steps - 500 + n - 1) / n * n;
  char last[64], before[64];
  std::snprintf(last, sizeof(last), "step_%012lld.safetensors", static_cast<long long>(config.total_steps));
  std::snprintf(before, sizeof(before), "step_%012lld.safetensors", static_cast<long long>(previous));
  for (const TrainRunOptions& run : runs) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(fs::path(run.run_dir) / "checkpoints"))
      names.insert(entry.path().filename().string());
    EXPECT_EQ(names, (std::set<std::string>{before, last})) << run.run_dir;
    for (const auto& entry : fs::directory_iterator(run.run_dir))
      EXPECT_NE(entry.path().filename().string().front(), '.') << "a temporary file left: " << entry.path();
  }
}

TEST(MultiRun, SeedListsAndSweepKeysAreCheckedWithOneLine) {
  using cugym::testing::InvalidArgumentMessage;
  EXPECT_EQ(ParseSeedList("1-3,7"), (std::vector<uint64_t>{1, 2, 3, 7}));
  EXPECT_EQ(ParseSeedList("0"), (std::vector<uint64_t>{0}));
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSeedList("3-1"); }), "seeds '3-1': bad range '3-1'");
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSeedList("1,x"); }), "seeds '1,x': 'x' is not a seed (an integer >= 0)");
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSeedList("2,1-2"); }), "seeds '2,1-2': a seed appears twice");
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSeedList("-1"); }), "seeds '-1': '-1' is not a seed (an integer >= 0)");
  EXPECT_EQ(ParseSeedList("1-100000").size(), 100000u);
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSeedList("0-100000"); }),
            "seeds '0-100000': range '0-100000' has 100001 seeds, more than 100000 in one batch");
  const SweepAxis axis = ParseSweep("tau=0.1,1");
  EXPECT_EQ(axis.key, "tau");
  ASSERT_EQ(axis.values.size(), 2u);
  EXPECT_EQ(
      InvalidArgumentMessage([] { ParseSweep("hidden_sizes=[64]"); }).rfind("sweep key 'hidden_sizes' cannot vary", 0),
      0u);
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSweep("num_envs=8,16"); }).rfind("sweep key 'num_envs' cannot vary", 0),
            0u);
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSweep("lr=1"); }).rfind("unknown config key 'lr'", 0), 0u);
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSweep("gamma=x"); }), "sweep gamma=x: gamma must be a number");
  EXPECT_EQ(InvalidArgumentMessage([] { ParseSweep("gamma"); }), "sweep needs KEY=V1,V2,..., got 'gamma'");
  // A folder that holds something else is not overwritten.
  const ScratchDir scratch("cugym_multi_run_errors");
  std::ofstream(scratch / "keep.txt") << "mine";
  EXPECT_EQ(InvalidArgumentMessage([&] { Batch(scratch.path, {1}, {}, 1); }).rfind("batch folder ", 0), 0u);
  EXPECT_EQ(Bytes(scratch / "keep.txt"), "mine");
  // A key swept twice or a value listed twice would train one config twice (or clash on its
  // folder after the first run): refused before a folder is made.
  EXPECT_EQ(InvalidArgumentMessage([&] {
              Batch(scratch / "twice", {1}, {ParseSweep("tau=0.1"), ParseSweep("tau=0.5")}, 1);
            }),
            "sweep key 'tau' given twice; list all its values in one sweep (tau=V1,V2,...)");
  EXPECT_EQ(InvalidArgumentMessage([&] { Batch(scratch / "twice", {1}, {ParseSweep("tau=0.1,0.5,0.1")}, 1); }),
            "sweep key 'tau': value 0.1 is listed twice");
  EXPECT_EQ(InvalidArgumentMessage([&] { Batch(scratch / "twice", {1}, {ParseSweep("learning_rate=1e-3,0.001")}, 1); }),
            "sweep key 'learning_rate': values 1e-3 and 0.001 are the same");
  EXPECT_FALSE(fs::exists(scratch / "twice"));
  // An edited batch.toml is checked as the flags are.
  const auto resume_with = [&](const std::string& toml) {
    fs::create_directories(scratch / "edited");
    std::ofstream(scratch / "edited" / "batch.toml") << toml;
    return InvalidArgumentMessage([&] {
      Batch(
          scratch / "edited", {}, {}, 1, [] { return false; }, true);
    });
  };
  const std::string file = (scratch / "edited" / "batch.toml").string();
  EXPECT_EQ(resume_with("seeds = [1, 1]\nsweep_order = []\n"), file + ": seeds must list one seed or more, each once");
  EXPECT_EQ(resume_with("seeds = [1, -2]\nsweep_order = []\n"), file + ": seeds must be integers >= 0");
  EXPECT_EQ(resume_with("seeds = [1]\nsweep_order = [\"num_envs\"]\n[sweep]\nnum_envs = [4]\n"),
            file + ": 'num_envs' in sweep_order is not a key a batch sweeps");
  EXPECT_EQ(resume_with("seeds = [1]\nsweep_order = [\"tau\"]\n[sweep]\ntau = [0.5, 0.5]\n"),
            file + ": sweep key 'tau': value 0.5 is listed twice");
  EXPECT_NE(InvalidArgumentMessage([&] {
              Batch(
                  scratch / "nothing", {}, {}, 1, [] { return false; }, true);
            }).find("no batch.toml there"),
            std::string::npos);
}

// Replay memory dominates a DQN run's memory: a batch whose runs alive at once would not fit
// together is refused before it writes or trains anything, naming the runs and the bytes; one run
// that alone would not fit is refused by its replay memory before allocating.
TEST(MultiRun, RunsThatWouldNotFitTogetherAreRefusedFirst) {
  using cugym::testing::InvalidArgumentMessage;
  // Each run's replay memory at 70% of the free host memory: one fits, two do not (by a margin
  // that other processes' allocations meanwhile do not close).
  const double available = static_cast<double>(AvailableBytes(Device::kCpu));
  const int64_t per_transition = ReplayBytes(ReplayOptions{2, 4, 1, 0, false, {}}) -
                                 ReplayBytes(ReplayOptions{1, 4, 1, 0, false, {}});  // CartPole: obs 4
  EXPECT_EQ(per_transition, 2 * 4 * 4 + 13);
  const int64_t buffer = static_cast<int64_t>(0.7 * available / static_cast<double>(per_transition));
  const ReplayOptions replay{buffer, 4, 8, 128, false, {}};  // the defaults: no prioritized replay
  EXPECT_GT(ReplayBytes(replay), 0.65 * available);
  EXPECT_LT(ReplayBytes(replay), 0.9 * available);

  const ScratchDir scratch("cugym_multi_run_memory");
  MultiRunOptions options;
  options.out_dir = (scratch / "batch").string();
  options.jobs = 2;
  TrainConfigSource source = Source();
  source.overrides["buffer_size"] = ParseTomlValue(std::to_string(buffer), "buffer_size");
  std::ostringstream notes;
  const std::string message = InvalidArgumentMessage([&] {
    RunMany(
        Builtins(), source, {1, 2, 3}, {}, options, [](const MultiRunProgress&) {}, [] { return false; }, notes);
  });
  EXPECT_EQ(message.rfind("3 runs, 2 at a time: their replay memories need 2 x ", 0), 0u) << message;
  EXPECT_NE(message.find("MiB of cpu memory but only "), std::string::npos) << message;
  EXPECT_NE(message.find("buffer_size " + std::to_string(buffer) +
                         " transitions of 4 floats per observation; lower "
                         "--jobs or buffer_size)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(scratch / "batch")) << "nothing written";
  // In lockstep the runs of a grid point are alive together.
  options.out_dir = (scratch / "lockstep").string();
  options.lockstep = true;
  const std::string lockstep = InvalidArgumentMessage([&] {
    RunMany(
        Builtins(), source, {1, 2, 3}, {}, options, [](const MultiRunProgress&) {}, [] { return false; }, notes);
  });
  EXPECT_EQ(lockstep.rfind("3 runs, 3 at a time: their replay memories need 3 x ", 0), 0u) << lockstep;
  EXPECT_NE(lockstep.find("; fewer seeds per batch, --lockstep off, or a smaller buffer_size)"), std::string::npos)
      << lockstep;

  // One run, twice the free memory: its replay memory refuses before allocating.
  const ReplayOptions too_big{2 * buffer, 4, 8, 64, false, {}};
  const std::string alone = InvalidArgumentMessage([&] { ReplayMemory(Device::kCpu, too_big); });
  EXPECT_EQ(alone.rfind("a replay memory needs ", 0), 0u) << alone;
  EXPECT_NE(alone.find("(buffer_size " + std::to_string(2 * buffer) +
                       " transitions of 4 floats per observation, 8 envs; lower buffer_size)"),
            std::string::npos)
      << alone;
}

}  // namespace
}  // namespace cugym::agent
