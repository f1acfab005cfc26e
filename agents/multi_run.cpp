// Many runs of one config in one process (see multi_run.h).
#include "agents/multi_run.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "agents/dqn_batch.h"
#include "agents/replay_memory.h"
#include "core/atomic_file.h"
#include "core/json_writer.h"
#include "core/memory.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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
                                             "exploration_max_hold"};
  return keys;
}

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
      DqnConfig config;
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

// "learning_rate=2.3e-3,gamma=0.99": the point's name and its run folder's name.
std::string PointName(const std::vector<SweepAxis>& sweep, const std::vector<std::size_t>& at) {
  std::string name;
  for (std::size_t a = 0; a < sweep.size(); ++a)
    name += (a ? "," : "") + sweep[a].key + "=" + ValueText(sweep[a].values[at[a]]);
  return name;
}

struct Planned {
  std::string point;
  std::vector<std::pair<std::string, TomlValue>> keys;  // the point's values
  uint64_t seed = 0;
  fs::path dir;
};

std::vector<Planned> Plan(const fs::path& out, const std::vector<uint64_t>& seeds,
                          const std::vector<SweepAxis>& sweep) {
  std::vector<Planned> plan;
  std::vector<std::size_t> at(sweep.size(), 0);
  while (true) {
    const std::string point = PointName(sweep, at);
    for (uint64_t seed : seeds) {
      Planned p;
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

// Statistics over the runs of one grid point (Agarwal et al. 2021, as bench/seed_stats.py).
double Iqm(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t cut = x.size() / 4;
  return std::accumulate(x.begin() + cut, x.end() - cut, 0.0) / static_cast<double>(x.size() - 2 * cut);
}
double Mean(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / x.size(); }

// Percentile-bootstrap 95% interval of statistic over runs (2000 resamples, a fixed generator).
std::pair<double, double> Bootstrap(const std::vector<double>& x, double (*statistic)(std::vector<double>)) {
  std::mt19937_64 rng(0);
  std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
  std::vector<double> stats(2000), sample(x.size());
  for (double& s : stats) {
    for (double& v : sample) v = x[pick(rng)];
    s = statistic(sample);
  }
  std::sort(stats.begin(), stats.end());
  auto at = [&](double q) {  // linear interpolation, as numpy.percentile
    const double pos = q * (stats.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, stats.size() - 1);
    return stats[lo] + (pos - lo) * (stats[hi] - stats[lo]);
  };
  return {at(0.025), at(0.975)};
}
double IqmByValue(std::vector<double> x) { return Iqm(std::move(x)); }
double MeanByValue(std::vector<double> x) { return Mean(x); }

// The runs alive at once (`jobs` of them: every seed of a grid point for each batch in lockstep) each hold a replay
// memory, which dominates a DQN run's memory: refused before anything trains when together they would not fit. (A run
// alone is checked by its ReplayMemory.)
void CheckBatchMemory(const Registry& registry, const std::vector<DqnConfig>& configs, int jobs, Device device,
                      const std::string& hint) {
  std::vector<std::pair<int64_t, const DqnConfig*>> runs;  // replay bytes, config
  for (const DqnConfig& c : configs) {
    if (c.pqn()) continue;
    const int obs_dim = static_cast<int>(registry.Get(c.env_id).spec.obs_dim());
    runs.emplace_back(
        ReplayBytes(ReplayOptions{c.buffer_size, obs_dim, c.num_envs, c.batch_size, c.prioritized_replay, {}}), &c);
  }
  const int alive = std::min<int>(jobs, static_cast<int>(runs.size()));
  if (alive < 2) return;
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double needed = 0;
  for (int i = 0; i < alive; ++i) needed += static_cast<double>(runs[i].first);
  const std::size_t available = AvailableBytes(device);
  if (needed <= 0.9 * static_cast<double>(available)) return;
  const DqnConfig& largest = *runs.front().second;
  throw std::invalid_argument(
      std::to_string(configs.size()) + " runs, " + std::to_string(alive) + " at a time: their replay memories need " +
      std::to_string(alive) + " x " + std::to_string(runs.front().first >> 20) + " MiB of " + DeviceName(device) +
      " memory but only " + std::to_string(available >> 20) + " MiB is free (each: buffer_size " +
      std::to_string(largest.buffer_size) + " transitions of " +
      std::to_string(registry.Get(largest.env_id).spec.obs_dim()) + " floats per observation; " + hint + ")");
}

std::string Fixed(double x, int digits = 1) {
  if (std::isnan(x)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, x);
  return buf;
}

// summary.json and summary.md.
void WriteSummary(const Registry& registry, const std::string& env_id, const std::vector<RunOutcome>& runs,
                  const fs::path& out, MultiRunResult& result) {
  const EnvSpec& spec = registry.Get(env_id).spec;
  const double threshold = spec.has_reward_threshold ? spec.reward_threshold : kNaN;
  JsonObject json = ResultJson();
  json.Str("env", env_id).Raw("threshold", std::isnan(threshold) ? "null" : JsonNumber(threshold));
  std::string points_json = "[", md;
  md += "# " + env_id + ": " + std::to_string(runs.size()) + " runs\n\n";
  md += "Threshold " + (std::isnan(threshold) ? std::string("none") : Fixed(threshold)) +
        ". Final: the final model's greedy evaluation (eval.json); best: the best evaluation during training. "
        "IQM and mean over seeds with 95% bootstrap intervals.\n\n";
  md +=
      "| point | seeds | solved (final) | solved (best) | final IQM [95% CI] | final mean [95% CI] | "
      "median time to threshold |\n| --- | ---: | ---: | ---: | --- | --- | ---: |\n";
  for (std::size_t first = 0; first < runs.size();) {
    std::size_t end = first;
    while (end < runs.size() && runs[end].point == runs[first].point) ++end;
    std::vector<double> finals;
    std::vector<double> times;
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
          .Raw("final_mean_return", std::isnan(final_return) ? "null" : JsonNumber(final_return))
          .Raw("best_mean_return", std::isnan(best_return) ? "null" : JsonNumber(best_return))
          .Raw("threshold_seconds", r.threshold_step >= 0 ? JsonNumber(r.threshold_seconds) : "null")
          .Raw("interrupted", r.interrupted ? "true" : "false");
      runs_json += (i > first ? ", " : "") + run.str();
    }
    runs_json += "]";
    double iqm = kNaN, mean = kNaN;
    std::pair<double, double> iqm_ci{kNaN, kNaN}, mean_ci{kNaN, kNaN};
    if (!finals.empty()) {
      iqm = Iqm(finals);
      mean = Mean(finals);
      iqm_ci = Bootstrap(finals, IqmByValue);
      mean_ci = Bootstrap(finals, MeanByValue);
    }
    std::sort(times.begin(), times.end());
    const double median_time =
        times.empty() ? kNaN
                      : (times[(times.size() - 1) / 2] + times[times.size() / 2]) / 2;  // of the runs that reached it
    auto num = [](double x) { return std::isnan(x) ? std::string("null") : JsonNumber(x); };
    JsonObject point;
    point.Str("point", runs[first].point)
        .Int("seeds", static_cast<int64_t>(end - first))
        .Int("interrupted", interrupted)
        .Int("solved_final", solved_final)
        .Int("solved_best", solved_best)
        .Raw("final_iqm", num(iqm))
        .Raw("final_iqm_ci", "[" + num(iqm_ci.first) + ", " + num(iqm_ci.second) + "]")
        .Raw("final_mean", num(mean))
        .Raw("final_mean_ci", "[" + num(mean_ci.first) + ", " + num(mean_ci.second) + "]")
        .Int("reached_threshold", static_cast<int64_t>(times.size()))
        .Raw("median_time_to_threshold", num(median_time))
        .Raw("runs", runs_json);
    points_json += (first ? ", " : "") + point.str();
    const int n = static_cast<int>(end - first);
    md += "| " + (runs[first].point.empty() ? std::string("(config)") : runs[first].point) + " | " + std::to_string(n) +
          " | " + std::to_string(solved_final) + "/" + std::to_string(n) + " | " + std::to_string(solved_best) + "/" +
          std::to_string(n) + " | " + Fixed(iqm) + " [" + Fixed(iqm_ci.first) + ", " + Fixed(iqm_ci.second) + "] | " +
          Fixed(mean) + " [" + Fixed(mean_ci.first) + ", " + Fixed(mean_ci.second) + "] | " +
          (times.empty() ? std::string("-") : Fixed(median_time, 2) + " s") +
          (interrupted ? " (" + std::to_string(interrupted) + " interrupted)" : "") + " |\n";
    first = end;
  }
  json.Raw("points", points_json + "]");
  result.summary_json = (out / "summary.json").string();
  result.summary_md = (out / "summary.md").string();
  WriteFileAtomically(result.summary_json, json.str() + "\n");
  WriteFileAtomically(result.summary_md, md);
}

}  // namespace

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
    const std::string known = "\n" + DqnConfig().ToToml();
    if (known.find("\n" + axis.key + " = ") == std::string::npos)
      DqnConfig().Apply({{axis.key, TomlValue{}}});  // the unknown-key error, with the known keys
    throw std::invalid_argument("sweep key '" + axis.key +
                                "' cannot vary within one batch (it changes array shapes or what is trained); run its "
                                "values as separate processes or on Ray Tune (docs/sweeps.md)");
  }
  std::stringstream values(text.substr(eq + 1));
  for (std::string v; std::getline(values, v, ',');) {
    TomlValue value = ParseTomlValue(v, "sweep " + axis.key);
    try {
      DqnConfig check;
      check.Apply({{axis.key, value}});  // the key's type
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("sweep " + text + ": " + e.what());
    }
    axis.values.push_back(value);
  }
  return axis;
}

bool IsBatchFolder(const std::string& dir) { return fs::is_regular_file(fs::path(dir) / "batch.toml"); }

MultiRunResult RunMany(const Registry& registry, const TrainConfigSource& base,
                       const std::vector<uint64_t>& given_seeds, const std::vector<SweepAxis>& given_sweep,
                       const MultiRunOptions& options, const std::function<void(const MultiRunProgress&)>& on_progress,
                       const std::function<bool()>& stop, std::ostream& notes) {
  const fs::path out = options.out_dir;
  if (out.empty()) throw std::invalid_argument("a batch of runs needs its folder (--out DIR)");
  std::vector<uint64_t> seeds = given_seeds;
  std::vector<SweepAxis> sweep = given_sweep;
  TrainConfigSource source = base;
  if (options.resume) {
    if (!IsBatchFolder(out.string()))
      throw std::invalid_argument("resume " + out.string() + ": no batch.toml there (not a cugym batch)");
    ReadBatchToml(out / "batch.toml", seeds, sweep);
    for (const auto& entry : base.overrides) {
      if (entry.first == "seed")
        throw std::invalid_argument(
            "resume of a batch: its runs keep their seeds (batch.toml); drop the seed override");
      for (const SweepAxis& axis : sweep)
        if (axis.key == entry.first)
          throw std::invalid_argument("resume of a batch: it sweeps " + entry.first +
                                      " (batch.toml); drop its override");
    }
    source = TrainConfigSource{};
    source.config_path = (out / "base_config.toml").string();
    source.overrides = base.overrides;  // --set on resume, as for one run
  } else {
    if (seeds.empty()) throw std::invalid_argument("a batch of runs needs seeds");
    CheckSweep(sweep);
    if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out)))
      throw std::invalid_argument("batch folder " + out.string() +
                                  " exists and is not empty (use another folder, or resume it)");
    std::error_code error;
    fs::create_directories(out, error);
    if (error) throw std::invalid_argument("cannot create batch folder " + out.string() + ": " + error.message());
  }
  // Every run's config, resolved and checked before anything trains.
  const std::vector<Planned> plan = Plan(out, seeds, sweep);
  std::vector<DqnConfig> configs;
  std::ostringstream quiet;
  for (const Planned& p : plan) {
    TrainConfigSource s = source;
    for (const auto& [key, value] : p.keys) s.overrides[key] = value;
    s.overrides["seed"] = ParseTomlValue(std::to_string(p.seed), "seed");
    configs.push_back(ResolveTrainConfig(registry, s, configs.empty() ? notes : quiet));
  }
  // The work: a run alone, or a grid point's seeds in lockstep as one DqnBatch (RunBatchTraining).
  // On the CPU, where a batch is one thread, a point's seeds split into as many batches as it
  // takes to give every worker one (contiguous slices of the seed list).
  const bool want_lockstep = options.lockstep.value_or(options.device == Device::kCuda);
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = options.device == Device::kCuda ? 1 : options.jobs > 0 ? options.jobs : hardware;
  const std::size_t points = plan.size() / seeds.size();
  const std::size_t slices = std::min(seeds.size(), std::max<std::size_t>(1, (workers + points - 1) / points));
  struct Unit {
    std::vector<std::size_t> runs;  // indices into plan
    bool lockstep = false;
  };
  std::vector<Unit> units;
  for (std::size_t first = 0; first < plan.size(); first += seeds.size()) {
    const std::string why = DqnBatch::Unbatchable(registry, configs[first], static_cast<int>(seeds.size()));
    if (options.lockstep.value_or(false) && !why.empty())
      throw std::invalid_argument("lockstep" + (plan[first].point.empty() ? "" : " at " + plan[first].point) + ": " +
                                  why);
    if (want_lockstep && why.empty()) {
      for (std::size_t s = 0; s < slices; ++s) {
        units.push_back({{}, true});
        for (std::size_t k = s * seeds.size() / slices; k < (s + 1) * seeds.size() / slices; ++k)
          units.back().runs.push_back(first + k);
      }
    } else {
      for (std::size_t i = first; i < first + seeds.size(); ++i) units.push_back({{i}, false});
    }
  }
  const bool any_lockstep = std::any_of(units.begin(), units.end(), [](const Unit& u) { return u.lockstep; });
  const int jobs = std::max(1, std::min<int>(workers, static_cast<int>(units.size())));
  std::size_t largest = 1;
  for (const Unit& u : units) largest = std::max(largest, u.runs.size());
  CheckBatchMemory(
      registry, configs, jobs * static_cast<int>(largest), options.device,
      any_lockstep ? "fewer seeds per batch, --lockstep off, or a smaller buffer_size" : "lower --jobs or buffer_size");
  if (!options.resume) {
    DqnConfig base_config = ResolveTrainConfig(registry, source, quiet);
    WriteFileAtomically((out / "base_config.toml").string(), base_config.ToToml());
    WriteFileAtomically((out / "batch.toml").string(), BatchToml(seeds, sweep));
  }

  notes << "cugym train: " << plan.size() << " runs (" << (sweep.empty() ? 1 : plan.size() / seeds.size())
        << " grid points x " << seeds.size() << " seeds), "
        << (!any_lockstep ? ""
            : slices == 1 ? "each grid point's seeds in lockstep as one batch, "
                          : "each grid point's seeds in lockstep as " + std::to_string(slices) + " batches, ")
        << jobs << " at a time on " << DeviceName(options.device) << "\n";

  MultiRunResult result;
  result.runs.resize(plan.size());
  std::vector<double> latest(plan.size(), kNaN);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stopped{false};
  std::mutex mutex;  // progress, notes, the first error
  int done = 0, interrupted = 0, running = 0;
  std::string failure;
  const auto report = [&] {  // under mutex
    MultiRunProgress p;
    p.total = static_cast<int>(plan.size());
    p.done = done;
    p.interrupted = interrupted;
    p.running = running;
    p.best_eval = p.worst_eval = kNaN;
    for (double x : latest) {
      if (std::isnan(x)) continue;
      p.best_eval = std::isnan(p.best_eval) ? x : std::max(p.best_eval, x);
      p.worst_eval = std::isnan(p.worst_eval) ? x : std::min(p.worst_eval, x);
    }
    on_progress(p);
  };
  // stop() is polled on the calling thread only (Python handles signals on its main thread); the
  // runs read the flag it sets.
  const auto should_stop = [&] { return stopped.load(); };
  // Run i's options: a run with a checkpoint continues; one that stopped before its first
  // checkpoint, or never started, starts again in an empty folder (what it wrote is the batch's own).
  const auto run_options = [&](std::size_t i, int& live) {
    const Planned& p = plan[i];
    result.runs[i].point = p.point;
    result.runs[i].seed = p.seed;
    TrainRunOptions run;
    run.run_dir = p.dir.string();
    run.device = options.device;
    const bool has_checkpoint = !NewestCheckpoint(p.dir.string()).empty();
    run.resume = options.resume && has_checkpoint;
    if (options.resume && !has_checkpoint) fs::remove_all(p.dir);
    if (!run.resume) fs::create_directories(p.dir.parent_path());
    run.on_eval = [&, i](const DqnEvaluation& e) {
      std::lock_guard<std::mutex> lock(mutex);
      latest[i] = e.result.mean_return;
      report();
      return false;
    };
    run.on_stop = [&] {  // training over; its final evaluation may still wait (lockstep)
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      --live;
      report();
    };
    return run;
  };
  // A finished run resumes from its last checkpoint too: nothing is left to train, and its model and
  // evaluation come out again, the same bits. A resumed run takes its own config.toml and the
  // overrides given on resume (--total-steps extends every run of the batch, as it does a run alone).
  const auto run_config = [&](std::size_t i, const TrainRunOptions& run) {
    std::ostringstream run_notes;
    TrainConfigSource s;
    s.resume_dir = plan[i].dir.string();
    s.overrides = source.overrides;
    return run.resume ? ResolveTrainConfig(registry, s, run_notes) : configs[i];
  };
  // `live` counts a unit's runs training (taken off `running` if it fails).
  const auto finished = [&](std::size_t i, const TrainRunResult& r) {
    std::lock_guard<std::mutex> lock(mutex);
    result.runs[i].result = r;
    ++(r.interrupted ? interrupted : done);
    if (r.evaluated) latest[i] = r.eval.mean_return;
    report();
  };
  const auto started = [&](int runs, int& live) {
    std::lock_guard<std::mutex> lock(mutex);
    running += runs;
    live += runs;
    report();
  };
  const auto train_alone = [&](std::size_t i, int& live) {
    const TrainRunOptions run = run_options(i, live);
    const DqnConfig config = run_config(i, run);
    started(1, live);
    std::ostringstream run_notes;
    finished(i, RunTraining(
                    registry, config, run, [](const DqnProgress&) {}, should_stop, run_notes));
  };
  // A grid point's runs in lockstep. Resumed, they go on in groups of one step and one config (a
  // batch stopped together has one; runs trained apart before may not), the others start afresh.
  const auto train_lockstep = [&](const std::vector<std::size_t>& unit, int& live) {
    struct Group {
      DqnConfig config;
      std::vector<std::size_t> runs;
      std::vector<uint64_t> seeds;
      std::vector<TrainRunOptions> options;
    };
    std::map<std::string, Group> groups;
    for (std::size_t i : unit) {
      TrainRunOptions run = run_options(i, live);
      DqnConfig config = run_config(i, run);
      const uint64_t seed = config.seed;
      config.seed = 0;
      const std::string checkpoint = run.resume ? fs::path(NewestCheckpoint(run.run_dir)).filename().string() : "";
      Group& group = groups[checkpoint + "\n" + config.ToToml()];
      group.config = config;
      group.runs.push_back(i);
      group.seeds.push_back(seed);
      group.options.push_back(std::move(run));
    }
    for (auto& [key, group] : groups) {
      if (should_stop()) break;
      started(static_cast<int>(group.runs.size()), live);
      std::ostringstream batch_notes;  // its shrinks and where its time went, said once it ends
      RunBatchTraining(registry, group.config, group.seeds, group.options, should_stop, batch_notes,
                       [&](std::size_t k, const TrainRunResult& r) { finished(group.runs[k], r); });
      std::lock_guard<std::mutex> lock(mutex);
      notes << batch_notes.str();
    }
  };
  std::atomic<int> workers_done{0};
  const auto worker = [&] {
#ifdef _OPENMP
    omp_set_num_threads(1);  // one run (or one batch) per core: its envs step on this thread
#endif
    for (std::size_t u; (u = next.fetch_add(1)) < units.size();) {
      if (should_stop()) break;
      const Unit& unit = units[u];
      int live = 0;
      try {
        if (unit.lockstep) {
          train_lockstep(unit.runs, live);
        } else {
          train_alone(unit.runs.front(), live);
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        running -= live;
        if (failure.empty()) failure = plan[unit.runs.front()].dir.string() + ": " + e.what();
        stopped.store(true);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t)
    threads.emplace_back([&] {
      worker();
      ++workers_done;
    });
  while (workers_done.load() < jobs) {
    if (!stopped.load() && stop()) stopped.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
  result.interrupted = stopped.load();
  if (!result.interrupted) WriteSummary(registry, configs.front().env_id, result.runs, out, result);
  return result;
}

}  // namespace cugym::agent
