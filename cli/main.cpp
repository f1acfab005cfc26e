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
    "  replay   check an env step by step against a reference trace (CSV)\n";

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
    std::cerr << "cugym: error: unknown command '" << command << "' (expected list, bench or replay)\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "cugym " << command << ": error: " << error.what() << "\n";
    return 2;
  }
}
