// Device selection as a user meets it: names that are refused and what the error says, what
// "auto" picks on a machine without a GPU, and the error for --device cuda there. The no-GPU
// cases run in a child process with CUDA_VISIBLE_DEVICES empty, so they hold on a GPU machine
// and in a CUDA build too.
#include "core/device.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

#include "tests/core/test_util.h"

namespace cugym {
namespace {

std::string ErrorOf(const std::string& name) {
  return testing::InvalidArgumentMessage([&] { ResolveDevice(name); });
}

TEST(Device, UnknownNamesAreRefusedByName) {
  EXPECT_EQ(ErrorOf("gpu0"), "unknown device 'gpu0' (expected auto, cpu or cuda)");
  EXPECT_EQ(ErrorOf("CPU"), "unknown device 'CPU' (expected auto, cpu or cuda)");  // names are exact
  EXPECT_EQ(ErrorOf(""), "unknown device '' (expected auto, cpu or cuda)");
  EXPECT_EQ(ErrorOf("cuda:0"), "unknown device 'cuda:0' (expected auto, cpu or cuda)");
}

TEST(Device, NamesRoundTrip) {
  EXPECT_EQ(ResolveDevice(DeviceName(Device::kCpu)), Device::kCpu);
  EXPECT_STREQ(DeviceName(Device::kCuda), "cuda");
}

// The body of a death test: hides every GPU, then exits 0 when `check` holds and 1 otherwise.
[[noreturn]] void ExitWithoutGpu(const std::function<bool()>& check) {
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  std::exit(check() ? 0 : 1);
}

TEST(DeviceDeathTest, AutoPicksTheCpuWithoutAGpu) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: CUDA not initialised yet
  EXPECT_EXIT(ExitWithoutGpu(
                  [] { return !CudaAvailable() && CudaDeviceName().empty() && ResolveDevice("auto") == Device::kCpu; }),
              ::testing::ExitedWithCode(0), "");
}

TEST(DeviceDeathTest, CudaWithoutAGpuSaysWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ExitWithoutGpu([] {
                // "device cuda: " and the reason: no CUDA build, or no usable GPU.
                const std::string error = ErrorOf("cuda");
                const std::string reason = CudaUnavailableReason();
                std::fprintf(stderr, "got: %s\n", error.c_str());
                return error == "device cuda: " + reason &&
                       reason.find(CudaBuilt() ? "GPU" : "built without CUDA") != std::string::npos;
              }),
              ::testing::ExitedWithCode(0), "got: device cuda: ");
}

}  // namespace
}  // namespace cugym
