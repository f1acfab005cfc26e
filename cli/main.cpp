// The cugym command line: one subcommand per file; errors become one line and a non-zero exit.
#include <cstring>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "envs/builtin.h"

namespace {

constexpr const char* kUsage =
    "usage: cugym <command> [flags]   (cugym <command> --help for its flags)\n"
    "\n"
    "commands:\n"
    "  list     the registered envs and their spaces\n"
    "  bench    env steps per second of a batched env under a random policy\n"
    "  replay   check an env step by step against a reference trace (CSV)\n"
    "  watch    play envs in a window (SDL2 builds)\n"
    "  record   render envs to PNG frames, a GIF or an MP4 (SDL2 builds)\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    (argc < 2 ? std::cerr : std::cout) << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  try {
    cugym::Registry registry;
    cugym::RegisterBuiltinEnvs(registry);
    if (command == "list") return cugym::cli::RunList(registry, argc, argv);
    if (command == "bench") return cugym::cli::RunBench(registry, argc, argv);
    if (command == "replay") return cugym::cli::RunReplay(registry, argc, argv);
    if (command == "watch" || command == "record") {
#ifdef CUGYM_HAVE_SDL2
      return command == "watch" ? cugym::cli::RunWatch(registry, argc, argv)
                                : cugym::cli::RunRecord(registry, argc, argv);
#else
      throw std::runtime_error("this cugym was built without SDL2, so it cannot render (install libsdl2-dev, "
                               "e.g. with scripts/setup.sh, and rebuild)");
#endif
    }
    std::cerr << "cugym: error: unknown command '" << command
              << "' (expected list, bench, replay, watch or record)\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "cugym " << command << ": error: " << error.what() << "\n";
    return 2;
  }
}
