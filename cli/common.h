// Helpers shared by the subcommands.
#pragma once

#include <string>

#include "core/device.h"

namespace cugym::cli {

// Resolves --device; for "auto" says on stderr which device it chose and why.
Device PickDevice(const std::string& flag_value);

// The --device flag's help text.
inline constexpr const char* kDeviceHelp = "auto (GPU when present), cpu or cuda";

}  // namespace cugym::cli
