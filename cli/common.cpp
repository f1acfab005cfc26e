// Helpers shared by the subcommands.
#include "cli/common.h"

#include <iostream>

namespace cugym::cli {

Device PickDevice(const std::string& flag_value) {
  Device device = ResolveDevice(flag_value);
  if (flag_value == "auto") {
    if (device == Device::kCuda) {
      std::cerr << "cugym: --device auto chose cuda (" << CudaDeviceName() << ")\n";
    } else {
      std::cerr << "cugym: --device auto chose cpu (" << CudaUnavailableReason() << ")\n";
    }
  }
  return device;
}

}  // namespace cugym::cli
