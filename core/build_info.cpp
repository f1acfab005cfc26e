// Formatting of the build information (the values are generated: cmake/CugymBuildInfo.cmake).
#include "core/build_info.h"

namespace cugym {

std::string VersionString() {
  const BuildInfo& b = GetBuildInfo();
  return std::string(b.version) + " (git " + b.git_revision + ")";
}

std::string BuildInfoLine() {
  const BuildInfo& b = GetBuildInfo();
  const std::string cuda = b.cuda ? std::string("yes (archs ") + b.cuda_archs + ")" : "no";
  return "cugym " + VersionString() + "; CUDA " + cuda + ", SDL2 " + (b.sdl2 ? "yes" : "no") + ", Box2D " +
         (b.box2d ? "yes" : "no") + ", MinAtar " + (b.minatar ? "yes" : "no");
}

}  // namespace cugym
