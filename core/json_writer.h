// The JSON writer (--json output, eval.json, benchmark rows): one object per call site; strings
// are escaped by core/json.h's JsonString, the one escaper cugym has.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/build_info.h"
#include "core/json.h"

namespace cugym {

// Numbers with 9 significant digits; JSON has no infinity or NaN, so those become null.
inline std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

// Builds {"key": value, ...} in insertion order.
class JsonObject {
 public:
  JsonObject& Raw(const std::string& key, const std::string& json) {
    body_ += (body_.empty() ? "" : ", ") + JsonString(key) + ": " + json;
    return *this;
  }
  JsonObject& Str(const std::string& key, const std::string& value) { return Raw(key, JsonString(value)); }
  JsonObject& Num(const std::string& key, double value) { return Raw(key, JsonNumber(value)); }
  JsonObject& Int(const std::string& key, int64_t value) { return Raw(key, std::to_string(value)); }
  JsonObject& Bool(const std::string& key, bool value) { return Raw(key, value ? "true" : "false"); }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

// What every command's --json result starts with: {"version": "0.1.0 (git ...)"}, so a saved
// result says which cugym made it.
inline JsonObject ResultJson() {
  JsonObject json;
  json.Str("version", VersionString());
  return json;
}

}  // namespace cugym
