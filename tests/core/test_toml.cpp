// The TOML subset for run configurations.
#include "core/toml.h"

#include <gtest/gtest.h>

namespace cugym {
namespace {

TEST(Toml, ReadsScalarsArraysTablesAndComments) {
  const TomlTable t = ParseToml(
      "# a run\n"
      "name = \"CartPole-v1\"  # trailing comment\n"
      "steps = 500_000\n"
      "lr = 2.5e-4\n"
      "gamma = 0.99\n"
      "double = true\n"
      "sizes = [120, 84]\n"
      "\n"
      "[dqn]\n"
      "tau = 1\n",
      "t.toml");
  EXPECT_EQ(t.at("name").text, "CartPole-v1");
  EXPECT_EQ(t.at("steps").integer, 500000);
  EXPECT_EQ(t.at("steps").kind, TomlValue::Kind::kInteger);
  EXPECT_DOUBLE_EQ(t.at("lr").number, 2.5e-4);
  EXPECT_TRUE(t.at("double").boolean);
  ASSERT_EQ(t.at("sizes").items.size(), 2u);
  EXPECT_EQ(t.at("sizes").items[1].integer, 84);
  EXPECT_EQ(t.at("dqn.tau").integer, 1);
  EXPECT_EQ(t.at("dqn.tau").line, 10);
}

std::string ErrorOf(const std::string& text) {
  try {
    ParseToml(text, "t.toml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Toml, ErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("a = 1\na = 2\n"), "t.toml line 2: a is set twice");
  EXPECT_EQ(ErrorOf("a 1\n"), "t.toml line 1: expected '=' after a");
  EXPECT_EQ(ErrorOf("a = \"open\n"), "t.toml line 1: unterminated string");
  EXPECT_EQ(ErrorOf("a = 1x\n"), "t.toml line 1: cannot read the value '1x'");
  EXPECT_EQ(ErrorOf("a = [1, 2\n"), "t.toml line 1: expected ',' or ']' in an array (arrays must fit on one line)");
  EXPECT_EQ(ErrorOf("[dqn\n"), "t.toml line 1: expected ']' after [dqn");
  EXPECT_EQ(ErrorOf("a = 1 2\n"), "t.toml line 1: unexpected text after the value of a");
  EXPECT_EQ(ErrorOf("a = 1__0\n"), "t.toml line 1: bad number '1__0'");
}

TEST(Toml, ValuesRoundTripAndBareWordsAreStrings) {
  for (const char* text : {"\"a \\\"quoted\\\" word\"", "42", "2.5e-05", "true", "[1, 2, 3]", "0.5"}) {
    const TomlValue v = ParseTomlValue(text);
    EXPECT_EQ(ParseTomlValue(v.ToToml()).ToToml(), v.ToToml()) << text;
  }
  EXPECT_EQ(ParseTomlValue("cuda").kind, TomlValue::Kind::kString);
  EXPECT_EQ(ParseTomlValue("cuda").text, "cuda");
  EXPECT_EQ(ParseTomlValue("1e-3").kind, TomlValue::Kind::kFloat);
}

}  // namespace
}  // namespace cugym
