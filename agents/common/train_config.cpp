// A training run's config: its keys, read from TOML and written back, and their checks (train_config.h).
#include "agents/common/train_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "agents/common/algorithm.h"

namespace cugym::agent {
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
          return TomlValue::String(value);
        } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) {
          return TomlValue::Integer(static_cast<int64_t>(value));
        } else if constexpr (std::is_same_v<T, double>) {
          return TomlValue::Float(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          return TomlValue::Bool(value);
        } else {
          std::vector<TomlValue> items;
          for (int h : value) items.push_back(TomlValue::Integer(h));
          return TomlValue::Array(std::move(items));
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
      return TomlValue::Integer(AsInt(name, v));
    case TomlValue::Kind::kFloat:
      return TomlValue::Float(AsNumber(name, v));
    case TomlValue::Kind::kBool:
      return TomlValue::Bool(AsBool(name, v));
    case TomlValue::Kind::kString:
      return TomlValue::String(AsString(name, v));
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

// The keys only some algorithms read (Algorithm::reads), refused when set away from their defaults
// with an algo that does not read them: a key that would do nothing is a mistake the user should
// hear of. Keys are taken in the algorithms' order, so the first one set is the one named.
void RequireReadKeys(const TrainConfig& config) {
  static const TrainConfig defaults;
  const std::vector<std::string>& mine = GetAlgorithm(config.algo).reads;
  std::vector<std::pair<std::string, std::vector<std::string>>> readers;  // key, the algos that read it
  for (const std::string& name : AlgorithmNames())
    for (const std::string& key : GetAlgorithm(name).reads) {
      auto known = std::find_if(readers.begin(), readers.end(), [&](const auto& r) { return r.first == key; });
      if (known == readers.end()) known = readers.insert(readers.end(), {key, {}});
      known->second.push_back(name);
    }
  const auto upper = [](std::string name) {
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return name;
  };
  for (const auto& [key, algos] : readers) {
    if (std::find(mine.begin(), mine.end(), key) != mine.end()) continue;
    const Key* k = FindKey(key);
    if (k == nullptr) throw std::logic_error("algorithm " + algos.front() + " reads an unknown key " + key);
    const TomlValue value = Get(config, k->member);
    if (value.ToToml() == Get(defaults, k->member).ToToml()) continue;
    std::ostringstream shown;  // as Validate shows numbers
    if (value.kind == TomlValue::Kind::kFloat)
      shown << value.number;
    else
      shown << value.ToToml();
    std::string why;
    if (algos.size() == 1) {
      why = "is a " + upper(algos.front()) + " key (algo = \"" + algos.front() + "\")";
    } else {
      for (std::size_t i = 0; i < algos.size(); ++i)
        why += (i == 0 ? "is a " : i + 1 == algos.size() ? " or " : ", ") + upper(algos[i]);
      why += " key, which " + upper(config.algo) + " does not read";
    }
    throw std::invalid_argument(key + " " + why + " (algo is \"" + config.algo + "\"), got " + shown.str());
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

std::string ShowNumber(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

void RequireKey(bool ok, const std::string& key, const std::string& rule, double value) {
  Require(ok, key, rule, ShowNumber(value));
}

void RequireKey(bool ok, const std::string& key, const std::string& rule, const std::string& value) {
  Require(ok, key, rule, value);
}

void TrainConfig::Validate() const {
  const auto s = ShowNumber;
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
  RequireReadKeys(*this);
  RequireAlgorithmKeys(*this);
  if (const Algorithm& algorithm = GetAlgorithm(algo); algorithm.check) algorithm.check(*this);
}

int64_t TrainConfig::PlannedUpdates() const {
  const Algorithm& algorithm = GetAlgorithm(algo);
  return algorithm.planned_updates ? algorithm.planned_updates(*this) : 0;
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

}  // namespace cugym::agent
