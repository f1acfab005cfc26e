// What this cugym is: version, git revision, CUDA architectures compiled and which optional parts
// the build found, for bug reports (`cugym --version`, the `version` of every --json output and
// checkpoint metadata). The values are generated at build time (cmake/CugymBuildInfo.cmake).
#pragma once

#include <string>

namespace cugym {

struct BuildInfo {
  const char* version;       // the project's, e.g. "0.1.0"
  const char* git_revision;  // `git describe --always --dirty` of the source tree, or "unknown"
  const char* cuda_archs;    // CMAKE_CUDA_ARCHITECTURES of a CUDA build, "" without CUDA
  bool cuda;
  bool sdl2;
  bool box2d;
  bool minatar;  // the MinAtar plugin (plugins/minatar) was built with it
};

const BuildInfo& GetBuildInfo();

// "0.1.0 (git 1a2b3c4d5e6f)": the version as --json outputs and checkpoints record it.
std::string VersionString();
// One line for `cugym --version`: version, revision, CUDA archs, SDL2 and Box2D found or not.
std::string BuildInfoLine();

}  // namespace cugym
