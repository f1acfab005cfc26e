// Device selection and the CUDA error helper.
#include "core/device.h"

#include <stdexcept>

#include "core/error.h"

#ifdef CUGYM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cugym {

void ThrowCudaError(const char* call, const char* message, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA error: ") + message + " in " + call + " (" + file + ":" +
                           std::to_string(line) + ")");
}

const char* DeviceName(Device device) { return device == Device::kCuda ? "cuda" : "cpu"; }

bool CudaBuilt() {
#ifdef CUGYM_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string CudaUnavailableReason() {
#ifdef CUGYM_HAVE_CUDA
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not confused
    return std::string("no usable CUDA GPU (") + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA GPU found";
  return "";
#else
  return "this cugym was built without CUDA (no toolkit found, or CUGYM_CUDA=OFF)";
#endif
}

bool CudaAvailable() { return CudaUnavailableReason().empty(); }

std::string CudaDeviceName() {
#ifdef CUGYM_HAVE_CUDA
  if (!CudaAvailable()) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "";
  return prop.name;
#else
  return "";
#endif
}

int CudaCurrentDevice() {
#ifdef CUGYM_HAVE_CUDA
  int id = 0;
  CUGYM_CUDA_CHECK(cudaGetDevice(&id));
  return id;
#else
  throw std::runtime_error("the current CUDA device asked of a cugym built without CUDA");
#endif
}

ScopedCudaDevice::ScopedCudaDevice(Device device, int id) {
  if (device != Device::kCuda) return;
#ifdef CUGYM_HAVE_CUDA
  const int current = CudaCurrentDevice();
  if (current == id) return;
  CUGYM_CUDA_CHECK(cudaSetDevice(id));
  previous_ = current;
#else
  (void)id;
  throw std::runtime_error("a CUDA device asked of a cugym built without CUDA");
#endif
}

ScopedCudaDevice::~ScopedCudaDevice() {
#ifdef CUGYM_HAVE_CUDA
  if (previous_ >= 0) cudaSetDevice(previous_);  // destructors never throw; it was current a moment ago
#endif
}

Device ResolveDevice(const std::string& name) {
  if (name == "cpu") return Device::kCpu;
  if (name == "cuda") {
    std::string reason = CudaUnavailableReason();
    if (!reason.empty()) throw std::invalid_argument("device cuda: " + reason);
    return Device::kCuda;
  }
  if (name == "auto") return CudaAvailable() ? Device::kCuda : Device::kCpu;
  throw std::invalid_argument("unknown device '" + name + "' (expected auto, cpu or cuda)");
}

}  // namespace cugym
