// `cugym list`: the registered envs, their spaces and the reference each one follows.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/json_writer.h"

namespace cugym::cli {
namespace {

// Python's tuple notation: (4,) and (10,10,4).
std::string ObsShape(const Space& space) {
  std::string out = "(";
  for (std::size_t i = 0; i < space.shape.size(); ++i) out += (i ? "," : "") + std::to_string(space.shape[i]);
  return out + (space.shape.size() == 1 ? ",)" : ")");
}

std::string SpaceJson(const Space& space) {
  JsonObject json;
  if (space.is_discrete()) return json.Str("type", "Discrete").Int("n", space.n).str();
  std::string shape = "[", low = "[", high = "[";
  for (std::size_t i = 0; i < space.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(space.shape[i]);
  for (std::size_t i = 0; i < space.low.size(); ++i) {
    low += (i ? ", " : "") + JsonNumber(space.low[i]);
    high += (i ? ", " : "") + JsonNumber(space.high[i]);
  }
  return json.Str("type", "Box")
      .Raw("shape", shape + "]")
      .Str("dtype", "float32")
      .Raw("low", low + "]")
      .Raw("high", high + "]")
      .str();
}

// Where an env's steps run: "cpu, cuda" for envs with a CUDA instantiation; "cpu threads" for
// host-stepped envs (physics engines), which on --device cuda still step on the CPU and copy
// their outputs to the GPU each step.
std::string StepsOn(const EnvEntry& entry) {
  if (entry.host_stepped) return entry.make_cuda ? "cpu threads (cuda: outputs copied)" : "cpu threads";
  return entry.make_cuda ? "cpu, cuda" : "cpu";
}

}  // namespace

int RunList(const Registry& registry, int argc, char** argv) {
  Args args("cugym list", {{"--json", "", "print a JSON array instead of a table", ""}}, argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Lists every registered env with its spaces, step limit, reward threshold, where it\n"
        "steps and the reference its dynamics follow; then each env's options (ID:OPTION, e.g.\n"
        "MinAtar-Breakout-v1:full_action_space) and the licence of cugym's envs and of each\n"
        "loaded plugin's.\n"
        "Box bounds of +-infinity are written as null in JSON.");
    return 0;
  }
  if (args.Switch("--json")) {
    std::cout << "[";
    bool first = true;
    for (const EnvEntry& entry : registry.entries()) {
      const EnvSpec& spec = entry.spec;
      JsonObject json = ResultJson();  // each entry says which cugym listed it
      json.Str("id", spec.id)
          .Str("license", registry.LicenseOf(spec.id))
          .Raw("observation_space", SpaceJson(spec.observation_space))
          .Raw("action_space", SpaceJson(spec.action_space))
          .Int("max_episode_steps", spec.max_episode_steps)
          .Raw("reward_threshold", spec.has_reward_threshold ? JsonNumber(spec.reward_threshold) : "null")
          .Int("render_fps", spec.render_fps)
          .Bool("cuda", static_cast<bool>(entry.make_cuda))
          .Bool("host_stepped", entry.host_stepped)
          .Str("steps_on", StepsOn(entry))
          .Str("reference", spec.reference);
      std::cout << (first ? "" : ",\n ") << json.str();
      first = false;
    }
    std::cout << "]\n";
    return 0;
  }
  std::printf("%-28s %-12s %-16s %9s %16s  %-34s  %s\n", "id", "obs shape", "action space", "max steps",
              "reward threshold", "steps on", "reference");
  std::vector<const EnvEntry*> variants;  // "ID:OPTION", listed after the table
  for (const EnvEntry& entry : registry.entries()) {
    const EnvSpec& spec = entry.spec;
    if (spec.id.find(':') != std::string::npos) {
      variants.push_back(&entry);
      continue;
    }
    std::string threshold = spec.has_reward_threshold ? JsonNumber(spec.reward_threshold) : "none";
    std::printf("%-28s %-12s %-16s %9d %16s  %-34s  %s\n", spec.id.c_str(), ObsShape(spec.observation_space).c_str(),
                spec.action_space.ToString().c_str(), spec.max_episode_steps, threshold.c_str(), StepsOn(entry).c_str(),
                spec.reference.empty() ? "-" : spec.reference.c_str());
  }
  if (!variants.empty()) {
    std::printf("\noptions (name the env as ID:OPTION; Python: gymnasium.make(\"cugym/ID\", OPTION=True)):\n");
    for (const EnvEntry* entry : variants)
      std::printf("  %-44s action space %s\n", entry->spec.id.c_str(), entry->spec.action_space.ToString().c_str());
  }
  if (!registry.aliases().empty()) {
    std::printf("\nold ids that still load:\n");
    for (const EnvAlias& alias : registry.aliases())
      std::printf("  %-26s = %s\n", alias.old_id.c_str(), alias.id.c_str());
  }
  // Licences: cugym's built-in envs, then each plugin's envs.
  std::printf("\nlicences:\n  built-in envs: %s (cugym's LICENSE)\n", kCugymLicense);
  for (const PluginRecord& plugin : registry.plugins()) {
    std::string ids;
    for (const std::string& id : plugin.ids)
      if (id.find(':') == std::string::npos) ids += (ids.empty() ? "" : ", ") + id;
    std::printf("  %s: %s (plugin %s)\n", ids.empty() ? "(no envs)" : ids.c_str(),
                plugin.license.empty() ? "not declared" : plugin.license.c_str(), plugin.path.c_str());
  }
  // Envs this cugym knows of but cannot make, grouped by the reason (and what to do about it).
  std::vector<std::pair<std::string, std::string>> missing;  // ids, reason
  for (const auto& [id, reason] : registry.missing()) {
    auto same = std::find_if(missing.begin(), missing.end(), [&](const auto& m) { return m.second == reason; });
    if (same == missing.end()) {
      missing.emplace_back(id, reason);
    } else {
      same->first += ", " + id;
    }
  }
  for (const auto& [ids, reason] : missing)
    std::printf("\nnot available here: %s\n  each %s\n", ids.c_str(), reason.c_str());
  return 0;
}

}  // namespace cugym::cli
