// What a test case that needs a GPU does where none can run: it skips (CI and laptops have
// none), unless CUGYM_REQUIRE_GPU=1 is set, where it fails. scripts/gpu-check.sh sets it, so a
// GPU machine on which the CUDA cases quietly skip fails the check without matching test names.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/device.h"

namespace cugym::testing {

inline bool GpuRequired() {
  const char* value = std::getenv("CUGYM_REQUIRE_GPU");
  return value != nullptr && std::string(value) == "1";
}

}  // namespace cugym::testing

// Skips (or, with CUGYM_REQUIRE_GPU=1, fails) the current test when `device` is CUDA and no GPU
// can run it here. Use in a test body or SetUp.
#define CUGYM_SKIP_WITHOUT_GPU(device)                                                                             \
  do {                                                                                                             \
    if ((device) == ::cugym::Device::kCuda && !::cugym::CudaAvailable()) {                                         \
      if (::cugym::testing::GpuRequired())                                                                         \
        GTEST_FAIL() << "CUGYM_REQUIRE_GPU=1 but this CUDA case cannot run: " << ::cugym::CudaUnavailableReason(); \
      GTEST_SKIP() << "CUDA case skipped: " << ::cugym::CudaUnavailableReason();                                   \
    }                                                                                                              \
  } while (0)
