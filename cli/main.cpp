// The cugym command line: one subcommand per file; errors become one line and a non-zero exit.
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/build_info.h"
#include "core/plugin.h"
#include "envs/builtin.h"
#include "nn/backend.h"

namespace {

constexpr const char* kUsage =
    "usage: cugym <command> [flags]   (cugym <command> --help for its flags)\n"
    "\n"
    "commands:\n"
    "  train    train DQN or PQN on an env (a run folder with metrics, checkpoints and the model)\n"
    "  eval     the greedy return of a trained model\n"
    "  list     the registered envs and their spaces\n"
    "  bench    env steps per second of a batched env under a random policy\n"
    "  replay   check an env step by step against a reference trace (CSV)\n"
    "  watch    play envs in a window (SDL2 builds)\n"
    "  record   render envs to PNG frames, a GIF or an MP4\n"
    "\n"
    "every command also takes --plugin PATH (repeatable): a shared library that adds envs\n"
    "(docs/custom-envs.md); the plugins shipped with cugym (MinAtar) and those CUGYM_PLUGIN_PATH\n"
    "names (':'-separated files or folders) load without it; cugym --version says what was built\n"
    "and which licence cugym and each loaded plugin are under\n";

// Loads every `--plugin PATH` (or --plugin=PATH) into the registry and removes them from argv.
void LoadPlugins(cugym::Registry& registry, int& argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--plugin") {
      if (i + 1 >= argc) throw std::invalid_argument("--plugin needs a value (PATH)");
      cugym::LoadPlugin(registry, argv[++i]);
    } else if (arg.rfind("--plugin=", 0) == 0) {
      cugym::LoadPlugin(registry, arg.substr(9));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command = argc >= 2 ? argv[1] : "";
  try {
    cugym::Registry registry;
    cugym::RegisterBuiltinEnvs(registry);
    // The shipped plugins (MinAtar) and CUGYM_PLUGIN_PATH's, then --plugin (which may come before
    // the command too).
    const std::string shipped = cugym::ShippedPluginDirFor("/proc/self/exe", CUGYM_PLUGIN_DIR_FROM_BIN);
    for (const std::string& line : cugym::LoadDefaultPlugins(registry, shipped))
      std::cerr << "cugym: warning: " << line << "\n";
    LoadPlugins(registry, argc, argv);
    cugym::NoteShippedEnvs(registry, shipped);
    // An old id (MinAtar-Breakout-v0) still works; the first use of each says what it is now.
    registry.set_note_handler([](const std::string& note) { std::cerr << "cugym: note: " << note << "\n"; });
    command = argc >= 2 ? argv[1] : "";
    if (command.empty() || command == "--help" || command == "-h") {
      (command.empty() ? std::cerr : std::cout) << kUsage;
      return command.empty() ? 2 : 0;
    }
    if (command == "--version" || command == "version") {
      // What a bug report needs: version, revision, CUDA archs, optional parts, the BLAS in use.
      std::cout << cugym::BuildInfoLine() << "; BLAS " << cugym::nn::MakeBackend(cugym::Device::kCpu)->Describe()
                << "\n";
      // And what the user runs is under: cugym's licence, then each loaded plugin's.
      std::cout << "licence: cugym " << cugym::kCugymLicense << " (LICENSE)";
      for (const cugym::PluginRecord& plugin : registry.plugins())
        std::cout << "; plugin " << plugin.path << " "
                  << (plugin.license.empty() ? std::string("(licence not declared)") : plugin.license);
      std::cout << "\n";
      return 0;
    }
    if (command == "list") return cugym::cli::RunList(registry, argc, argv);
    if (command == "bench") return cugym::cli::RunBench(registry, argc, argv);
    if (command == "replay") return cugym::cli::RunReplay(registry, argc, argv);
    if (command == "train") return cugym::cli::RunTrain(registry, argc, argv);
    if (command == "eval") return cugym::cli::RunEval(registry, argc, argv);
    if (command == "record") return cugym::cli::RunRecord(registry, argc, argv);
    if (command == "watch") {
#ifdef CUGYM_HAVE_WINDOW
      return cugym::cli::RunWatch(registry, argc, argv);
#else
      throw std::runtime_error(
          "this cugym was built without SDL2, so it cannot open a window (install libsdl2-dev, "
          "e.g. with scripts/setup.sh, and rebuild; `cugym record` works without it)");
#endif
    }
    std::cerr << "cugym: error: unknown command '" << command
              << "' (expected train, eval, list, bench, replay, watch or record)\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "cugym" << (command.empty() || command[0] == '-' ? "" : " " + command)
              << ": error: " << cugym::cli::WithFlagNames(error.what()) << "\n";
    return 2;
  }
}
