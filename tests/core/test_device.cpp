// Device selection.
#include "core/device.h"

#include <gtest/gtest.h>

namespace cugym {
namespace {

TEST(Device, ParsesNames) {
  EXPECT_EQ(ResolveDevice("cpu"), Device::kCpu);
  EXPECT_THROW(ResolveDevice("gpu0"), std::invalid_argument);
  EXPECT_EQ(ResolveDevice("auto"), CudaAvailable() ? Device::kCuda : Device::kCpu);
}

TEST(Device, CudaRequestWithoutGpuIsAClearError) {
  if (CudaAvailable()) {
    EXPECT_EQ(ResolveDevice("cuda"), Device::kCuda);
    return;
  }
  try {
    ResolveDevice("cuda");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--device cuda: ", 0), 0u) << e.what();
    EXPECT_FALSE(CudaUnavailableReason().empty());
  }
}

}  // namespace
}  // namespace cugym
