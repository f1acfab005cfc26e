// cugym._cugym: env ids and specs, plugins, devices; the vector env and training live in their
// own files. C++ exceptions become Python ones: std::invalid_argument -> ValueError, others ->
// RuntimeError (nanobind's translation).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "core/build_info.h"
#include "core/device.h"
#include "core/plugin.h"
#include "envs/builtin.h"
#include "python/src/module.h"

namespace nb = nanobind;

namespace cugym::python {

Registry& GlobalRegistry() {
  // Never destroyed: plugins' factories live in libraries that stay loaded until exit.
  static Registry* registry = [] {
    auto* r = new Registry;
    RegisterBuiltinEnvs(*r);
    return r;
  }();
  return *registry;
}

namespace {

nb::dict SpaceDict(const Space& space) {
  nb::dict d;
  if (space.is_discrete()) {
    d["kind"] = "discrete";
    d["n"] = space.n;
  } else {
    d["kind"] = "box";
    d["shape"] = nb::tuple(nb::cast(space.shape));
    d["low"] = space.low;
    d["high"] = space.high;
  }
  return d;
}

nb::dict SpecDict(const std::string& id) {
  const EnvSpec& spec = GlobalRegistry().Get(id).spec;
  nb::dict d;
  d["id"] = spec.id;
  d["observation_space"] = SpaceDict(spec.observation_space);
  d["action_space"] = SpaceDict(spec.action_space);
  d["state_dim"] = spec.state_dim;
  d["max_episode_steps"] = spec.max_episode_steps > 0 ? nb::cast(spec.max_episode_steps) : nb::none();
  d["reward_threshold"] = spec.has_reward_threshold ? nb::cast(spec.reward_threshold) : nb::none();
  d["render_fps"] = spec.render_fps;
  d["render_width"] = spec.render_width;
  d["render_height"] = spec.render_height;
  d["can_render"] = static_cast<bool>(GlobalRegistry().Get(id).draw);
  d["has_cuda"] = static_cast<bool>(GlobalRegistry().Get(id).make_cuda);
  d["reference"] = spec.reference;
  return d;
}

// Loads a plugin; returns the ids it added.
std::vector<std::string> LoadPluginIds(const std::string& path) {
  const std::vector<std::string> before = GlobalRegistry().Ids();
  LoadPlugin(GlobalRegistry(), path);
  std::vector<std::string> added;
  for (const std::string& id : GlobalRegistry().Ids())
    if (std::find(before.begin(), before.end(), id) == before.end()) added.push_back(id);
  return added;
}

// The plugins shipped in the package (cugym/plugins) and CUGYM_PLUGIN_PATH's; returns the lines
// of shipped plugins that could not load.
std::vector<std::string> LoadDefaultPluginsInto(const std::string& shipped_dir) {
  std::vector<std::string> skipped = LoadDefaultPlugins(GlobalRegistry(), shipped_dir);
  NoteShippedEnvs(GlobalRegistry(), shipped_dir);
  return skipped;
}

}  // namespace
}  // namespace cugym::python

NB_MODULE(_cugym, m) {
  using namespace cugym;
  m.doc() = "cugym's C++ core: batched envs on the CPU and GPU, DQN training, greedy policies";
  m.def(
      "env_ids", [] { return python::GlobalRegistry().Ids(); }, "Ids of every registered env.");
  m.def(
      "missing_envs", [] { return python::GlobalRegistry().missing(); },
      "(id, reason) of the envs this build leaves out (LunarLander without Box2D).");
  m.def(
      "env_options", [](const std::string& id) { return python::GlobalRegistry().Options(id); }, nb::arg("env_id"),
      "The boolean options of an env (each selects the variant 'ID:OPTION'), e.g. ['full_action_space'].");
  m.def(
      "env_aliases",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const EnvAlias& a : python::GlobalRegistry().aliases()) out.emplace_back(a.old_id, a.id, a.note);
        return out;
      },
      "(old id, id, note) of the old ids that still load (MinAtar-Breakout-v0).");
  m.def(
      "plugins",
      [] {
        std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> out;
        for (const PluginRecord& p : python::GlobalRegistry().plugins()) out.emplace_back(p.path, p.license, p.ids);
        return out;
      },
      "(path, licence (SPDX; '' when not declared), ids) of each loaded plugin.");
  m.def(
      "env_license", [](const std::string& id) { return python::GlobalRegistry().LicenseOf(id); }, nb::arg("env_id"),
      "The licence an env is under: its plugin's, else cugym's (MIT).");
  m.def("env_spec", &python::SpecDict, nb::arg("env_id"), "The spec of an env as a dict.");
  m.def("load_plugin", &python::LoadPluginIds, nb::arg("path"), "Loads an env plugin; returns the ids it added.");
  m.def("load_default_plugins", &python::LoadDefaultPluginsInto, nb::arg("shipped_dir"),
        "Loads the shipped plugins of shipped_dir and CUGYM_PLUGIN_PATH's; returns why shipped ones were skipped.");
  m.def(
      "resolve_device", [](const std::string& name) { return std::string(DeviceName(ResolveDevice(name))); },
      nb::arg("name"), "'auto', 'cpu' or 'cuda' to the device it means here; ValueError if unusable.");
  m.def("cuda_built", &CudaBuilt);
  m.def("cuda_available", &CudaAvailable);
  m.def("cuda_unavailable_reason", &CudaUnavailableReason);
  m.attr("plugin_abi") = kPluginAbi;
  m.attr("__version__") = GetBuildInfo().version;  // CMakeLists.txt's project(VERSION): the one source
  python::BindVectorEnv(m);
  python::BindTraining(m);
  python::BindStats(m);
}
