// Command-line flag parsing.
#include "cli/args.h"

#include <gtest/gtest.h>

namespace cugym::cli {
namespace {

Args Parse(std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return Args("bench", {{"--num-envs", "N", "", "16"}, {"--json", "", "", ""}, {"--tol", "X", "", "1e-4"}},
              static_cast<int>(argv.size()), argv.data(), 2);
}

TEST(Args, ParsesValuesSwitchesAndDefaults) {
  Args a = Parse({"cugym", "bench", "--num-envs", "64", "--json"});
  EXPECT_EQ(a.Int("--num-envs"), 64);
  EXPECT_TRUE(a.Switch("--json"));
  EXPECT_DOUBLE_EQ(a.Double("--tol"), 1e-4);
  Args b = Parse({"cugym", "bench", "--num-envs=8"});
  EXPECT_EQ(b.Int("--num-envs"), 8);
  EXPECT_FALSE(b.Switch("--json"));
  EXPECT_TRUE(Parse({"cugym", "bench", "--help"}).help());
}

TEST(Args, RejectsBadInputWithOneLine) {
  EXPECT_THROW(Parse({"cugym", "bench", "--bogus"}), std::invalid_argument);
  EXPECT_THROW(Parse({"cugym", "bench", "--num-envs"}), std::invalid_argument);
  EXPECT_THROW(Parse({"cugym", "bench", "stray"}), std::invalid_argument);
  EXPECT_THROW(Parse({"cugym", "bench", "--json=1"}), std::invalid_argument);
  EXPECT_THROW(Parse({"cugym", "bench", "--num-envs", "12x"}).Int("--num-envs"), std::invalid_argument);
  EXPECT_THROW(Parse({"cugym", "bench", "--num-envs", "99999999999999999999"}).Int("--num-envs"),
               std::invalid_argument);
  EXPECT_THROW(Parse({"cugym", "bench", "--tol", "inf"}).Double("--tol"), std::invalid_argument);
}

}  // namespace
}  // namespace cugym::cli
