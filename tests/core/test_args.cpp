// Command-line flag parsing.
#include "cli/args.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/core/test_util.h"

namespace cugym::cli {
namespace {

Args Parse(std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return Args(
      "cugym bench",
      {{"--num-envs", "N", "", "16"}, {"--json", "", "", ""}, {"--tol", "X", "", "1e-4"}, {"--seed", "S", "", "0"}},
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

using cugym::testing::InvalidArgumentMessage;

TEST(Args, MessagesNameTheFlagAndLeaveTheProgramToTheCaller) {
  // main() prints "cugym bench: error: " before the message, so the message does not repeat it.
  EXPECT_EQ(InvalidArgumentMessage([] {
              Parse({"cugym", "bench", "--bogus"});
            }),
            "unknown flag '--bogus' (see cugym bench --help)");
  EXPECT_EQ(InvalidArgumentMessage([] {
              Parse({"cugym", "bench", "stray"});
            }),
            "unexpected argument 'stray' (see cugym bench --help)");
  EXPECT_EQ(InvalidArgumentMessage([] {
              Parse({"cugym", "bench", "--num-envs", "1x"}).Int("--num-envs");
            }),
            "--num-envs: expected an integer, got '1x'");
  EXPECT_EQ(Parse({"cugym", "bench"}).Usage("Steps envs.").rfind("usage: cugym bench [flags]\nSteps envs.\n", 0), 0u);
}

TEST(Args, LibraryErrorsNameTheFlagsThatWereGiven) {
  Parse({"cugym", "bench", "--num-envs", "0", "--json"});
  EXPECT_EQ(WithFlagNames("num_envs must be positive, got 0"), "--num-envs must be positive, got 0");
  EXPECT_EQ(WithFlagNames("num_envs: too many"), "--num-envs: too many");
  // Not given here (a config key, a default): left in the library's terms.
  EXPECT_EQ(WithFlagNames("seed must be >= 0"), "seed must be >= 0");
  EXPECT_EQ(WithFlagNames("tol must be > 0"), "tol must be > 0");
  EXPECT_EQ(WithFlagNames("num_envsx must be positive"), "num_envsx must be positive");
  EXPECT_EQ(WithFlagNames("unknown env 'x'"), "unknown env 'x'");
  EXPECT_EQ(WithFlagNames(""), "");
  Parse({"cugym", "bench", "--tol", "1"});  // the last command line counts
  EXPECT_EQ(WithFlagNames("num_envs must be positive, got 0"), "num_envs must be positive, got 0");
  EXPECT_EQ(WithFlagNames("tol must be > 0"), "--tol must be > 0");
}

TEST(Args, SeedsAreNonNegativeIntegers) {
  EXPECT_EQ(Parse({"cugym", "bench"}).Seed("--seed"), 0u);
  EXPECT_EQ(Parse({"cugym", "bench", "--seed", "9223372036854775807"}).Seed("--seed"), 9223372036854775807u);
  EXPECT_EQ(InvalidArgumentMessage([] {
              Parse({"cugym", "bench", "--seed", "-1"}).Seed("--seed");
            }),
            "--seed must be >= 0, got -1");
  EXPECT_EQ(InvalidArgumentMessage([] {
              Parse({"cugym", "bench", "--seed", "1.5"}).Seed("--seed");
            }),
            "--seed: expected an integer, got '1.5'");
}

}  // namespace
}  // namespace cugym::cli
