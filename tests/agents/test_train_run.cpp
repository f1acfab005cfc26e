// Run folders (agents/run/run_folder.h, through the driver in agents/run/trainer.h): evaluations during training into
// evals.csv, best.safetensors and eval.json's best and threshold fields; evaluations leave the training itself
// unchanged; a refused run leaves no folder; a resume falls back past damaged checkpoints.
#include "agents/run/trainer.h"

#include "agents/common/checkpoint.h"
#include "agents/off_policy/dqn.h"
#include "agents/run/run_folder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/memory.h"
#include "core/safetensors.h"
#include "tests/agents/agent_test_util.h"
#include "tests/core/test_util.h"

namespace cugym::agent {
namespace {

namespace fs = std::filesystem;

using testing::Builtins;
using testing::ScratchDir;

TrainConfig Small(uint64_t seed) {
  TrainConfig config;
  config.seed = seed;
  config.total_steps = 4000;
  config.learning_starts = 500;
  config.log_interval = 1000;
  config.checkpoint_interval = 0;
  config.eval_interval = 1000;
  config.eval_episodes = 12;
  return config;
}

std::vector<std::string> Lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<float> Weights(const fs::path& path) {
  std::vector<float> all;
  for (const NamedTensor& t : ReadSafetensors(path.string()).tensors) {
    const std::vector<float> v = t.ToF32();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// Member `key` of a parsed JSON object (a failed expectation and null when absent).
const JsonValue& Member(const JsonValue& object, const std::string& key) {
  static const JsonValue kNull;
  for (const auto& [name, value] : object.members) {
    if (name == key) return value;
  }
  ADD_FAILURE() << "no member " << key;
  return kNull;
}
double Number(const JsonValue& v) { return v.kind == JsonKind::kNumber ? std::stod(v.text) : -1e300; }

TrainRunResult TrainInto(const TrainConfig& config, const fs::path& dir) {
  fs::remove_all(dir);
  TrainRunOptions options;
  options.run_dir = dir.string();
  std::ostringstream notes;
  return RunTraining(
      Builtins(), config, options, [] { return false; }, notes);
}

TEST(TrainRun, EvaluationsGoToEvalsCsvBestModelAndEvalJson) {
  const ScratchDir scratch("cugym_train_run_evals");
  const fs::path dir = scratch / "run";
  const TrainRunResult r = TrainInto(Small(3), dir);
  const std::vector<std::string> evals = Lines(dir / "evals.csv");
  ASSERT_EQ(evals.size(), 5u);  // header + steps 1000, 2000, 3000, 4000
  EXPECT_EQ(evals[0], "global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,eval_seconds");
  EXPECT_EQ(evals[1].substr(0, 5), "1000,");
  EXPECT_NE(evals[4].find(",12,"), std::string::npos) << evals[4];  // 12 episodes each
  // metrics.csv carries the latest evaluation in its last column.
  const std::vector<std::string> metrics = Lines(dir / "metrics.csv");
  EXPECT_EQ(metrics[0].substr(metrics[0].rfind(',') + 1), "eval_return");
  EXPECT_EQ(metrics[1].back(), ',') << "no evaluation before the first row's step: " << metrics[1];

  ASSERT_GE(r.best_step, 1000);
  const SafetensorsFile best = ReadSafetensors((dir / "best.safetensors").string());
  EXPECT_EQ(best.metadata.at("cugym.global_step"), std::to_string(r.best_step));
  const JsonValue json = ParseJson(Lines(dir / "eval.json").at(0), "eval.json");
  EXPECT_EQ(Number(Member(json, "threshold")), 475.0);
  EXPECT_EQ(Number(Member(Member(json, "best"), "global_step")), static_cast<double>(r.best_step));
  EXPECT_NEAR(Number(Member(Member(json, "best"), "mean_return")), r.best.mean_return, 1e-6);
  EXPECT_NEAR(Number(Member(json, "mean_return")), r.eval.mean_return, 1e-6);  // the final evaluation, flat as before
  if (r.threshold_step < 0) {
    EXPECT_EQ(Member(json, "threshold_step").kind, JsonKind::kNull);
  }
}

TEST(TrainRun, EvaluationsDoNotChangeTheTraining) {
  TrainConfig with = Small(5), without = Small(5);
  without.eval_episodes = 0;
  const ScratchDir scratch("cugym_train_run_ab");
  const fs::path a = scratch / "a", b = scratch / "b";
  TrainInto(with, a);
  TrainInto(without, b);
  EXPECT_EQ(Weights(a / "model.safetensors"), Weights(b / "model.safetensors"));
  EXPECT_FALSE(fs::exists(b / "best.safetensors"));
  EXPECT_EQ(Lines(b / "evals.csv").size(), 1u);  // the header only
}

TEST(TrainRun, StopMarginWantsTheMeanClearOfTheThresholdByStandardErrors) {
  // A run interrupted at step 1000, whose evaluation there is rewritten to a mean of 480 with std
  // 50 over 100 episodes: 5 above CartPole's 475, one standard error. Resumed with the early stop,
  // it ends at once for margins up to 1 and trains on for 2.
  const ScratchDir scratch("cugym_train_run_margin");
  TrainConfig config = Small(4);
  config.stop_at_threshold = true;
  config.checkpoint_interval = 1000;
  const fs::path first = scratch / "first";
  TrainRunOptions options;
  options.run_dir = first.string();
  std::ostringstream notes;
  bool at_1000 = false;
  options.on_log = [&](const MetricsRow& p) { at_1000 = at_1000 || p.global_step >= 1000; };
  const TrainRunResult interrupted = RunTraining(
      Builtins(), config, options, [&] { return at_1000; }, notes);
  options.on_log = nullptr;
  ASSERT_TRUE(interrupted.interrupted);
  ASSERT_EQ(interrupted.global_step, 1000);
  {
    std::ofstream evals(first / "evals.csv", std::ios::trunc);
    evals << "global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,eval_seconds\n"
          << "1000,0.5,480,50,300,500,100,0.01\n";
  }
  for (double margin : {0.0, 1.0, 2.0}) {
    const fs::path dir = scratch / ("margin_" + std::to_string(margin));
    fs::copy(first, dir, fs::copy_options::recursive);
    config.stop_margin = margin;
    options.run_dir = dir.string();
    options.resume = true;
    const TrainRunResult r = RunTraining(
        Builtins(), config, options, [] { return false; }, notes);
    EXPECT_EQ(r.threshold_step, 1000) << "the time to threshold is the first mean at 475, whatever the margin";
    EXPECT_EQ(r.global_step, margin <= 1.0 ? 1000 : config.total_steps) << "margin " << margin;
  }
  config.stop_margin = -1;
  EXPECT_THROW(config.Validate(), std::invalid_argument);
}

// on_eval returning true ends the run as Ctrl-C does, interrupted, at every evaluation, the last
// one too (where the steps are done as well): Ray Tune's trainable reports each evaluation so and
// resumes the run; the resume after the last evaluation completes it.
TEST(TrainRun, AnOnEvalStopIsAnInterruptionAtEveryEvaluation) {
  const ScratchDir scratch("cugym_train_run_on_eval");
  const TrainConfig config = Small(3);  // evaluations at 1000, 2000, 3000 and 4000 env steps
  TrainRunOptions options;
  options.run_dir = (scratch / "run").string();
  options.on_eval = [](const TrainEvaluation&) { return true; };
  std::ostringstream notes;
  std::vector<int64_t> stops;
  for (int part = 0; part < 6; ++part) {
    const TrainRunResult r = RunTraining(
        Builtins(), config, options, [] { return false; }, notes);
    options.resume = true;
    if (!r.interrupted) {
      EXPECT_EQ(r.global_step, config.total_steps);
      EXPECT_TRUE(r.evaluated);
      break;
    }
    stops.push_back(r.global_step);
  }
  EXPECT_EQ(stops, (std::vector<int64_t>{1000, 2000, 3000, 4000}));
}

// A run refused before it trains (here its replay memory, larger than the free memory) leaves no
// run folder behind, and a folder that holds something is never written into.
TEST(TrainRun, ARefusedRunLeavesNoFolder) {
  const ScratchDir scratch("cugym_train_run_refused");
  TrainConfig config = Small(1);
  config.buffer_size = static_cast<int64_t>(2.0 * static_cast<double>(AvailableBytes(Device::kCpu)) / 32.0);
  EXPECT_THROW(TrainInto(config, scratch / "run"), std::invalid_argument);
  EXPECT_FALSE(fs::exists(scratch / "run"));
  std::vector<TrainRunOptions> runs(2);
  runs[0].run_dir = (scratch / "a").string();
  runs[1].run_dir = (scratch / "b").string();
  std::ostringstream notes;
  EXPECT_THROW(Trainer(Builtins(), config, {1, 2}, runs, notes), std::invalid_argument);
  EXPECT_FALSE(fs::exists(scratch / "a") || fs::exists(scratch / "b"));
  fs::create_directories(scratch / "b");
  std::ofstream(scratch / "b" / "keep.txt") << "mine";
  EXPECT_THROW(Trainer(Builtins(), Small(1), {1, 2}, runs, notes), std::invalid_argument);
  EXPECT_FALSE(fs::exists(scratch / "a"));
  EXPECT_EQ(fs::file_size(scratch / "b" / "keep.txt"), 4u);
}

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Flips one bit `at` bytes before the end of the file (in its last tensor's data).
void FlipBitNearTheEnd(const fs::path& path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-at, std::ios::end);
  char c = 0;
  f.get(c);
  f.seekp(-at, std::ios::end);
  f.put(static_cast<char>(c ^ 0x10));
}

// A resume skips a damaged newest checkpoint (one flipped bit, a truncated file, an empty one), says
// so, and goes on from the newest intact one: the same model bits as a resume from that one (and as
// the run that never stopped). With every checkpoint damaged it stops, one line listing them.
TEST(TrainRun, AResumeFallsBackToTheNewestIntactCheckpoint) {
  const ScratchDir scratch("cugym_train_run_fallback");
  TrainConfig config = Small(4);
  config.total_steps = 2000;
  config.checkpoint_interval = 500;  // 1000, 1504 and 2000 kept (vector steps of 8)
  const fs::path whole = scratch / "whole";
  TrainInto(config, whole);
  const std::string model = FileBytes(whole / "model.safetensors");
  const auto resume = [&](const fs::path& dir, std::ostringstream& notes) {
    TrainRunOptions options;
    options.run_dir = dir.string();
    options.resume = true;
    return RunTraining(
        Builtins(), config, options, [] { return false; }, notes);
  };
  for (const std::string damage : {"flipped", "truncated", "empty", "removed"}) {
    SCOPED_TRACE(damage);
    const fs::path dir = scratch / damage;
    fs::copy(whole, dir, fs::copy_options::recursive);
    fs::remove(dir / "model.safetensors");
    const fs::path newest = dir / "checkpoints" / "step_000000002000.safetensors";
    if (damage == "flipped") FlipBitNearTheEnd(newest, 3);
    if (damage == "truncated") fs::resize_file(newest, fs::file_size(newest) / 2);
    if (damage == "empty") fs::resize_file(newest, 0);
    if (damage == "removed") fs::remove(newest);
    std::ostringstream notes;
    const TrainRunResult r = resume(dir, notes);
    EXPECT_EQ(notes.str().find("skipping") != std::string::npos, damage != "removed") << notes.str();
    if (damage == "flipped") {
      EXPECT_NE(notes.str().find("is damaged"), std::string::npos) << "the tensor named: " << notes.str();
    }
    EXPECT_NE(notes.str().find("resuming " + dir.string() + " at step 1504"), std::string::npos) << notes.str();
    EXPECT_EQ(r.global_step, 2000);
    EXPECT_EQ(FileBytes(dir / "model.safetensors"), model) << "the run resumed from step 1504's checkpoint";
  }
  // Every checkpoint damaged: one line that lists them, and nothing trains.
  const fs::path dir = scratch / "all";
  fs::copy(whole, dir, fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(dir / "checkpoints")) FlipBitNearTheEnd(entry.path(), 3);
  std::ostringstream notes;
  const std::string message = cugym::testing::InvalidArgumentMessage([&] { resume(dir, notes); });
  EXPECT_EQ(message.rfind("resume " + dir.string() + ": no usable checkpoint: ", 0), 0u) << message;
  for (const char* step : {"1000", "1504", "2000"})
    EXPECT_NE(message.find(std::string("step_00000000") + step), std::string::npos) << message;
}

// The checkpoint a resume verifies is the one it loads, read once: damaging the file after the
// check changes nothing (a checkpoint with its replay memory can be gigabytes, read twice before).
TEST(TrainRun, AResumeLoadsTheCheckpointItVerifiedReadOnce) {
  const ScratchDir scratch("cugym_train_run_read_once");
  TrainConfig config = Small(4);
  config.total_steps = 1000;
  config.checkpoint_interval = 500;
  TrainInto(config, scratch / "run");
  std::ostringstream notes;
  std::vector<std::unique_ptr<CheckpointReader>> files;
  files.push_back(ResumableCheckpoint(scratch / "run", notes));
  EXPECT_EQ(fs::path(files.front()->path()).filename(), "step_000000001000.safetensors");
  fs::resize_file(files.front()->path(), 0);  // after the check: a second read would fail
  DqnAgent agent(Builtins(), config, Device::kCpu);
  const std::vector<LoopState> loops = agent.LoadCheckpoints(files);
  EXPECT_EQ(agent.global_step(), 1000);
  EXPECT_EQ(loops.size(), 1u);
  // Read from the path, the damaged file is refused with its name.
  EXPECT_NE(cugym::testing::InvalidArgumentMessage([&] {
              agent.LoadCheckpoints(std::vector<std::string>{files.front()->path()});
            }).find("step_000000001000.safetensors"),
            std::string::npos);
}

}  // namespace
}  // namespace cugym::agent
