// Run folders (agents/run_folder.h, through the driver in agents/trainer.h): evaluations during training into
// evals.csv, best.safetensors and eval.json's best and threshold fields; evaluations leave the training itself
// unchanged; a refused run leaves no folder.
#include "agents/train_config.h"
#include "agents/trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/memory.h"
#include "core/safetensors.h"
#include "tests/agents/agent_test_util.h"

namespace cugym::agent {
namespace {

namespace fs = std::filesystem;

using testing::Builtins;
using testing::ScratchDir;

DqnConfig Small(uint64_t seed) {
  DqnConfig config;
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

TrainRunResult TrainInto(const DqnConfig& config, const fs::path& dir) {
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
  DqnConfig with = Small(5), without = Small(5);
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
  DqnConfig config = Small(4);
  config.stop_at_threshold = true;
  config.checkpoint_interval = 1000;
  const fs::path first = scratch / "first";
  TrainRunOptions options;
  options.run_dir = first.string();
  std::ostringstream notes;
  bool at_1000 = false;
  options.on_log = [&](const DqnProgress& p) { at_1000 = at_1000 || p.global_step >= 1000; };
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
  const DqnConfig config = Small(3);  // evaluations at 1000, 2000, 3000 and 4000 env steps
  TrainRunOptions options;
  options.run_dir = (scratch / "run").string();
  options.on_eval = [](const DqnEvaluation&) { return true; };
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
  DqnConfig config = Small(1);
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

}  // namespace
}  // namespace cugym::agent
