// What a batch of runs is (sweep_spec.h).
#include "agents/run/sweep_spec.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "agents/common/train_config.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

uint64_t ParseSeed(const std::string& text, const std::string& list) {
  std::size_t used = 0;
  long long value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 0)
    throw std::invalid_argument("seeds '" + list + "': '" + text + "' is not a seed (an integer >= 0)");
  return static_cast<uint64_t>(value);
}

// A value as the user wrote it ("2.3e-3", not 0.0023 to 17 digits): point names, folder names and
// batch.toml keep it, so a resumed batch finds its folders.
std::string ValueText(const TomlValue& v) {
  return v.kind != TomlValue::Kind::kString && !v.text.empty() ? v.text : v.ToToml();
}

// "learning_rate=2.3e-3,gamma=0.99": the point's name and its run folder's name.
std::string PointName(const std::vector<SweepAxis>& sweep, const std::vector<std::size_t>& at) {
  std::string name;
  for (std::size_t a = 0; a < sweep.size(); ++a)
    name += (a ? "," : "") + sweep[a].key + "=" + ValueText(sweep[a].values[at[a]]);
  return name;
}

}  // namespace

// Keys whose values all runs of a batch may differ in: none changes an array's shape (the network,
// the envs, the replay memory, PQN's rollout and minibatches) or what is trained on.
const std::set<std::string>& SweepableKeys() {
  static const std::set<std::string> keys = {"adam_eps",
                                             "anneal_lr",
                                             "double_dqn",
                                             "end_e",
                                             "exploration_fraction",
                                             "exploration_hold_mu",
                                             "gamma",
                                             "learning_rate",
                                             "learning_starts",
                                             "max_grad_norm",
                                             "n_step",
                                             "num_epochs",
                                             "optimizer",
                                             "per_alpha",
                                             "per_beta",
                                             "per_eps",
                                             "q_lambda",
                                             "replay_ratio",
                                             "reward_scale",
                                             "start_e",
                                             "stop_margin",
                                             "target_update_interval",
                                             "tau",
                                             "exploration_max_hold",
                                             "gae_lambda",
                                             "clip_coef",
                                             "clip_vloss",
                                             "ent_coef",
                                             "vf_coef",
                                             "norm_adv",
                                             "init_log_std",
                                             "normalize_obs",
                                             "normalize_reward",
                                             "target_kl",
                                             "policy_lr",
                                             "policy_frequency",
                                             "alpha",
                                             "autotune",
                                             "target_entropy_per_dim",
                                             "noise_correlation"};
  return keys;
}

// A key swept twice, or a value listed twice for one key (2.3e-3 and 0.0023 are one value), would
// train the same runs twice into folders of their own, or clash on one folder after hours of
// training: refused before anything trains.
void CheckSweep(const std::vector<SweepAxis>& sweep) {
  std::set<std::string> keys;
  for (const SweepAxis& axis : sweep) {
    if (!keys.insert(axis.key).second)
      throw std::invalid_argument("sweep key '" + axis.key + "' given twice; list all its values in one sweep (" +
                                  axis.key + "=V1,V2,...)");
    if (axis.values.empty()) throw std::invalid_argument("sweep key '" + axis.key + "' has no values");
    std::map<std::string, std::string> seen;  // the config's TOML with the value -> the value as given
    for (const TomlValue& value : axis.values) {
      TrainConfig config;
      config.Apply({{axis.key, value}});
      const auto [it, fresh] = seen.emplace(config.ToToml(), ValueText(value));
      if (!fresh)
        throw std::invalid_argument("sweep key '" + axis.key + "': " +
                                    (it->second == ValueText(value)
                                         ? "value " + it->second + " is listed twice"
                                         : "values " + it->second + " and " + ValueText(value) + " are the same"));
    }
  }
}

std::vector<PlannedRun> PlanRuns(const fs::path& out, const std::vector<uint64_t>& seeds,
                                 const std::vector<SweepAxis>& sweep) {
  std::vector<PlannedRun> plan;
  std::vector<std::size_t> at(sweep.size(), 0);
  while (true) {
    const std::string point = PointName(sweep, at);
    for (uint64_t seed : seeds) {
      PlannedRun p;
      p.point = point;
      for (std::size_t a = 0; a < sweep.size(); ++a) p.keys.emplace_back(sweep[a].key, sweep[a].values[at[a]]);
      p.seed = seed;
      p.dir = (point.empty() ? out : out / point) / ("seed_" + std::to_string(seed));
      plan.push_back(std::move(p));
    }
    std::size_t a = sweep.size();  // the next point, the last axis fastest
    while (a > 0 && ++at[a - 1] == sweep[a - 1].values.size()) at[--a] = 0;
    if (a == 0) break;
  }
  return plan;
}

std::string BatchToml(const std::vector<uint64_t>& seeds, const std::vector<SweepAxis>& sweep) {
  std::string out = "# cugym batch: cugym train --seeds/--sweep; continue it with cugym train --resume DIR\n";
  out += "seeds = [";
  for (std::size_t i = 0; i < seeds.size(); ++i) out += (i ? ", " : "") + std::to_string(seeds[i]);
  out += "]\nsweep_order = [";
  for (std::size_t a = 0; a < sweep.size(); ++a) out += (a ? ", \"" : "\"") + sweep[a].key + "\"";
  out += "]\n";
  if (!sweep.empty()) out += "[sweep]\n";
  for (const SweepAxis& axis : sweep) {
    out += axis.key + " = [";
    for (std::size_t i = 0; i < axis.values.size(); ++i) out += (i ? ", " : "") + ValueText(axis.values[i]);
    out += "]\n";
  }
  return out;
}

void ReadBatchToml(const fs::path& path, std::vector<uint64_t>& seeds, std::vector<SweepAxis>& sweep) {
  const TomlTable table = ReadTomlFile(path.string());
  auto get = [&](const std::string& key) -> const TomlValue& {
    auto it = table.find(key);
    if (it == table.end() || it->second.kind != TomlValue::Kind::kArray)
      throw std::invalid_argument(path.string() + ": no array '" + key + "' (not a cugym batch?)");
    return it->second;
  };
  // Written by RunMany, but a file a user may edit: checked as --seeds and --sweep are.
  seeds.clear();
  for (const TomlValue& s : get("seeds").items) {
    if (s.kind != TomlValue::Kind::kInteger || s.integer < 0)
      throw std::invalid_argument(path.string() + ": seeds must be integers >= 0");
    seeds.push_back(static_cast<uint64_t>(s.integer));
  }
  if (seeds.empty() || std::set<uint64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
    throw std::invalid_argument(path.string() + ": seeds must list one seed or more, each once");
  sweep.clear();
  for (const TomlValue& key : get("sweep_order").items) {
    if (key.kind != TomlValue::Kind::kString || !SweepableKeys().count(key.text))
      throw std::invalid_argument(path.string() + ": '" + key.text + "' in sweep_order is not a key a batch sweeps");
    sweep.push_back({key.text, get("sweep." + key.text).items});
  }
  try {
    CheckSweep(sweep);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path.string() + ": " + e.what());
  }
}

constexpr uint64_t kMaxRangeSeeds = 100000;

std::vector<uint64_t> ParseSeedList(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::stringstream parts(text);
  for (std::string part; std::getline(parts, part, ',');) {
    const std::size_t dash = part.find('-', 1);
    if (dash == std::string::npos) {
      seeds.push_back(ParseSeed(part, text));
      continue;
    }
    const uint64_t lo = ParseSeed(part.substr(0, dash), text), hi = ParseSeed(part.substr(dash + 1), text);
    if (hi < lo) throw std::invalid_argument("seeds '" + text + "': bad range '" + part + "'");
    if (hi - lo >= kMaxRangeSeeds)
      throw std::invalid_argument("seeds '" + text + "': range '" + part + "' has " + std::to_string(hi - lo + 1) +
                                  " seeds, more than " + std::to_string(kMaxRangeSeeds) + " in one batch");
    for (uint64_t s = lo; s <= hi; ++s) seeds.push_back(s);
  }
  if (seeds.empty()) throw std::invalid_argument("seeds '" + text + "': no seed given");
  std::set<uint64_t> unique(seeds.begin(), seeds.end());
  if (unique.size() != seeds.size()) throw std::invalid_argument("seeds '" + text + "': a seed appears twice");
  return seeds;
}

SweepAxis ParseSweep(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument("sweep needs KEY=V1,V2,..., got '" + text + "'");
  SweepAxis axis{text.substr(0, eq), {}};
  if (!SweepableKeys().count(axis.key)) {
    const std::string known = "\n" + TrainConfig().ToToml();
    if (known.find("\n" + axis.key + " = ") == std::string::npos)
      TrainConfig().Apply({{axis.key, TomlValue{}}});  // the unknown-key error, with the known keys
    throw std::invalid_argument("sweep key '" + axis.key +
                                "' cannot vary within one batch (it changes array shapes or what is trained); run its "
                                "values as separate processes or on Ray Tune (docs/sweeps.md)");
  }
  std::stringstream values(text.substr(eq + 1));
  for (std::string v; std::getline(values, v, ',');) {
    TomlValue value = ParseTomlValue(v, "sweep " + axis.key);
    try {
      TrainConfig check;
      check.Apply({{axis.key, value}});  // the key's type
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("sweep " + text + ": " + e.what());
    }
    axis.values.push_back(value);
  }
  return axis;
}

bool IsBatchFolder(const std::string& dir) { return fs::is_regular_file(fs::path(dir) / "batch.toml"); }

}  // namespace cugym::agent
