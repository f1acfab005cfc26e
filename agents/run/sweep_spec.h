// What a batch of runs is (`cugym train --seeds 1-32 --sweep learning_rate=1e-3,2.3e-3`,
// cugym.train(seeds=..., sweep=...)): the seeds, the swept keys and their values, each (grid point,
// seed) and its folder, and batch.toml, which keeps them for a resume.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/toml.h"

namespace cugym::agent {

// One swept key and its values, in the order given.
struct SweepAxis {
  std::string key;
  std::vector<TomlValue> values;
};

// "1-32", "3", "1,5,9-12": the seeds in order, each once. Throws std::invalid_argument.
std::vector<uint64_t> ParseSeedList(const std::string& text);
// "learning_rate=1e-3,2.3e-3": the key and its values. Throws std::invalid_argument for a bad form,
// an unknown key, or a key whose values would change array shapes (hidden_sizes, num_envs,
// buffer_size, batch_size, env_id, ...), which must run as separate processes or on Ray Tune.
SweepAxis ParseSweep(const std::string& text);
// Keys whose values the runs of a batch may differ in (ParseSweep's).
const std::set<std::string>& SweepableKeys();
// A key swept twice, a key without values, or a value listed twice for one key (2.3e-3 and 0.0023
// are one value): std::invalid_argument, before anything trains.
void CheckSweep(const std::vector<SweepAxis>& sweep);

// One (grid point, seed) of a batch.
struct PlannedRun {
  std::string point;                                    // "learning_rate=2.3e-3" ("" without a sweep)
  std::vector<std::pair<std::string, TomlValue>> keys;  // the point's values
  uint64_t seed = 0;
  std::filesystem::path dir;  // out/[point/]seed_S
};
// Every run of the batch in `out`: grid points (the last axis fastest), then seeds.
std::vector<PlannedRun> PlanRuns(const std::filesystem::path& out, const std::vector<uint64_t>& seeds,
                                 const std::vector<SweepAxis>& sweep);

// batch.toml: the seeds and the sweep, as given.
std::string BatchToml(const std::vector<uint64_t>& seeds, const std::vector<SweepAxis>& sweep);
// Reads batch.toml back, checked as --seeds and --sweep are (a user may edit it).
void ReadBatchToml(const std::filesystem::path& path, std::vector<uint64_t>& seeds, std::vector<SweepAxis>& sweep);
// Whether `dir` is a batch folder (has batch.toml).
bool IsBatchFolder(const std::string& dir);

}  // namespace cugym::agent
