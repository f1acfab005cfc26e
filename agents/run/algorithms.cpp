// The algorithm registry (algorithm.h) and the built-in algorithms, one registration line each.
#include <mutex>
#include <stdexcept>
#include <utility>

#include "agents/common/algorithm.h"
#include "agents/off_policy/dqn.h"
#include "agents/off_policy/sac.h"
#include "agents/on_policy/ppo.h"
#include "agents/on_policy/pqn.h"

namespace cugym::agent {
namespace {

std::vector<Algorithm>& Table() {
  static std::vector<Algorithm> table;
  return table;
}

void Add(Algorithm algorithm) {
  if (algorithm.name.empty() || !algorithm.make)
    throw std::invalid_argument("RegisterAlgorithm: an algorithm needs a name and a factory");
  for (Algorithm& known : Table()) {
    if (known.name == algorithm.name) {
      known = std::move(algorithm);
      return;
    }
  }
  Table().push_back(std::move(algorithm));
}

void RegisterBuiltinAlgorithms() {
  Add(DqnAlgorithm());
  Add(PqnAlgorithm());
  Add(PpoAlgorithm());
  Add(SacAlgorithm());
}

// The table, with the built-in algorithms registered before its first use.
std::vector<Algorithm>& Algorithms() {
  static std::once_flag builtins;
  std::call_once(builtins, RegisterBuiltinAlgorithms);
  return Table();
}

}  // namespace

void RegisterAlgorithm(Algorithm algorithm) {
  Algorithms();  // the built-in ones first, so that a program's may replace them
  Add(std::move(algorithm));
}

const Algorithm* FindAlgorithm(const std::string& name) {
  for (const Algorithm& a : Algorithms())
    if (a.name == name) return &a;
  return nullptr;
}

const Algorithm& GetAlgorithm(const std::string& name) {
  const Algorithm* algorithm = FindAlgorithm(name);
  if (algorithm == nullptr) throw std::invalid_argument("unknown algo \"" + name + "\"");
  return *algorithm;
}

std::pair<const Algorithm*, const AlgorithmKey*> FindAlgorithmKey(const std::string& name) {
  for (const Algorithm& a : Algorithms())
    for (const AlgorithmKey& key : a.keys)
      if (key.name == name) return {&a, &key};
  return {nullptr, nullptr};
}

std::vector<std::string> AlgorithmNames() {
  std::vector<std::string> names;
  for (const Algorithm& a : Algorithms()) names.push_back(a.name);
  return names;
}

std::unique_ptr<Agent> MakeAgent(const Registry& registry, const TrainConfig& config, Device device,
                                 std::vector<uint64_t> seeds) {
  return GetAlgorithm(config.algo).make(registry, config, device, std::move(seeds));
}

}  // namespace cugym::agent
