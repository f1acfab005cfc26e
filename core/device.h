// Run-time device selection: `--device auto|cpu|cuda`. No CUDA types here.
#pragma once

#include <string>

namespace cugym {

enum class Device { kCpu, kCuda };

const char* DeviceName(Device device);

// True when this binary was built with the CUDA back end.
bool CudaBuilt();
// True when CUDA was built in and at least one GPU is usable. Never throws.
bool CudaAvailable();
// Why CUDA cannot be used ("" when it can): no CUDA build, no driver, no GPU.
std::string CudaUnavailableReason();
// Name of GPU 0 ("" without one).
std::string CudaDeviceName();

// Parses "auto", "cpu" or "cuda". "auto" picks CUDA when a GPU is usable, else the CPU.
// Throws std::invalid_argument for an unknown name or a CUDA request that cannot be met.
Device ResolveDevice(const std::string& name);

}  // namespace cugym
