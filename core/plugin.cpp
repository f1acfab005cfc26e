// Loading env plugins with dlopen.
#include "core/plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>

namespace cugym {

void LoadPlugin(Registry& registry, const std::string& path) {
  const std::string where = "plugin '" + path + "'";
  if (!std::filesystem::exists(path)) throw std::invalid_argument(where + ": no such file");
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
  const int status = entry(kPluginAbi, &registry, error, sizeof(error));
  if (status == kPluginOk) return;  // keep the library loaded: the registry now calls into it
  dlclose(handle);
  if (status == kPluginAbiMismatch)
    throw std::invalid_argument(where + " was built against another cugym (" + error + "; this cugym has plugin ABI " +
                                std::to_string(kPluginAbi) + "): rebuild it");
  throw std::invalid_argument(where + ": " + (error[0] ? error : "registration failed"));
}

}  // namespace cugym
