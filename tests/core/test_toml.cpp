// The TOML subset for run configurations: values with their types, errors naming the line.
#include "core/toml.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <thread>
#include <utility>

#include "core/csv.h"
#include "tests/core/test_util.h"

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
  return testing::InvalidArgumentMessage([&] { ParseToml(text, "t.toml"); });
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
  EXPECT_EQ(ErrorOf("device = cuda\n"), "t.toml line 1: cannot read the value 'cuda'");  // strings are quoted
}

TEST(Toml, RefusesARepeatedTable) {
  EXPECT_EQ(ErrorOf("[dqn]\na = 1\n\n[env]\nb = 2\n[dqn]\nc = 3\n"),
            "t.toml line 6: table [dqn] is defined twice (first on line 1)");
  EXPECT_EQ(ErrorOf("[a]\nx = 1\n[a.b]\nx = 2\n"), "(no error)");  // a sub-table is another table
}

TEST(Toml, RefusesMalformedNumbers) {
  // strtod would read most of these; TOML (and so cugym) does not.
  for (const char* bad : {"1.", ".5", "007", "+-1", "1e", "1e+", "0x10", "0x1.8p3", "1.5.2", "1e999",
                          "99999999999999999999", "inf", "-inf", "nan", "infinity"}) {
    EXPECT_EQ(ErrorOf(std::string("a = ") + bad + "\n"),
              std::string("t.toml line 1: cannot read the value '") + bad + "'");
  }
  const TomlTable t = ParseToml("a = +7\nb = -0.5\nc = 1E3\nd = 0\ne = -0\nf = 1_000.000_5\n", "t.toml");
  EXPECT_EQ(t.at("a").integer, 7);
  EXPECT_EQ(t.at("b").number, -0.5);
  EXPECT_EQ(t.at("c").kind, TomlValue::Kind::kFloat);
  EXPECT_EQ(t.at("c").number, 1000.0);
  EXPECT_EQ(t.at("d").kind, TomlValue::Kind::kInteger);
  EXPECT_EQ(t.at("e").integer, 0);
  EXPECT_EQ(t.at("f").number, 1000.0005);
}

// Values made in code write and read back as the parser's.
TEST(Toml, ValuesMadeInCodeAreTheParsersValues) {
  const std::pair<TomlValue, const char*> cases[] = {
      {TomlValue::Integer(-7), "-7"},
      {TomlValue::Float(0.5), "0.5"},
      {TomlValue::Bool(true), "true"},
      {TomlValue::String("a \"word\""), "\"a \\\"word\\\"\""},
      {TomlValue::Array({TomlValue::Integer(1), TomlValue::Integer(2)}), "[1, 2]"}};
  for (const auto& [made, text] : cases) {
    const TomlValue parsed = ParseTomlValue(text, "v");
    EXPECT_EQ(made.kind, parsed.kind) << text;
    EXPECT_EQ(made.ToToml(), parsed.ToToml()) << text;
    EXPECT_EQ(made.number, parsed.number) << text;
  }
}

TEST(Toml, ValuesRoundTripWithTheirTypes) {
  using Kind = TomlValue::Kind;
  const std::pair<const char*, Kind> cases[] = {{"\"a \\\"quoted\\\" word\"", Kind::kString},
                                                {"\"42\"", Kind::kString},
                                                {"42", Kind::kInteger},
                                                {"-7", Kind::kInteger},
                                                {"2.5e-05", Kind::kFloat},
                                                {"0.5", Kind::kFloat},
                                                {"3.0", Kind::kFloat},
                                                {"true", Kind::kBool},
                                                {"[1, 2, 3]", Kind::kArray}};
  for (const auto& [text, kind] : cases) {
    const TomlValue v = ParseTomlValue(text, "--set x");
    EXPECT_EQ(v.kind, kind) << text;
    const TomlValue back = ParseTomlValue(v.ToToml(), "--set x");
    EXPECT_EQ(back.kind, kind) << text << " written as " << v.ToToml();
    EXPECT_EQ(back.ToToml(), v.ToToml()) << text;
  }
  EXPECT_EQ(ParseTomlValue("42", "v").integer, 42);
  EXPECT_EQ(ParseTomlValue("\"42\"", "v").text, "42");
  EXPECT_EQ(ParseTomlValue("[1, 2, 3]", "v").items[2].kind, Kind::kInteger);
  EXPECT_EQ(ParseTomlValue("3.0", "v").ToToml(), "3.0");  // stays a float when written back
}

std::string SetErrorOf(const std::string& text) {
  return testing::InvalidArgumentMessage([&] { ParseTomlValue(text, "--set lr"); });
}

TEST(Toml, BareWordsAreStringsAndMalformedValuesAreErrors) {
  EXPECT_EQ(ParseTomlValue("cuda", "v").kind, TomlValue::Kind::kString);
  EXPECT_EQ(ParseTomlValue("cuda", "v").text, "cuda");
  EXPECT_EQ(ParseTomlValue(" CartPole-v1 ", "v").text, "CartPole-v1");
  EXPECT_EQ(ParseTomlValue("1e-3", "v").kind, TomlValue::Kind::kFloat);
  EXPECT_EQ(ParseTomlValue("false", "v").kind, TomlValue::Kind::kBool);
  // What starts like a number, a string or an array must be one, not a string of the same text.
  EXPECT_EQ(SetErrorOf("1e-3x"), "--set lr: cannot read the value '1e-3x'");
  EXPECT_EQ(SetErrorOf("[1, 2"), "--set lr: expected ',' or ']' in an array (arrays must fit on one line)");
  EXPECT_EQ(SetErrorOf("\"open"), "--set lr: unterminated string");
  EXPECT_EQ(SetErrorOf("1 2"), "--set lr: unexpected text after the value");
  EXPECT_EQ(SetErrorOf(""), "--set lr: expected a value");
}

// A config path that is not a config file is one line, never an empty config or a read that
// does not end; a pipe (`--config <(...)`) reads as a file.
TEST(Toml, ReadTomlFileRefusesFoldersAndEndlessFilesAndReadsPipes) {
  using testing::InvalidArgumentMessage;
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(InvalidArgumentMessage([&] { ReadTomlFile(dir); }), "config '" + dir + "' is a folder, not a file");
  EXPECT_EQ(InvalidArgumentMessage([] { ReadTomlFile("/dev/zero"); }),
            "config '/dev/zero' is larger than 1048576 bytes");
  EXPECT_EQ(InvalidArgumentMessage([] { ReadTomlFile("/nonexistent/c.toml"); }),
            "cannot open config '/nonexistent/c.toml' (No such file or directory)");
  EXPECT_EQ(InvalidArgumentMessage([] { ReadNumericCsv("/dev/zero"); }),
            "CSV file '/dev/zero' is larger than 268435456 bytes");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string text = "gamma = 0.5\n# " + std::string(100000, 'x') + "\nseed = 7\n";  // more than a pipe holds
  std::thread writer([&] {
    for (std::size_t at = 0; at < text.size();) {
      const ssize_t wrote = write(fds[1], text.data() + at, text.size() - at);
      if (wrote <= 0) break;
      at += static_cast<std::size_t>(wrote);
    }
    close(fds[1]);
  });
  const TomlTable table = ReadTomlFile("/dev/fd/" + std::to_string(fds[0]));
  writer.join();
  close(fds[0]);
  EXPECT_EQ(table.at("gamma").number, 0.5);
  EXPECT_EQ(table.at("seed").integer, 7);
}

}  // namespace
}  // namespace cugym
