// A minimal JSON writer (--json output, eval.json): one object per call site, no dependencies.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

namespace cugym {

inline std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

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

}  // namespace cugym
