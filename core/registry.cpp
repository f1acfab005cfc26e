// The env registry.
#include "core/registry.h"

#include <stdexcept>

#include "core/memory.h"

namespace cugym {

void Registry::Register(EnvEntry entry) {
  if (entry.spec.id.empty()) throw std::invalid_argument("cannot register an env without an id");
  if (Find(entry.spec.id) != nullptr)
    throw std::invalid_argument("env id '" + entry.spec.id + "' is already registered");
  if (!entry.make_cpu) throw std::invalid_argument("env '" + entry.spec.id + "' has no CPU factory");
  entries_.push_back(std::move(entry));
}

const EnvEntry* Registry::Find(const std::string& id) const {
  for (const EnvEntry& entry : entries_) {
    if (entry.spec.id == id) return &entry;
  }
  return nullptr;
}

void Registry::NoteMissing(const std::string& id, const std::string& reason) { missing_.emplace_back(id, reason); }

const EnvEntry& Registry::Get(const std::string& id) const {
  if (const EnvEntry* entry = Find(id)) return *entry;
  for (const auto& [missing_id, reason] : missing_)
    if (missing_id == id) throw std::invalid_argument("env '" + id + "' " + reason);
  std::string known;
  for (const std::string& other : Ids()) known += (known.empty() ? "" : ", ") + other;
  throw std::invalid_argument("unknown env '" + id + "' (known: " + known + ")");
}

std::vector<std::string> Registry::Ids() const {
  std::vector<std::string> ids;
  for (const EnvEntry& entry : entries_) ids.push_back(entry.spec.id);
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
