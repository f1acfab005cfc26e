// Loading env plugins with dlopen.
#include "core/plugin.h"

#include "core/build_info.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cugym {

namespace {

// The plugins loaded into each registry, by canonical path (LoadPlugin is called from one thread).
std::set<std::pair<const Registry*, std::string>>& LoadedFiles() {
  static std::set<std::pair<const Registry*, std::string>> files;
  return files;
}

// The *.so files of a folder, in name order.
std::vector<std::string> SharedLibrariesIn(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".so" && entry.is_regular_file(ec)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> UserPluginFiles() {
  std::vector<std::string> files;
  const char* value = std::getenv("CUGYM_PLUGIN_PATH");
  if (value == nullptr) return files;
  std::stringstream entries(value);
  std::string entry;
  while (std::getline(entries, entry, ':')) {
    if (entry.empty()) continue;
    if (std::filesystem::is_directory(entry)) {
      for (std::string& file : SharedLibrariesIn(entry)) files.push_back(std::move(file));
    } else {
      files.push_back(entry);  // LoadPlugin names a missing file
    }
  }
  return files;
}

}  // namespace

std::vector<std::string> LoadDefaultPlugins(Registry& registry, const std::string& shipped_dir) {
  for (const std::string& file : UserPluginFiles()) {
    try {
      LoadPlugin(registry, file);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(e.what()) + " (named by CUGYM_PLUGIN_PATH)");
    }
  }
  std::vector<std::string> skipped;
  if (shipped_dir.empty()) return skipped;
  for (const std::string& file : SharedLibrariesIn(shipped_dir)) {
    try {
      LoadPlugin(registry, file);
    } catch (const std::exception& e) {
      skipped.push_back(std::string("skipped a shipped ") + e.what());
    }
  }
  return skipped;
}

std::string ShippedPluginDirFor(const std::string& executable, const std::string& relative) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::canonical(executable, ec);
  if (ec || exe.empty()) return {};
  return (exe.parent_path() / relative).lexically_normal().string();
}

void NoteShippedEnvs(Registry& registry, const std::string& shipped_dir) {
  const std::string why =
      GetBuildInfo().minatar
          ? "is in the MinAtar plugin (GPL-3.0, libcugym_minatar.so), which was not found in '" + shipped_dir +
                "': load it with --plugin PATH or CUGYM_PLUGIN_PATH"
          : "is in the MinAtar plugin (GPL-3.0), which this cugym was configured without: rebuild with "
            "-DCUGYM_MINATAR=ON, or load a built libcugym_minatar.so with --plugin PATH";
  for (const char* game : {"Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"}) {
    const std::string id = std::string("MinAtar-") + game + "-v1", old_id = std::string("MinAtar-") + game + "-v0";
    const std::string full = id + ":full_action_space";
    if (registry.Find(id) == nullptr) registry.NoteMissing(id, why);
    if (registry.Find(full) != nullptr) {
      registry.AddAlias(old_id, full,
                        old_id + " (all six actions) is now " + id + " with full_action_space: name it " + full +
                            " (CLI, configs) or pass full_action_space=True (Python)");
    } else if (registry.Find(old_id) == nullptr) {
      registry.NoteMissing(old_id, why);
    }
  }
}

void LoadPlugin(Registry& registry, const std::string& path) {
  const std::string where = "plugin '" + path + "'";
  if (!std::filesystem::exists(path)) throw std::invalid_argument(where + ": no such file");
  std::error_code ec;
  const std::string canonical = std::filesystem::canonical(path, ec).string();
  if (!ec && LoadedFiles().count({&registry, canonical}) != 0) return;
  // A bare name would make dlopen search the library path; a plugin is always a file we name.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw std::invalid_argument(where + " is not a loadable shared library (" + (reason ? reason : "?") + ")");
  }
  auto entry = reinterpret_cast<PluginEntryFn>(dlsym(handle, kPluginEntryName));
  if (entry == nullptr) {
    dlclose(handle);
    throw std::invalid_argument(where + " is not a cugym plugin (it has no " + kPluginEntryName + ")");
  }
  char error[512] = {};
  const std::size_t before = registry.entries().size();
  const int status = entry(kPluginAbi, &registry, error, sizeof(error));
  if (status == kPluginOk) {  // keep the library loaded: the registry now calls into it
    if (!ec) LoadedFiles().insert({&registry, canonical});
    PluginRecord record;
    record.path = ec ? path : canonical;
    using LicenseFn = const char* (*)();
    if (auto license = reinterpret_cast<LicenseFn>(dlsym(handle, kPluginLicenseName))) {
      const char* text = license();
      if (text != nullptr) record.license = text;
    }
    for (std::size_t i = before; i < registry.entries().size(); ++i)
      record.ids.push_back(registry.entries()[i].spec.id);
    registry.AddPlugin(std::move(record));
    return;
  }
  dlclose(handle);
  if (status == kPluginAbiMismatch)
    throw std::invalid_argument(where + " was built against another cugym (" + error + "; this cugym has plugin ABI " +
                                std::to_string(kPluginAbi) + "): rebuild it");
  throw std::invalid_argument(where + ": " + (error[0] ? error : "registration failed"));
}

}  // namespace cugym
