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

template <class A>
std::unique_ptr<Agent> Make(const Registry& registry, const TrainConfig& config, Device device,
                            std::vector<uint64_t> seeds) {
  return std::make_unique<A>(registry, config, device, std::move(seeds));
}

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
  // CleanRL's names: dqn.py's, ppo.py's and sac_continuous_action.py's columns and tags.
  const MetricColumn q[] = {
      {"td_loss", "losses/td_loss"}, {"q_values", "losses/q_values"}, {"epsilon", "charts/epsilon"}};
  Add({"dqn", {std::begin(q), std::end(q)}, Make<DqnAgent>, {}, [](const TrainConfig& c, const EnvSpec& spec) {
         return ReplayBytes(DqnReplayOptions(c, spec));
       }});
  Add({"pqn", {std::begin(q), std::end(q)}, Make<PqnAgent>, {}, nullptr});
  Add({"ppo",
       {{"policy_loss", "losses/policy_loss"},
        {"value_loss", "losses/value_loss"},
        {"entropy", "losses/entropy"},
        {"approx_kl", "losses/approx_kl"},
        {"clipfrac", "losses/clipfrac"},
        {"explained_variance", "losses/explained_variance"},
        {"learning_rate", "charts/learning_rate"}},
       Make<PpoAgent>,
       {},
       nullptr});
  Add({"sac",
       {{"qf1_loss", "losses/qf1_loss"},
        {"qf2_loss", "losses/qf2_loss"},
        {"qf1_values", "losses/qf1_values"},
        {"actor_loss", "losses/actor_loss"},
        {"alpha", "losses/alpha"},
        {"alpha_loss", "losses/alpha_loss"},
        {"entropy", ""}},
       Make<SacAgent>,
       {},
       [](const TrainConfig& c, const EnvSpec& spec) { return ReplayBytes(SacReplayOptions(c, spec)); }});
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
  const Algorithm* algorithm = FindAlgorithm(config.algo);
  if (algorithm == nullptr) throw std::invalid_argument("unknown algo \"" + config.algo + "\"");
  return algorithm->make(registry, config, device, std::move(seeds));
}

}  // namespace cugym::agent
