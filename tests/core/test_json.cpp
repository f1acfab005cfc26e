// The strict JSON reader behind safetensors headers (its error cases are in test_safetensors.cpp)
// and the one JSON string escaper.
#include "core/json.h"

#include <gtest/gtest.h>

#include <string>

namespace cugym {
namespace {

TEST(Json, ParsesValuesInDocumentOrder) {
  JsonValue v = ParseJson(" {\"b\": [1, -2.5e3, true, null], \"a\": {\"s\": \"x\\u00e9\\ud83d\\ude00\\n\"}} ", "t");
  ASSERT_EQ(v.kind, JsonKind::kObject);
  ASSERT_EQ(v.members.size(), 2u);
  EXPECT_EQ(v.members[0].first, "b");
  const JsonValue& arr = v.members[0].second;
  ASSERT_EQ(arr.items.size(), 4u);
  EXPECT_EQ(arr.items[1].kind, JsonKind::kNumber);
  EXPECT_EQ(arr.items[1].text, "-2.5e3");
  EXPECT_EQ(arr.items[2].text, "true");
  EXPECT_EQ(arr.items[3].kind, JsonKind::kNull);
  EXPECT_EQ(v.members[1].second.members[0].second.text, "x\xc3\xa9\xf0\x9f\x98\x80\n");
}

TEST(Json, EscapingRoundTrips) {
  const std::string s = "q\"b\\s/\x01\t\n\r\x7f \xc3\xa9";
  EXPECT_EQ(ParseJson(JsonString(s), "t").text, s);
}

TEST(Json, EscaperWritesEachKindOfCharacter) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(JsonString("C:\\dir"), "\"C:\\\\dir\"");
  EXPECT_EQ(JsonString("a\nb\tc\rd"), "\"a\\nb\\tc\\rd\"");
  // Other control characters are kept, as \u00XX, not dropped.
  EXPECT_EQ(JsonString(std::string("\x00\x01\x1b\x1f", 4)), "\"\\u0000\\u0001\\u001b\\u001f\"");
  // UTF-8 (2, 3 and 4 bytes), DEL and '/' pass through unchanged.
  const std::string text = "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f /";
  EXPECT_EQ(JsonString(text), "\"" + text + "\"");
}

TEST(Json, ErrorsSayWhere) {
  try {
    ParseJson("[1, 2", "x.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "x.json at byte 5: expected ']', got the end of the input");
  }
  EXPECT_THROW(ParseJson("", "t"), std::invalid_argument);
  EXPECT_THROW(ParseJson("1 2", "t"), std::invalid_argument);
  EXPECT_THROW(ParseJson("\"\xed\xa0\x80\"", "t"), std::invalid_argument);  // UTF-8 encoded surrogate
  EXPECT_THROW(ParseJson("\"\xc0\xaf\"", "t"), std::invalid_argument);      // overlong
}

}  // namespace
}  // namespace cugym
