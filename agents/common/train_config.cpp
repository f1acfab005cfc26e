// A training run's config: its keys, the shipped configs, where it comes from (train_config.h).
#include "agents/common/train_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "agents/common/algorithm.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

std::string Where(const std::string& key, const TomlValue& v) {
  return v.line > 0 ? key + " (line " + std::to_string(v.line) + ")" : key;
}

int64_t AsInt(const std::string& key, const TomlValue& v) {
  if (v.kind != TomlValue::Kind::kInteger) throw std::invalid_argument(Where(key, v) + " must be an integer");
  return v.integer;
}
double AsNumber(const std::string& key, const TomlValue& v) {
  if (v.kind != TomlValue::Kind::kInteger && v.kind != TomlValue::Kind::kFloat)
    throw std::invalid_argument(Where(key, v) + " must be a number");
  return v.number;
}
bool AsBool(const std::string& key, const TomlValue& v) {
  if (v.kind != TomlValue::Kind::kBool) throw std::invalid_argument(Where(key, v) + " must be true or false");
  return v.boolean;
}
std::string AsString(const std::string& key, const TomlValue& v) {
  if (v.kind != TomlValue::Kind::kString) throw std::invalid_argument(Where(key, v) + " must be a string");
  return v.text;
}

TomlValue Int(int64_t n) {
  TomlValue v;
  v.kind = TomlValue::Kind::kInteger;
  v.integer = n;
  v.number = static_cast<double>(n);
  return v;
}
TomlValue Float(double x) {
  TomlValue v;
  v.kind = TomlValue::Kind::kFloat;
  v.number = x;
  return v;
}
TomlValue Str(const std::string& s) {
  TomlValue v;
  v.kind = TomlValue::Kind::kString;
  v.text = s;
  return v;
}
TomlValue Bool(bool b) {
  TomlValue v;
  v.kind = TomlValue::Kind::kBool;
  v.boolean = b;
  return v;
}

// Every key, declared once: its name and the member it sets. The member's type says how its TOML
// value is read and written back.
using Member = std::variant<std::string TrainConfig::*, uint64_t TrainConfig::*, int64_t TrainConfig::*,
                            double TrainConfig::*, bool TrainConfig::*, std::vector<int> TrainConfig::*>;
struct Key {
  const char* name;
  Member member;
};

// Sorted by name: config.toml lists them in this order, and the unknown-key error too.
const Key kKeys[] = {
    {"adam_eps", &TrainConfig::adam_eps},
    {"algo", &TrainConfig::algo},
    {"alpha", &TrainConfig::alpha},
    {"anneal_lr", &TrainConfig::anneal_lr},
    {"autotune", &TrainConfig::autotune},
    {"batch_size", &TrainConfig::batch_size},
    {"buffer_size", &TrainConfig::buffer_size},
    {"checkpoint_interval", &TrainConfig::checkpoint_interval},
    {"clip_coef", &TrainConfig::clip_coef},
    {"clip_vloss", &TrainConfig::clip_vloss},
    {"conv_channels", &TrainConfig::conv_channels},
    {"cuda_graph", &TrainConfig::cuda_graph},
    {"double_dqn", &TrainConfig::double_dqn},
    {"dueling", &TrainConfig::dueling},
    {"end_e", &TrainConfig::end_e},
    {"ent_coef", &TrainConfig::ent_coef},
    {"env_id", &TrainConfig::env_id},
    {"eval_episodes", &TrainConfig::eval_episodes},
    {"eval_interval", &TrainConfig::eval_interval},
    {"exploration_fraction", &TrainConfig::exploration_fraction},
    {"exploration_hold_mu", &TrainConfig::exploration_hold_mu},
    {"exploration_max_hold", &TrainConfig::exploration_max_hold},
    {"gae_lambda", &TrainConfig::gae_lambda},
    {"gamma", &TrainConfig::gamma},
    {"hidden_sizes", &TrainConfig::hidden_sizes},
    {"init_log_std", &TrainConfig::init_log_std},
    {"keep_checkpoints", &TrainConfig::keep_checkpoints},
    {"layer_norm", &TrainConfig::layer_norm},
    {"learning_rate", &TrainConfig::learning_rate},
    {"learning_starts", &TrainConfig::learning_starts},
    {"log_interval", &TrainConfig::log_interval},
    {"loss", &TrainConfig::loss},
    {"max_grad_norm", &TrainConfig::max_grad_norm},
    {"n_step", &TrainConfig::n_step},
    {"noise_correlation", &TrainConfig::noise_correlation},
    {"norm_adv", &TrainConfig::norm_adv},
    {"normalize_obs", &TrainConfig::normalize_obs},
    {"normalize_reward", &TrainConfig::normalize_reward},
    {"num_envs", &TrainConfig::num_envs},
    {"num_epochs", &TrainConfig::num_epochs},
    {"num_minibatches", &TrainConfig::num_minibatches},
    {"num_steps", &TrainConfig::num_steps},
    {"optimizer", &TrainConfig::optimizer},
    {"per_alpha", &TrainConfig::per_alpha},
    {"per_beta", &TrainConfig::per_beta},
    {"per_eps", &TrainConfig::per_eps},
    {"policy", &TrainConfig::policy},
    {"policy_frequency", &TrainConfig::policy_frequency},
    {"policy_lr", &TrainConfig::policy_lr},
    {"prioritized_replay", &TrainConfig::prioritized_replay},
    {"q_lambda", &TrainConfig::q_lambda},
    {"replay_ratio", &TrainConfig::replay_ratio},
    {"reward_scale", &TrainConfig::reward_scale},
    {"save_replay", &TrainConfig::save_replay},
    {"seed", &TrainConfig::seed},
    {"squash", &TrainConfig::squash},
    {"start_e", &TrainConfig::start_e},
    {"stop_at_threshold", &TrainConfig::stop_at_threshold},
    {"stop_margin", &TrainConfig::stop_margin},
    {"target_entropy_per_dim", &TrainConfig::target_entropy_per_dim},
    {"target_kl", &TrainConfig::target_kl},
    {"target_update_interval", &TrainConfig::target_update_interval},
    {"tau", &TrainConfig::tau},
    {"tensorboard", &TrainConfig::tensorboard},
    {"total_steps", &TrainConfig::total_steps},
    {"vf_coef", &TrainConfig::vf_coef},
};

const Key* FindKey(const std::string& name) {
  for (const Key& key : kKeys)
    if (name == key.name) return &key;
  return nullptr;
}

// Reads `v` into config.*member (`key` as written, for errors).
void Set(TrainConfig& config, const Member& member, const std::string& key, const TomlValue& v) {
  std::visit(
      [&](auto field) {
        auto& target = config.*field;
        using T = std::decay_t<decltype(target)>;
        if constexpr (std::is_same_v<T, std::string>) {
          target = AsString(key, v);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          const int64_t n = AsInt(key, v);
          if (n < 0) throw std::invalid_argument(Where(key, v) + " must be >= 0");
          target = static_cast<uint64_t>(n);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          target = AsInt(key, v);
        } else if constexpr (std::is_same_v<T, double>) {
          target = AsNumber(key, v);
        } else if constexpr (std::is_same_v<T, bool>) {
          target = AsBool(key, v);
        } else {
          static_assert(std::is_same_v<T, std::vector<int>>);
          if (v.kind != TomlValue::Kind::kArray)
            throw std::invalid_argument(Where(key, v) + " must be an array of integers, e.g. [120, 84]");
          target.clear();
          for (const TomlValue& item : v.items) target.push_back(static_cast<int>(AsInt(key, item)));
        }
      },
      member);
}

TomlValue Get(const TrainConfig& config, const Member& member) {
  return std::visit(
      [&](auto field) {
        const auto& value = config.*field;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return Str(value);
        } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) {
          return Int(static_cast<int64_t>(value));
        } else if constexpr (std::is_same_v<T, double>) {
          return Float(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          return Bool(value);
        } else {
          TomlValue array;
          array.kind = TomlValue::Kind::kArray;
          for (int h : value) array.items.push_back(Int(h));
          return array;
        }
      },
      member);
}

void Require(bool ok, const std::string& key, const std::string& rule, const std::string& value) {
  if (!ok) throw std::invalid_argument(key + " " + rule + ", got " + value);
}

// `v` read as an algorithm's own key of the kind its default has.
TomlValue OwnValue(const std::string& name, const AlgorithmKey& key, const TomlValue& v) {
  switch (key.value.kind) {
    case TomlValue::Kind::kInteger:
      return Int(AsInt(name, v));
    case TomlValue::Kind::kFloat:
      return Float(AsNumber(name, v));
    case TomlValue::Kind::kBool:
      return Bool(AsBool(name, v));
    case TomlValue::Kind::kString:
      return Str(AsString(name, v));
    case TomlValue::Kind::kArray:
      break;
  }
  throw std::invalid_argument(name + ": an algorithm's own keys are integers, numbers, bools or strings");
}

// The algorithm's own keys (Algorithm::keys): each within its rule, and none of another algorithm's.
void RequireAlgorithmKeys(const TrainConfig& config) {
  for (const auto& [name, value] : config.own) {
    const auto [owner, key] = FindAlgorithmKey(name);
    if (owner != nullptr && owner->name != config.algo)
      throw std::invalid_argument(name + " is a " + owner->name + " key (algo = \"" + owner->name + "\"), got " +
                                  value.ToToml());
  }
  if (const Algorithm* algorithm = FindAlgorithm(config.algo))
    for (const AlgorithmKey& key : algorithm->keys) {
      const TomlValue& value = config.Own(key.name);
      Require(!key.valid || key.valid(value), key.name, key.rule, value.ToToml());
    }
}

// Keys that only one family of agents reads, refused (when set away from their defaults) for the
// others: a key that would do nothing is a mistake the user should hear of.
constexpr const char* kPpoKeys[] = {"gae_lambda",   "clip_coef",     "clip_vloss",       "ent_coef",
                                    "vf_coef",      "norm_adv",      "policy",           "squash",
                                    "init_log_std", "normalize_obs", "normalize_reward", "target_kl"};
constexpr const char* kQKeys[] = {"buffer_size",
                                  "batch_size",
                                  "n_step",
                                  "tau",
                                  "target_update_interval",
                                  "start_e",
                                  "end_e",
                                  "exploration_fraction",
                                  "exploration_hold_mu",
                                  "exploration_max_hold",
                                  "learning_starts",
                                  "replay_ratio",
                                  "loss",
                                  "double_dqn",
                                  "dueling",
                                  "prioritized_replay",
                                  "per_alpha",
                                  "per_beta",
                                  "per_eps",
                                  "save_replay",
                                  "q_lambda",
                                  "reward_scale"};

constexpr const char* kSacKeys[] = {"policy_lr", "policy_frequency",       "alpha",
                                    "autotune",  "target_entropy_per_dim", "noise_correlation"};
// The Q-learners' keys that SAC's replay memory and critics read too.
constexpr const char* kReplayKeys[] = {"buffer_size",     "batch_size",   "tau",
                                       "learning_starts", "replay_ratio", "save_replay"};

void RequireOwnKeys(const TrainConfig& config) {
  static const TrainConfig defaults;
  const auto refuse_set = [&](const char* key, const std::string& why) {
    const Key* k = FindKey(key);
    const TomlValue value = Get(config, k->member);
    if (value.ToToml() == Get(defaults, k->member).ToToml()) return;
    std::ostringstream shown;  // as Validate shows numbers
    if (value.kind == TomlValue::Kind::kFloat)
      shown << value.number;
    else
      shown << value.ToToml();
    throw std::invalid_argument(std::string(key) + " " + why + " (algo is \"" + config.algo + "\"), got " +
                                shown.str());
  };
  const auto shared = [](const char* key) {
    for (const char* k : kReplayKeys)
      if (std::string(k) == key) return true;
    return false;
  };
  if (config.ppo()) {
    for (const char* key : kQKeys) refuse_set(key, "is a DQN or PQN key, which PPO does not read");
  } else {
    for (const char* key : kPpoKeys) refuse_set(key, "is a PPO key (algo = \"ppo\")");
  }
  if (config.sac()) {
    for (const char* key : kQKeys)
      if (!shared(key)) refuse_set(key, "is a DQN or PQN key, which SAC does not read");
  } else {
    for (const char* key : kSacKeys) refuse_set(key, "is a SAC key (algo = \"sac\")");
  }
}

}  // namespace

void TrainConfig::Apply(const TomlTable& table) {
  for (const auto& [key, value] : table) {
    // Keys may sit in a [dqn] table or at the top level.
    const std::string name = key.rfind("dqn.", 0) == 0 ? key.substr(4) : key;
    const Key* found = FindKey(name);
    if (found) {
      Set(*this, found->member, key, value);
      continue;
    }
    const auto [algorithm, own_key] = FindAlgorithmKey(name);
    if (own_key == nullptr) {
      std::string known;
      for (const Key& k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k.name);
      for (const std::string& algo_name : AlgorithmNames())
        for (const AlgorithmKey& k : FindAlgorithm(algo_name)->keys) known += ", " + k.name;
      throw std::invalid_argument("unknown config key '" + key + "'" +
                                  (value.line > 0 ? " (line " + std::to_string(value.line) + ")" : "") +
                                  "; known keys: " + known);
    }
    own[name] = OwnValue(name, *own_key, value);
  }
}

void TrainConfig::Validate() const {
  auto s = [](double x) {
    std::ostringstream out;
    out << x;
    return out.str();
  };
  Require(!env_id.empty(), "env_id", "must be set", "\"\"");
  Require(num_envs > 0, "num_envs", "must be > 0", s(num_envs));
  Require(total_steps > 0, "total_steps", "must be > 0", s(total_steps));
  Require(!hidden_sizes.empty(), "hidden_sizes", "must list at least one layer", "[]");
  for (int h : hidden_sizes) Require(h > 0 && h <= 65536, "hidden_sizes", "entries must be in 1..65536", s(h));
  Require(conv_channels >= 0 && conv_channels <= 4096, "conv_channels", "must be in 0..4096 (0: no convolution)",
          s(conv_channels));
  Require(learning_rate > 0 && learning_rate < 1, "learning_rate", "must be in (0, 1)", s(learning_rate));
  Require(adam_eps > 0, "adam_eps", "must be > 0", s(adam_eps));
  Require(buffer_size > 0, "buffer_size", "must be > 0", s(buffer_size));
  Require(batch_size > 0, "batch_size", "must be > 0", s(batch_size));
  if (!pqn() && !ppo()) {  // PQN and PPO have no replay memory
    Require(
        num_envs <= buffer_size, "num_envs",
        "must not exceed buffer_size (" + s(buffer_size) + "): one vector step writes num_envs rows of the replay ring",
        s(num_envs));
    Require(batch_size <= buffer_size, "batch_size", "must not exceed buffer_size (" + s(buffer_size) + ")",
            s(batch_size));
  }
  Require(gamma >= 0 && gamma <= 1, "gamma", "must be in [0, 1]", s(gamma));
  Require(n_step >= 1 && n_step <= 1000, "n_step", "must be in 1..1000", s(n_step));
  Require(per_alpha >= 0 && per_alpha <= 10, "per_alpha", "must be in [0, 10] (0: uniform sampling)", s(per_alpha));
  Require(per_beta >= 0 && per_beta <= 1, "per_beta", "must be in [0, 1]", s(per_beta));
  Require(per_eps > 0 && per_eps <= 1, "per_eps", "must be in (0, 1]", s(per_eps));
  Require(tau > 0 && tau <= 1, "tau", "must be in (0, 1]", s(tau));
  Require(target_update_interval > 0, "target_update_interval", "must be > 0", s(target_update_interval));
  Require(start_e >= 0 && start_e <= 1, "start_e", "must be in [0, 1]", s(start_e));
  Require(end_e >= 0 && end_e <= 1, "end_e", "must be in [0, 1]", s(end_e));
  Require(exploration_fraction > 0 && exploration_fraction <= 1, "exploration_fraction", "must be in (0, 1]",
          s(exploration_fraction));
  Require(exploration_hold_mu == 0 || (exploration_hold_mu > 1 && exploration_hold_mu <= 100), "exploration_hold_mu",
          "must be 0 (off) or in (1, 100]", s(exploration_hold_mu));
  Require(exploration_max_hold >= 1 && exploration_max_hold <= 1000000000, "exploration_max_hold", "must be in 1..1e9",
          s(exploration_max_hold));
  Require(learning_starts >= 0, "learning_starts", "must be >= 0", s(learning_starts));
  Require(replay_ratio > 0 && replay_ratio <= 64, "replay_ratio", "must be in (0, 64]", s(replay_ratio));
  Require(loss == "mse" || loss == "huber", "loss", "must be \"mse\" or \"huber\"", "\"" + loss + "\"");
  Require(max_grad_norm >= 0, "max_grad_norm", "must be >= 0", s(max_grad_norm));
  Require(log_interval > 0, "log_interval", "must be > 0", s(log_interval));
  Require(checkpoint_interval >= 0, "checkpoint_interval", "must be >= 0", s(checkpoint_interval));
  Require(keep_checkpoints > 0, "keep_checkpoints", "must be > 0", s(keep_checkpoints));
  Require(eval_episodes >= 0 && eval_episodes <= 100000, "eval_episodes", "must be in 0..100000", s(eval_episodes));
  Require(eval_interval > 0, "eval_interval", "must be > 0 (eval_episodes = 0 turns evaluation off)", s(eval_interval));
  Require(stop_margin >= 0 && stop_margin <= 10, "stop_margin", "must be in [0, 10] standard errors", s(stop_margin));
  if (FindAlgorithm(algo) == nullptr) {
    const std::vector<std::string> names = AlgorithmNames();
    std::string known;
    for (std::size_t i = 0; i < names.size(); ++i)
      known += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
    Require(false, "algo", "must be " + known, "\"" + algo + "\"");
  }
  Require(optimizer == "adam" || optimizer == "radam", "optimizer", "must be \"adam\" or \"radam\"",
          "\"" + optimizer + "\"");
  Require(num_steps >= 1 && num_steps <= 100000, "num_steps", "must be in 1..100000", s(num_steps));
  Require(num_epochs >= 1 && num_epochs <= 1000, "num_epochs", "must be in 1..1000", s(num_epochs));
  Require(num_minibatches >= 1, "num_minibatches", "must be >= 1", s(num_minibatches));
  Require(q_lambda >= 0 && q_lambda <= 1, "q_lambda", "must be in [0, 1]", s(q_lambda));
  Require(std::isfinite(reward_scale) && reward_scale > 0, "reward_scale", "must be > 0", s(reward_scale));
  Require(gae_lambda >= 0 && gae_lambda <= 1, "gae_lambda", "must be in [0, 1]", s(gae_lambda));
  Require(clip_coef > 0 && clip_coef <= 10, "clip_coef", "must be in (0, 10]", s(clip_coef));
  Require(ent_coef >= 0 && ent_coef <= 10, "ent_coef", "must be in [0, 10]", s(ent_coef));
  Require(vf_coef >= 0 && vf_coef <= 100, "vf_coef", "must be in [0, 100]", s(vf_coef));
  Require(policy == "auto" || policy == "categorical" || policy == "gaussian", "policy",
          "must be \"auto\", \"categorical\" or \"gaussian\"", "\"" + policy + "\"");
  Require(init_log_std >= -20 && init_log_std <= 2, "init_log_std", "must be in [-20, 2]", s(init_log_std));
  Require(target_kl >= 0 && target_kl <= 10, "target_kl", "must be in [0, 10] (0: off)", s(target_kl));
  Require(policy_lr > 0 && policy_lr < 1, "policy_lr", "must be in (0, 1)", s(policy_lr));
  Require(policy_frequency >= 1 && policy_frequency <= 1000, "policy_frequency", "must be in 1..1000",
          s(policy_frequency));
  Require(alpha > 0 && alpha <= 100, "alpha", "must be in (0, 100]", s(alpha));
  Require(std::isfinite(target_entropy_per_dim) && target_entropy_per_dim >= -100 && target_entropy_per_dim <= 100,
          "target_entropy_per_dim", "must be in [-100, 100]", s(target_entropy_per_dim));
  Require(noise_correlation >= 0 && noise_correlation < 1, "noise_correlation", "must be in [0, 1) (0: white noise)",
          s(noise_correlation));
  RequireOwnKeys(*this);
  RequireAlgorithmKeys(*this);
  if (!pqn() && !ppo()) return;
  Require(rollout_size() <= (int64_t{1} << 30), "num_steps",
          "times num_envs (" + s(num_envs) + ") must be at most 2^30 transitions per rollout", s(num_steps));
  Require(rollout_size() % num_minibatches == 0 && num_minibatches <= rollout_size(), "num_minibatches",
          "must divide num_envs * num_steps (" + s(rollout_size()) + ")", s(num_minibatches));
  if (ppo()) return;  // RequireOwnKeys refused the others' keys
  // Keys that only mean something with a replay memory and a target network.
  Require(!prioritized_replay, "prioritized_replay", "needs a replay memory (algo = \"dqn\")", "true");
  Require(!double_dqn, "double_dqn", "needs a target network (algo = \"dqn\")", "true");
  Require(n_step == 1, "n_step", "must be 1 with algo = \"pqn\" (q_lambda sets how far its targets look)", s(n_step));
}

const ShippedConfig* FindShippedConfig(const std::string& env_id, const std::string& algo) {
  for (int i = 0; i < kNumShippedConfigs; ++i) {
    TrainConfig config;
    config.Apply(ParseToml(kShippedConfigs[i].toml, kShippedConfigs[i].path));
    if (config.env_id == env_id && (algo.empty() || config.algo == algo)) return &kShippedConfigs[i];
  }
  return nullptr;
}

int64_t TrainConfig::PlannedUpdates() const {
  if (pqn() || ppo()) {
    // Rollouts until total_steps is reached, each with num_epochs * num_minibatches updates.
    const int64_t rollouts = (total_steps + rollout_size() - 1) / rollout_size();
    return rollouts * num_epochs * num_minibatches;
  }
  const int64_t n = num_envs;
  const int64_t vector_steps = (total_steps + n - 1) / n;
  const int64_t first = std::max(learning_starts / n + 1, (batch_size + n - 1) / n);  // 1-based
  const int64_t learning = std::max<int64_t>(vector_steps - first + 1, 0);
  return static_cast<int64_t>(std::floor(replay_ratio * static_cast<double>(n * learning) + 1e-9));
}

const TomlValue& TrainConfig::Own(const std::string& key) const {
  const auto set = own.find(key);
  if (set != own.end()) return set->second;
  const auto [algorithm, registered] = FindAlgorithmKey(key);
  if (registered == nullptr) throw std::invalid_argument("TrainConfig::Own: no algorithm has a key '" + key + "'");
  return registered->value;
}

std::string TrainConfig::ToToml() const {
  std::string out = "# cugym run configuration (resolved: defaults, file and --set overrides)\n";
  for (const Key& k : kKeys) out += std::string(k.name) + " = " + Get(*this, k.member).ToToml() + "\n";
  // The algorithm's own keys, after the shared ones; another algorithm's keys are refused by Validate.
  if (const Algorithm* algorithm = FindAlgorithm(algo))
    for (const AlgorithmKey& key : algorithm->keys) out += key.name + " = " + Own(key.name).ToToml() + "\n";
  return out;
}

TrainConfig ResolveTrainConfig(const Registry& registry, const TrainConfigSource& source, std::ostream& notes) {
  TrainConfig config;
  if (!source.resume_dir.empty()) {
    const fs::path run_dir = source.resume_dir;
    if (!fs::is_regular_file(run_dir / "config.toml"))
      throw std::invalid_argument("resume " + run_dir.string() + ": no config.toml there (not a cugym run folder)");
    if (!source.config_path.empty() || !source.env_id.empty())
      throw std::invalid_argument("a resumed run takes its own config; change keys with overrides instead");
    config.Apply(ReadTomlFile((run_dir / "config.toml").string()));
  } else if (!source.config_path.empty()) {
    config.Apply(ReadTomlFile(source.config_path));
  } else if (source.table) {
    config.Apply(*source.table);
  } else {
    // No config file: the tuned one shipped for the env when there is one, else the defaults.
    const std::string env = !source.env_id.empty() ? source.env_id : config.env_id;
    registry.Get(env);  // an unknown id is the only thing said
    // An algorithm asked for among the overrides picks its own tuned config (--set algo=pqn);
    // otherwise the env's default (FindShippedConfig): the first listed for it.
    auto algo = source.overrides.find("algo");
    const std::string wanted =
        algo != source.overrides.end() && algo->second.kind == TomlValue::Kind::kString ? algo->second.text : "";
    if (const ShippedConfig* shipped = FindShippedConfig(env, wanted)) {
      config.Apply(ParseToml(shipped->toml, shipped->path));
      notes << "cugym train: " << env << " with the hyperparameters of " << shipped->path
            << " (built in; pass a config file for others)\n";
    } else {
      const bool dqn = wanted.empty() || wanted == "dqn";
      notes << "cugym train: no tuned config ships for " << env << (dqn ? "" : " with algo = " + wanted)
            << "; using the defaults (configs/cartpole.toml's values, docs/dqn.md"
            << (dqn ? "" : ", docs/" + wanted + ".md") << ")\n";
    }
  }
  if (!source.env_id.empty()) config.env_id = source.env_id;
  for (const auto& [key, value] : source.overrides) config.Apply({{key, value}});
  config.Validate();
  registry.Get(config.env_id);
  return config;
}

}  // namespace cugym::agent
