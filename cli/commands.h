// The cugym subcommands; each returns the process exit code and throws on bad input
// (main prints the message on one line and exits 2).
#pragma once

#include "core/registry.h"

namespace cugym::cli {

int RunList(const Registry& registry, int argc, char** argv);
int RunBench(const Registry& registry, int argc, char** argv);
int RunReplay(const Registry& registry, int argc, char** argv);
int RunTrain(const Registry& registry, int argc, char** argv);
int RunEval(const Registry& registry, int argc, char** argv);
// Built only where render/'s window is (CUGYM_HAVE_WINDOW: SDL2 found).
int RunWatch(const Registry& registry, int argc, char** argv);
// Built in every configuration: offscreen, no SDL.
int RunRecord(const Registry& registry, int argc, char** argv);

}  // namespace cugym::cli
