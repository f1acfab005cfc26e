// Numeric CSV parsing and its error messages.
#include "core/csv.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cugym {
namespace {

TEST(Csv, ParsesHeaderAndNumbers) {
  CsvTable t = ParseNumericCsv("a,b,c\n1,2.5,-3e-2\r\n\n4, True ,nan\n", "t.csv");
  ASSERT_EQ(t.cols(), 3);
  ASSERT_EQ(t.rows(), 2);
  EXPECT_EQ(t.Find("b"), 1);
  EXPECT_EQ(t.Find("z"), -1);
  EXPECT_DOUBLE_EQ(t.at(0, 2), -0.03);
  EXPECT_DOUBLE_EQ(t.at(1, 1), 1.0);
  EXPECT_TRUE(std::isnan(t.at(1, 2)));
}

std::string ErrorOf(const std::string& text) {
  try {
    ParseNumericCsv(text, "t.csv");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Csv, ErrorsNameLineAndColumn) {
  EXPECT_EQ(ErrorOf("a,b\n1,2\n3,x\n"), "t.csv line 3, column 2 (b): expected a number, got 'x'");
  EXPECT_EQ(ErrorOf("a,b\n1,2,3\n"), "t.csv line 2, column 3: expected 2 fields, got 3");
  EXPECT_EQ(ErrorOf("a,b\n1\n"), "t.csv line 2, column 2 (b): expected 2 fields, got 1");
  EXPECT_EQ(ErrorOf("a,,c\n"), "t.csv line 1, column 2: empty column name in the header");
  EXPECT_EQ(ErrorOf(""), "t.csv: empty file (expected a header row)");
  EXPECT_EQ(ErrorOf("a\n1.5.2\n"), "t.csv line 2, column 1 (a): expected a number, got '1.5.2'");
}

TEST(Csv, MissingFileIsInvalidArgument) {
  EXPECT_THROW(ReadNumericCsv("/nonexistent/trace.csv"), std::invalid_argument);
}

}  // namespace
}  // namespace cugym
