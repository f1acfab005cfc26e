// The env registry and the checks MakeVectorEnv makes before allocating.
#include "core/registry.h"

#include <gtest/gtest.h>

#include "envs/builtin.h"

namespace cugym {
namespace {

TEST(Registry, BuiltinsAreRegisteredOnceAndFound) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  ASSERT_NE(registry.Find("CartPole-v1"), nullptr);
  EXPECT_EQ(registry.Find("CartPole-v0"), nullptr);
  EXPECT_THROW(RegisterBuiltinEnvs(registry), std::invalid_argument);  // duplicate id
}

TEST(Registry, UnknownIdListsTheKnownOnes) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  try {
    registry.Get("CartPoel-v1");
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string known = "CartPole-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1, Pendulum-v1";
#ifdef CUGYM_HAVE_BOX2D
    known += ", LunarLander-v3, LunarLanderContinuous-v3";
#endif
    EXPECT_EQ(std::string(e.what()), "unknown env 'CartPoel-v1' (known: " + known + ")");
  }
}

TEST(Registry, RefusesBadBatchSizesBeforeAllocating) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  EXPECT_THROW(MakeVectorEnv(registry, "CartPole-v1", 0, Device::kCpu), std::invalid_argument);
  EXPECT_THROW(MakeVectorEnv(registry, "CartPole-v1", -5, Device::kCpu), std::invalid_argument);
  EXPECT_THROW(MakeVectorEnv(registry, "CartPole-v1", kMaxNumEnvs + 1, Device::kCpu), std::invalid_argument);
  // 2^31 envs of ~100 bytes is far beyond this machine's memory: refused, not attempted.
  EXPECT_THROW(MakeVectorEnv(registry, "CartPole-v1", kMaxNumEnvs, Device::kCpu), std::invalid_argument);
  EXPECT_EQ(MakeVectorEnv(registry, "CartPole-v1", 3, Device::kCpu)->num_envs(), 3);
}

}  // namespace
}  // namespace cugym
