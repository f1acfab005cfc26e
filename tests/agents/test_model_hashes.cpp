// The bytes every agent trains to, held against a committed table (tests/agents/model_hashes.tsv):
// a refactoring of agents/ that changes no behaviour leaves every row as it is, and a change that
// moves bits on purpose (new math, a new reduction order) regenerates its rows in the commit that
// says why. Each case is a shipped config cut short on the CPU, trained by the one driver (Trainer)
// solo (seed 1) and as a lockstep batch (seeds 1-3), plus a checkpoint written by the commit named
// in tests/fixtures/checkpoints/ resumed to the end. A row hashes a model file's tensors (names,
// dtypes, shapes, bytes: FNV-1a, 64 bits), or a run's metrics.csv header.
//
// The bits depend on the machine (the ISA the build targets, OpenBLAS's kernels for the larger
// GEMMs), so rows are kept per machine: where the table has none for this one, the cases skip and
// say how to add them:
//   OPENBLAS_NUM_THREADS=1 cugym_model_hash_tests --rows COMMIT >> tests/agents/model_hashes.tsv
//   cugym_model_hash_tests --fixtures tests/fixtures/checkpoints   (a checkpoint per case)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/algorithm.h"
#include "agents/common/train_config.h"
#include "agents/run/config_source.h"
#include "agents/run/trainer.h"
#include "core/safetensors.h"
#include "core/toml.h"
#include "tests/agents/agent_test_util.h"
#include "tests/sanitizer.h"

extern "C" char* openblas_get_corename(void);

namespace cugym::agent {
namespace {

namespace fs = std::filesystem;
using cugym::testing::Builtins;
using cugym::testing::ScratchDir;

struct HashCase {
  const char* name;
  const char* config;     // configs/NAME.toml
  const char* overrides;  // TOML over it: fewer steps, evaluations and checkpoints on the way
};

// Every algorithm on each kind of action it takes; each run long enough to learn for a while and to
// write a checkpoint halfway (the fixture).
const HashCase kCases[] = {
    {"dqn_cartpole", "cartpole",
     "total_steps = 3000\neval_episodes = 4\neval_interval = 1500\ncheckpoint_interval = 1500\nlog_interval = 1000\n"
     "stop_at_threshold = false\nbuffer_size = 4000"},
    {"pqn_cartpole", "cartpole_pqn",
     "total_steps = 3072\neval_episodes = 4\neval_interval = 1536\ncheckpoint_interval = 1536\nlog_interval = 1024\n"
     "stop_at_threshold = false"},
    {"ppo_cartpole", "cartpole_ppo",
     "total_steps = 3072\neval_episodes = 4\neval_interval = 1536\ncheckpoint_interval = 1536\nlog_interval = 1024\n"
     "stop_at_threshold = false"},
    {"ppo_pendulum", "pendulum_ppo",
     "total_steps = 6144\neval_episodes = 2\neval_interval = 4096\ncheckpoint_interval = 4096\nlog_interval = 2048"},
    {"ppo_lunar_lander_continuous", "lunar_lander_continuous_ppo",
     "total_steps = 32768\neval_episodes = 2\neval_interval = 16384\ncheckpoint_interval = 16384\n"
     "log_interval = 16384\nstop_at_threshold = false"},
    {"sac_pendulum", "pendulum_sac",
     "total_steps = 2000\neval_episodes = 2\neval_interval = 1000\ncheckpoint_interval = 1500\nlog_interval = 500\n"
     "buffer_size = 4000"},
    {"sac_mountain_car_continuous", "mountain_car_continuous_sac",
     "total_steps = 10800\neval_episodes = 2\neval_interval = 5400\ncheckpoint_interval = 10400\n"
     "log_interval = 2000\nbuffer_size = 12000"},
};

void PrintTo(const HashCase& c, std::ostream* out) { *out << c.name; }

const std::vector<uint64_t> kLaneSeeds = {1, 2, 3};

// This build on this machine, as far as the bits go: the ISA the build targets and OpenBLAS's core.
std::string Machine() {
#if defined(__AVX512F__)
  const std::string isa = "avx512";
#elif defined(__AVX2__)
  const std::string isa = "avx2";
#else
  const std::string isa = "generic";
#endif
  return isa + "/" + openblas_get_corename();
}

struct Fnv1a {
  uint64_t h = 14695981039346656037ull;
  void Add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  void Add(const std::string& s) { Add(s.data(), s.size() + 1); }  // with its terminator
  std::string Hex() const {
    char out[17];
    std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
    return out;
  }
};

// The tensors of a model file: their names, dtypes, shapes and bytes (not its metadata, which
// holds the config and paths).
std::string ModelHash(const fs::path& path) {
  const SafetensorsFile file = ReadSafetensors(path.string());
  Fnv1a fnv;
  for (const NamedTensor& t : file.tensors) {
    fnv.Add(t.name);
    fnv.Add(DTypeName(t.dtype));
    fnv.Add(t.shape.data(), t.shape.size() * sizeof(int64_t));
    fnv.Add(t.data.data(), t.data.size());
  }
  return fnv.Hex();
}

std::string FirstLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

TrainConfig CaseConfig(const HashCase& c) {
  TrainConfigSource source;
  source.config_path = std::string(CUGYM_SOURCE_DIR) + "/configs/" + c.config + ".toml";
  source.overrides = ParseToml(c.overrides, "overrides");
  std::ostringstream notes;
  return ResolveTrainConfig(Builtins(), source, notes);
}

bool CaseRuns(const HashCase& c) { return Builtins().Find(CaseConfig(c).env_id) != nullptr; }

fs::path FixtureDir() { return fs::path(CUGYM_SOURCE_DIR) / "tests" / "fixtures" / "checkpoints"; }

// The case's runs into `dir`: seed 1 alone, seeds 1-3 in lockstep. Returns the rows (case/what ->
// hash) and leaves the folders for a fixture to be taken.
std::map<std::string, std::string> CaseRows(const HashCase& c, const fs::path& dir) {
  std::map<std::string, std::string> rows;
  TrainConfig config = CaseConfig(c);
  std::ostringstream notes;
  const std::string name = c.name;
  {
    config.seed = 1;
    std::vector<TrainRunOptions> runs(1);
    runs[0].run_dir = (dir / "solo").string();
    Trainer(Builtins(), config, {1}, runs, notes).Run([] { return false; });
    rows[name + "/solo/seed1"] = ModelHash(dir / "solo" / "model.safetensors");
    rows[name + "/metrics_columns"] = [&] {
      Fnv1a fnv;
      fnv.Add(FirstLine(dir / "solo" / "metrics.csv"));
      return fnv.Hex();
    }();
  }
  {
    std::vector<TrainRunOptions> runs(kLaneSeeds.size());
    for (std::size_t k = 0; k < runs.size(); ++k) {
      runs[k].run_dir = (dir / ("lanes_" + std::to_string(kLaneSeeds[k]))).string();
    }
    Trainer(Builtins(), config, kLaneSeeds, runs, notes).Run([] { return false; });
    for (uint64_t seed : kLaneSeeds) {
      rows[name + "/lanes/seed" + std::to_string(seed)] =
          ModelHash(dir / ("lanes_" + std::to_string(seed)) / "model.safetensors");
    }
  }
  // The committed checkpoint, resumed by an agent of one lane to total_steps.
  const fs::path fixture = FixtureDir() / (name + ".safetensors");
  if (fs::exists(fixture)) {
    std::unique_ptr<Agent> agent = MakeAgent(Builtins(), config, Device::kCpu, {1});
    agent->LoadCheckpoints(std::vector<std::string>{fixture.string()});
    while (agent->global_step() < config.total_steps) agent->Iterate();
    agent->SaveModel(0, (dir / "resumed.safetensors").string());
    rows[name + "/resumed/seed1"] = ModelHash(dir / "resumed.safetensors");
  }
  return rows;
}

// The committed rows of this machine: case/what -> (hash, commit).
std::map<std::string, std::pair<std::string, std::string>> TableRows() {
  std::ifstream in(std::string(CUGYM_SOURCE_DIR) + "/tests/agents/model_hashes.tsv");
  std::map<std::string, std::pair<std::string, std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string machine, what, hash, commit;
    std::getline(fields, machine, '\t');
    std::getline(fields, what, '\t');
    std::getline(fields, hash, '\t');
    std::getline(fields, commit, '\t');
    if (machine == Machine()) rows[what] = {hash, commit};
  }
  return rows;
}

class ModelHashes : public ::testing::TestWithParam<HashCase> {};

TEST_P(ModelHashes, MatchTheCommittedTable) {
  if (cugym::testing::kSanitizerBuild) GTEST_SKIP() << "the Release configuration checks the bytes";
  const HashCase& c = GetParam();
  if (!CaseRuns(c)) GTEST_SKIP() << "this build has no " << CaseConfig(c).env_id;
  const auto table = TableRows();
  if (table.empty()) {
    GTEST_SKIP() << "tests/agents/model_hashes.tsv has no rows for machine " << Machine()
                 << "; add them with OPENBLAS_NUM_THREADS=1 cugym_model_hash_tests --rows COMMIT";
  }
  const ScratchDir scratch(std::string("cugym_model_hash_") + c.name);
  const auto rows = CaseRows(c, scratch.path);
  for (const auto& [what, hash] : rows) {
    const auto it = table.find(what);
    if (it == table.end()) {
      ADD_FAILURE() << what << ": no row for machine " << Machine() << " (computed " << hash << ")";
    } else {
      EXPECT_EQ(hash, it->second.first) << what << " differs from the row of commit " << it->second.second;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Agents, ModelHashes, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<HashCase>& info) { return std::string(info.param.name); });

// --rows COMMIT: this machine's rows, tab-separated, for the table. --fixtures DIR: each case's
// first checkpoint of its solo run, as DIR/CASE.safetensors.
int WriteRowsOrFixtures(const std::string& mode, const std::string& arg) {
  for (const HashCase& c : kCases) {
    if (!CaseRuns(c)) continue;
    const ScratchDir scratch(std::string("cugym_model_hash_write_") + c.name);
    const auto rows = CaseRows(c, scratch.path);
    if (mode == "--rows") {
      for (const auto& [what, hash] : rows)
        std::cout << Machine() << '\t' << what << '\t' << hash << '\t' << arg << '\n';
      continue;
    }
    std::vector<fs::path> checkpoints;
    for (const auto& entry : fs::directory_iterator(scratch.path / "solo" / "checkpoints")) {
      checkpoints.push_back(entry.path());
    }
    std::sort(checkpoints.begin(), checkpoints.end());
    fs::create_directories(arg);
    fs::copy_file(checkpoints.front(), fs::path(arg) / (std::string(c.name) + ".safetensors"),
                  fs::copy_options::overwrite_existing);
  }
  return 0;
}

}  // namespace
}  // namespace cugym::agent

int main(int argc, char** argv) {
  if (argc == 3 && (std::strcmp(argv[1], "--rows") == 0 || std::strcmp(argv[1], "--fixtures") == 0)) {
    return cugym::agent::WriteRowsOrFixtures(argv[1], argv[2]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
