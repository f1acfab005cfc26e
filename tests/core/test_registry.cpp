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

TEST(Registry, AnEnvTheBuildLeavesOutSaysWhatItNeeds) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
#ifdef CUGYM_HAVE_BOX2D
  EXPECT_TRUE(registry.missing().empty());
#else
  ASSERT_EQ(registry.missing().size(), 2u);
  EXPECT_EQ(registry.Find("LunarLander-v3"), nullptr);  // not an env: Find, Ids and listings skip it
  try {
    registry.Get("LunarLander-v3");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("env 'LunarLander-v3' needs Box2D", 0), 0u) << e.what();
  }
#endif
  registry.NoteMissing("Plugged-v0", "comes from a plugin: load it with --plugin");
  EXPECT_EQ(registry.Find("Plugged-v0"), nullptr);
  try {
    registry.Get("Plugged-v0");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "env 'Plugged-v0' comes from a plugin: load it with --plugin");
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
