// Shared helpers for the nn suites: device parameters (CUDA cases skip without a GPU), buffers
// from host vectors, seeded random data.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/memory.h"
#include "nn/backend.h"
#include "nn/tensor.h"
#include "tests/gpu_skip.h"

namespace cugym::nn::testing {

inline std::string DeviceParamName(const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); }

// Every back end; the CUDA one only where this binary has it (it skips without a GPU).
inline std::vector<Device> AllDevices() {
  std::vector<Device> devices = {Device::kCpu};
  if (CudaBuilt()) devices.push_back(Device::kCuda);
  return devices;
}

template <class T>
Buffer<T> ToDevice(Device device, const std::vector<T>& values) {
  Buffer<T> buffer(device, values.size());
  if (!values.empty()) buffer.FromHost(values.data(), values.size());
  return buffer;
}

inline std::vector<float> RandomFloats(std::size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = dist(gen);
  return out;
}

inline std::vector<int32_t> RandomActions(std::size_t n, int k, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(0, k - 1);
  std::vector<int32_t> out(n);
  for (int32_t& v : out) v = dist(gen);
  return out;
}

// Largest |a - b| / max(scale, |b|) over the elements (b is the reference).
inline double MaxRelError(const std::vector<float>& a, const std::vector<float>& b, double scale = 1.0) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    double denom = std::max(scale, std::fabs(static_cast<double>(b[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / denom);
  }
  return worst;
}

// max |got - ref| / max |ref| over a tensor (ref is the reference): the error relative to the
// tensor's scale, so entries near zero do not dominate.
inline double NormwiseError(const std::vector<float>& got, const std::vector<float>& ref) {
  EXPECT_EQ(got.size(), ref.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - ref[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// A test over every device: skips a device that cannot run here and makes its back end.
class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    CUGYM_SKIP_WITHOUT_GPU(GetParam());
    backend_ = MakeBackend(GetParam());
  }
  Device device() const { return GetParam(); }
  std::shared_ptr<Backend> backend_;
};

// Central differences of f at x (float64), step h.
inline std::vector<double> NumericGradient(const std::function<double(const std::vector<double>&)>& f,
                                           std::vector<double> x, double h = 1e-6) {
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = f(x);
    x[i] = keep - h;
    const double down = f(x);
    x[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

// fp32 analytic gradients agree with float64 differences to ~1e-6 relative; 1e-4 leaves margin.
inline void ExpectGradientsNear(const std::vector<float>& analytic, const std::vector<double>& numeric,
                                const char* what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    EXPECT_NEAR(analytic[i], numeric[i], 1e-4 * std::max(1.0, std::fabs(numeric[i]))) << what << " element " << i;
  }
}

inline std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace cugym::nn::testing
