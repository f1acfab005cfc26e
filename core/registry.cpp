// The env registry.
#include "core/registry.h"

#include <stdexcept>
#include <utility>

#include "core/memory.h"

namespace cugym {

void Registry::Register(EnvEntry entry) {
  if (entry.spec.id.empty()) throw std::invalid_argument("cannot register an env without an id");
  if (Find(entry.spec.id) != nullptr)
    throw std::invalid_argument("env id '" + entry.spec.id + "' is already registered");
  if (!entry.make_cpu) throw std::invalid_argument("env '" + entry.spec.id + "' has no CPU factory");
  entries_.push_back(std::move(entry));
}

namespace {

// "ID:OPTION" -> (ID, OPTION); (id, "") without an option.
std::pair<std::string, std::string> SplitOption(const std::string& id) {
  const std::size_t colon = id.find(':');
  if (colon == std::string::npos) return {id, ""};
  return {id.substr(0, colon), id.substr(colon + 1)};
}

}  // namespace

const EnvAlias* Registry::FindAlias(const std::string& id) const {
  for (const EnvAlias& alias : aliases_)
    if (alias.old_id == id) return &alias;
  return nullptr;
}

const EnvEntry* Registry::Find(const std::string& id) const {
  for (const EnvEntry& entry : entries_) {
    if (entry.spec.id == id) return &entry;
  }
  if (const EnvAlias* alias = FindAlias(id)) return Find(alias->id);
  return nullptr;
}

std::vector<std::string> Registry::Options(const std::string& id) const {
  std::vector<std::string> options;
  for (const EnvEntry& entry : entries_) {
    const auto [base, option] = SplitOption(entry.spec.id);
    if (base == id && !option.empty()) options.push_back(option);
  }
  return options;
}

void Registry::AddAlias(const std::string& old_id, const std::string& id, const std::string& note) {
  for (const EnvEntry& entry : entries_)
    if (entry.spec.id == old_id) throw std::invalid_argument("alias '" + old_id + "' is a registered env id");
  if (Find(id) == nullptr) throw std::invalid_argument("alias '" + old_id + "' names unknown env '" + id + "'");
  if (FindAlias(old_id) == nullptr) aliases_.push_back({old_id, id, note});
}

std::string Registry::LicenseOf(const std::string& id) const {
  const EnvEntry* entry = Find(id);
  const std::string name = entry != nullptr ? entry->spec.id : id;
  for (const PluginRecord& plugin : plugins_)
    for (const std::string& added : plugin.ids)
      if (added == name) return plugin.license.empty() ? "not declared" : plugin.license;
  return kCugymLicense;
}

void Registry::NoteMissing(const std::string& id, const std::string& reason) { missing_.emplace_back(id, reason); }

const EnvEntry& Registry::Get(const std::string& id) const {
  if (const EnvEntry* entry = Find(id)) {
    const EnvAlias* alias = FindAlias(id);
    if (alias != nullptr && note_handler_) {
      std::lock_guard<std::mutex> lock(*noted_mutex_);
      if (noted_.insert(id).second) note_handler_(alias->note);
    }
    return *entry;
  }
  for (const auto& [missing_id, reason] : missing_)
    if (missing_id == id) throw std::invalid_argument("env '" + id + "' " + reason);
  const auto [base, option] = SplitOption(id);
  if (!option.empty() && Find(base) != nullptr) {
    std::string options;
    for (const std::string& other : Options(base)) options += (options.empty() ? "" : ", ") + other;
    throw std::invalid_argument("env '" + base + "' has no option '" + option + "' (" +
                                (options.empty() ? std::string("it has none") : "its options: " + options) + ")");
  }
  std::string known;
  for (const std::string& other : Ids()) known += (known.empty() ? "" : ", ") + other;
  throw std::invalid_argument("unknown env '" + id + "' (known: " + known + ")");
}

std::vector<std::string> Registry::Ids() const {
  std::vector<std::string> ids;
  for (const EnvEntry& entry : entries_)
    if (entry.spec.id.find(':') == std::string::npos) ids.push_back(entry.spec.id);
  return ids;
}

std::unique_ptr<VectorEnv> MakeVectorEnv(const Registry& registry, const std::string& id, int64_t num_envs,
                                         Device device) {
  const EnvEntry& entry = registry.Get(id);
  if (num_envs <= 0) throw std::invalid_argument("num_envs must be positive, got " + std::to_string(num_envs));
  if (num_envs > kMaxNumEnvs)
    throw std::invalid_argument("num_envs " + std::to_string(num_envs) + " is above the limit of " +
                                std::to_string(kMaxNumEnvs));
  const VectorEnvFactory& make = device == Device::kCuda ? entry.make_cuda : entry.make_cpu;
  if (!make) throw std::invalid_argument("env '" + id + "' has no " + DeviceName(device) + " back end");
  CheckMemoryFits("num_envs " + std::to_string(num_envs), 1,
                  static_cast<double>(num_envs) * static_cast<double>(entry.bytes_per_env), device, "");
  return make(num_envs, device);
}

}  // namespace cugym
