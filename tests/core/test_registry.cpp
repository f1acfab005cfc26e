// The env registry and the checks MakeVectorEnv makes before allocating.
#include "core/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// "ID:OPTION" entries are options of ID (MinAtar's full_action_space); old ids are aliases with a
// note given once; every env's licence is its plugin's, or cugym's.
TEST(Registry, VariantsAliasesAndLicences) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  EnvEntry variant = *registry.Find("CartPole-v1");
  variant.spec.id = "CartPole-v1:wide";
  registry.Register(variant);
  const std::vector<std::string> ids = registry.Ids();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "CartPole-v1:wide"), 0);
  EXPECT_EQ(registry.Options("CartPole-v1"), std::vector<std::string>{"wide"});
  EXPECT_TRUE(registry.Options("Pendulum-v1").empty());
  EXPECT_EQ(&registry.Get("CartPole-v1:wide"), registry.Find("CartPole-v1:wide"));
  auto error_of = [&](const std::string& id) {
    try {
      registry.Get(id);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("CartPole-v1:narrow"), "env 'CartPole-v1' has no option 'narrow' (its options: wide)");
  EXPECT_EQ(error_of("Pendulum-v1:wide"), "env 'Pendulum-v1' has no option 'wide' (it has none)");
  EXPECT_EQ(error_of("NoSuch-v0:wide").rfind("unknown env 'NoSuch-v0:wide'", 0), 0u);

  std::vector<std::string> notes;
  registry.set_note_handler([&](const std::string& note) { notes.push_back(note); });
  registry.AddAlias("CartPole-v0", "CartPole-v1:wide", "CartPole-v0 is now CartPole-v1:wide");
  EXPECT_THROW(registry.AddAlias("Pendulum-v1", "CartPole-v1", "taken"), std::invalid_argument);
  EXPECT_THROW(registry.AddAlias("Old-v0", "NoSuch-v1", "nowhere"), std::invalid_argument);
  EXPECT_EQ(registry.Find("CartPole-v0"), registry.Find("CartPole-v1:wide"));
  EXPECT_TRUE(notes.empty());  // Find says nothing; Get says it once
  EXPECT_EQ(&registry.Get("CartPole-v0"), registry.Find("CartPole-v1:wide"));
  registry.Get("CartPole-v0");
  EXPECT_EQ(notes, std::vector<std::string>{"CartPole-v0 is now CartPole-v1:wide"});

  EXPECT_EQ(registry.LicenseOf("CartPole-v1"), "MIT");
  registry.AddPlugin({"/plugins/wide.so", "GPL-3.0-only", {"CartPole-v1:wide"}});
  registry.AddPlugin({"/plugins/old.so", "", {"Pendulum-v1"}});  // built before plugins declared one
  EXPECT_EQ(registry.LicenseOf("CartPole-v1:wide"), "GPL-3.0-only");
  EXPECT_EQ(registry.LicenseOf("CartPole-v0"), "GPL-3.0-only");  // through the alias
  EXPECT_EQ(registry.LicenseOf("Pendulum-v1"), "not declared");
  EXPECT_EQ(registry.LicenseOf("CartPole-v1"), "MIT");
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
