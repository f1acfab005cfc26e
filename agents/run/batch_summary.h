// A batch's summary (summary.json, summary.md): per grid point the seeds that reach the env's
// threshold with the final and the best model, IQM and mean return with 95% bootstrap intervals
// (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice"), the time to threshold.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "agents/run/run_folder.h"
#include "agents/run/run_stats.h"
#include "core/spec.h"

namespace cugym::agent {

// The outcome of one run of a batch.
struct RunOutcome {
  std::string point;  // "learning_rate=0.001" ("" without a sweep)
  uint64_t seed = 0;
  TrainRunResult result;
};

// Writes summary.json and summary.md of `runs` (in batch order: grid points, then seeds) into `out`;
// returns their paths.
std::pair<std::string, std::string> WriteBatchSummary(const EnvSpec& spec, const std::vector<RunOutcome>& runs,
                                                      const std::filesystem::path& out);

}  // namespace cugym::agent
