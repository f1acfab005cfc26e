// Actions handed to a CPU step from Python: NumPy arrays of any integer (Discrete) or real (Box)
// dtype, checked against the action space and converted where the step needs another dtype,
// with one clear Python exception for anything else.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/spec.h"

namespace cugym::python {

// The DLPack device (device type, device id) of `obj`, from obj.__dlpack_device__(); TypeError
// when that is not a pair of integers.
struct DlpackDevice {
  int32_t type = 0;  // DLPack's DLDeviceType: 1 host memory (kDLCPU), 2 CUDA memory (kDLCUDA), ...
  int64_t id = 0;
};
DlpackDevice DlpackDeviceOf(nanobind::handle obj);

// Raises ValueError, naming both devices ("cuda:1", "cpu"), unless an array of `what` ("actions")
// on DLPack device `where` can be read by `owner` ("env", "policy") on `device`, CUDA device
// `cuda_id`: host memory (kDLCPU) for the CPU, CUDA memory on that same GPU (kDLCUDA, device id
// cuda_id) for CUDA. Its kernels cannot read another GPU's memory: cugym asks for no peer access.
void CheckArrayDevice(const char* what, DlpackDevice where, const char* owner, Device device, int cuda_id);

// Checks and, where needed, converts the actions of one CPU step of `num_envs` envs of `spec`.
class CpuActions {
 public:
  CpuActions(const EnvSpec& spec, int64_t num_envs) : spec_(spec), n_(num_envs) {}

  // A pointer to num_envs int32 (Discrete) or num_envs * action_dim float32 (Box) actions: the
  // array's own data when it already is that, else this object's converted copy (valid until
  // the next call). Anything else NumPy can read (a list, a scalar, a CPU tensor) goes through
  // np.asarray first. TypeError for a wrong kind of dtype, ValueError for a wrong shape, an
  // action outside a Discrete space or an array on a GPU (CheckArrayDevice).
  const void* Get(nanobind::handle actions);

  // "(n,) int32" or "(n, d) float32": what the step takes.
  std::string Expected() const;

 private:
  const EnvSpec& spec_;
  int64_t n_;
  std::vector<int32_t> discrete_;
  std::vector<float> box_;
  nanobind::object contiguous_;  // the last actions as a C-contiguous NumPy array, when they were not one
};

}  // namespace cugym::python
