// A small strict JSON reader (RFC 8259) for file headers (safetensors), and cugym's one JSON
// string escaper (safetensors headers, --json output, benchmark rows).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cugym {

enum class JsonKind { kNull, kBool, kNumber, kString, kArray, kObject };

struct JsonValue {
  JsonKind kind = JsonKind::kNull;
  std::string text;                                        // a string's value (UTF-8), a number's token as written
  std::vector<JsonValue> items;                            // array elements
  std::vector<std::pair<std::string, JsonValue>> members;  // object members in document order, keys unique
};

// Deeper nesting is refused, so hostile input cannot exhaust the stack.
constexpr int kMaxJsonDepth = 32;

// Parses one JSON value, with optional whitespace around it and nothing else: objects (duplicate
// keys refused), arrays, strings (all escapes, \u with surrogate pairs, valid UTF-8 only, no raw
// control characters), numbers (JSON's grammar: no leading zeros, no bare '.'), true, false,
// null. Throws std::invalid_argument "WHERE at byte N: what is wrong".
JsonValue ParseJson(const std::string& text, const std::string& where);

// `s` as a JSON string literal: `"` and `\` escaped, \n \t \r as such, every other control
// character (below 0x20) as \u00XX; all other bytes, UTF-8 sequences included, as they are.
std::string JsonString(const std::string& s);

}  // namespace cugym
