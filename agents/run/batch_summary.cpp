// A batch's summary (batch_summary.h).
#include "agents/run/batch_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/atomic_file.h"
#include "core/json_writer.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Fixed(double x, int digits = 1) {
  if (std::isnan(x)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, x);
  return buf;
}

std::string Num(double x) { return std::isnan(x) ? std::string("null") : JsonNumber(x); }

// One grid point's runs, [first, end) of the batch: its JSON object and its summary.md row.
struct PointSummary {
  std::string json, md;
};

PointSummary SummarizePoint(const std::vector<RunOutcome>& runs, std::size_t first, std::size_t end, double threshold) {
  std::vector<double> finals, times;
  int solved_final = 0, solved_best = 0, interrupted = 0;
  std::string runs_json = "[";
  for (std::size_t i = first; i < end; ++i) {
    const TrainRunResult& r = runs[i].result;
    interrupted += r.interrupted;
    const double final_return = r.evaluated ? r.eval.mean_return : kNaN;
    const double best_return = r.best_step >= 0 ? r.best.mean_return : kNaN;
    if (!std::isnan(final_return)) finals.push_back(final_return);
    solved_final += !std::isnan(threshold) && final_return >= threshold;
    solved_best += !std::isnan(threshold) && best_return >= threshold;
    if (r.threshold_step >= 0) times.push_back(r.threshold_seconds);
    JsonObject run;
    run.Int("seed", static_cast<int64_t>(runs[i].seed))
        .Str("run_dir", r.run_dir)
        .Raw("final_mean_return", Num(final_return))
        .Raw("best_mean_return", Num(best_return))
        .Raw("threshold_seconds", r.threshold_step >= 0 ? JsonNumber(r.threshold_seconds) : "null")
        .Raw("interrupted", r.interrupted ? "true" : "false");
    runs_json += (i > first ? ", " : "") + run.str();
  }
  double iqm = kNaN, mean = kNaN;
  std::pair<double, double> iqm_ci{kNaN, kNaN}, mean_ci{kNaN, kNaN};
  if (!finals.empty()) {
    iqm = Iqm(finals);
    mean = Mean(finals);
    iqm_ci = Bootstrap(finals, Iqm);
    mean_ci = Bootstrap(finals, Mean);
  }
  const double median_time = Percentile(times, 50);  // of the runs that reached it (NaN: none)
  JsonObject point;
  point.Str("point", runs[first].point)
      .Int("seeds", static_cast<int64_t>(end - first))
      .Int("interrupted", interrupted)
      .Int("solved_final", solved_final)
      .Int("solved_best", solved_best)
      .Raw("final_iqm", Num(iqm))
      .Raw("final_iqm_ci", "[" + Num(iqm_ci.first) + ", " + Num(iqm_ci.second) + "]")
      .Raw("final_mean", Num(mean))
      .Raw("final_mean_ci", "[" + Num(mean_ci.first) + ", " + Num(mean_ci.second) + "]")
      .Int("reached_threshold", static_cast<int64_t>(times.size()))
      .Raw("median_time_to_threshold", Num(median_time))
      .Raw("runs", runs_json + "]");
  const std::string n = std::to_string(end - first);
  const std::string md = "| " + (runs[first].point.empty() ? std::string("(config)") : runs[first].point) + " | " + n +
                         " | " + std::to_string(solved_final) + "/" + n + " | " + std::to_string(solved_best) + "/" +
                         n + " | " + Fixed(iqm) + " [" + Fixed(iqm_ci.first) + ", " + Fixed(iqm_ci.second) + "] | " +
                         Fixed(mean) + " [" + Fixed(mean_ci.first) + ", " + Fixed(mean_ci.second) + "] | " +
                         (times.empty() ? std::string("-") : Fixed(median_time, 2) + " s") +
                         (interrupted ? " (" + std::to_string(interrupted) + " interrupted)" : "") + " |\n";
  return {point.str(), md};
}

}  // namespace

std::pair<std::string, std::string> WriteBatchSummary(const EnvSpec& spec, const std::vector<RunOutcome>& runs,
                                                      const fs::path& out) {
  const double threshold = spec.has_reward_threshold ? spec.reward_threshold : kNaN;
  JsonObject json = ResultJson();
  json.Str("env", spec.id).Raw("threshold", Num(threshold));
  std::string points_json = "[", md;
  md += "# " + spec.id + ": " + std::to_string(runs.size()) + " runs\n\n";
  md += "Threshold " + (std::isnan(threshold) ? std::string("none") : Fixed(threshold)) +
        ". Final: the final model's greedy evaluation (eval.json); best: the best evaluation during training. "
        "IQM and mean over seeds with 95% bootstrap intervals.\n\n";
  md +=
      "| point | seeds | solved (final) | solved (best) | final IQM [95% CI] | final mean [95% CI] | "
      "median time to threshold |\n| --- | ---: | ---: | ---: | --- | --- | ---: |\n";
  for (std::size_t first = 0; first < runs.size();) {
    std::size_t end = first;
    while (end < runs.size() && runs[end].point == runs[first].point) ++end;
    const PointSummary point = SummarizePoint(runs, first, end, threshold);
    points_json += (first ? ", " : "") + point.json;
    md += point.md;
    first = end;
  }
  json.Raw("points", points_json + "]");
  const std::string json_path = (out / "summary.json").string(), md_path = (out / "summary.md").string();
  WriteFileAtomically(json_path, json.str() + "\n");
  WriteFileAtomically(md_path, md);
  return {json_path, md_path};
}

}  // namespace cugym::agent
