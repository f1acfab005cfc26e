// The TOML subset of core/toml.h.
#include "core/toml.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/read_file.h"

namespace cugym {
namespace {

constexpr std::size_t kMaxTomlBytes = std::size_t{1} << 20;  // configs are a few KB

struct Cursor {
  const std::string& s;
  std::size_t i = 0;
  void SkipSpace() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  bool AtEnd() {
    SkipSpace();
    return i >= s.size() || s[i] == '#';
  }
};

bool IsBareKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

std::string ParseKey(Cursor& c, const std::string& where) {
  std::string key;
  while (true) {
    c.SkipSpace();
    const std::size_t start = c.i;
    while (c.i < c.s.size() && IsBareKeyChar(c.s[c.i])) ++c.i;
    if (c.i == start) throw std::invalid_argument(where + ": expected a key");
    key += c.s.substr(start, c.i - start);
    c.SkipSpace();
    if (c.i < c.s.size() && c.s[c.i] == '.') {
      key += '.';
      ++c.i;
      continue;
    }
    return key;
  }
}

TomlValue ParseValue(Cursor& c, const std::string& where);

TomlValue ParseString(Cursor& c, const std::string& where) {
  TomlValue v;
  v.kind = TomlValue::Kind::kString;
  ++c.i;  // opening quote
  while (c.i < c.s.size() && c.s[c.i] != '"') {
    char ch = c.s[c.i++];
    if (ch == '\\') {
      if (c.i >= c.s.size()) break;
      const char e = c.s[c.i++];
      switch (e) {
        case 'n':
          ch = '\n';
          break;
        case 't':
          ch = '\t';
          break;
        case '"':
          ch = '"';
          break;
        case '\\':
          ch = '\\';
          break;
        default:
          throw std::invalid_argument(where + ": unsupported escape \\" + std::string(1, e));
      }
    }
    v.text += ch;
  }
  if (c.i >= c.s.size()) throw std::invalid_argument(where + ": unterminated string");
  ++c.i;  // closing quote
  return v;
}

// TOML's decimal numbers, underscores removed: [+-](0|[1-9][0-9]*) then, for a float, .[0-9]+
// and/or [eE][+-]?[0-9]+. Everything else ("1.", ".5", "007", "0x10", "inf", "nan") is refused;
// strtod alone would take some of those.
bool IsTomlNumber(const std::string& s, bool* is_float) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t int_start = i;
  const std::size_t int_digits = digits();
  if (int_digits == 0 || (int_digits > 1 && s[int_start] == '0')) return false;
  *is_float = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
    *is_float = true;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
    *is_float = true;
  }
  return i == s.size();
}

TomlValue ParseScalar(const std::string& token, const std::string& where) {
  TomlValue v;
  v.text = token;
  if (token == "true" || token == "false") {
    v.kind = TomlValue::Kind::kBool;
    v.boolean = token == "true";
    return v;
  }
  std::string digits;
  for (std::size_t k = 0; k < token.size(); ++k) {
    if (token[k] != '_') {
      digits += token[k];
    } else if (k == 0 || k + 1 == token.size() || !std::isdigit(static_cast<unsigned char>(token[k - 1])) ||
               !std::isdigit(static_cast<unsigned char>(token[k + 1]))) {
      throw std::invalid_argument(where + ": bad number '" + token + "'");
    }
  }
  if (digits.empty()) throw std::invalid_argument(where + ": expected a value");
  bool is_float = false;
  if (IsTomlNumber(digits, &is_float)) {
    // The grammar is checked; only the range can still fail.
    errno = 0;
    if (!is_float) {
      const long long n = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == 0) {
        v.kind = TomlValue::Kind::kInteger;
        v.integer = n;
        v.number = static_cast<double>(n);
        return v;
      }
    } else {
      const double x = std::strtod(digits.c_str(), nullptr);
      if (errno == 0 && std::isfinite(x)) {
        v.kind = TomlValue::Kind::kFloat;
        v.number = x;
        return v;
      }
    }
  }
  throw std::invalid_argument(where + ": cannot read the value '" + token + "'");
}

TomlValue ParseValue(Cursor& c, const std::string& where) {
  c.SkipSpace();
  if (c.i >= c.s.size()) throw std::invalid_argument(where + ": expected a value");
  if (c.s[c.i] == '"') return ParseString(c, where);
  if (c.s[c.i] == '[') {
    TomlValue array;
    array.kind = TomlValue::Kind::kArray;
    ++c.i;
    while (true) {
      c.SkipSpace();
      if (c.i < c.s.size() && c.s[c.i] == ']') {
        ++c.i;
        return array;
      }
      array.items.push_back(ParseValue(c, where));
      c.SkipSpace();
      if (c.i < c.s.size() && c.s[c.i] == ',') {
        ++c.i;
      } else if (c.i >= c.s.size() || c.s[c.i] != ']') {
        throw std::invalid_argument(where + ": expected ',' or ']' in an array (arrays must fit on one line)");
      }
    }
  }
  const std::size_t start = c.i;
  while (c.i < c.s.size() && c.s[c.i] != ',' && c.s[c.i] != ']' && c.s[c.i] != '#' && c.s[c.i] != ' ' &&
         c.s[c.i] != '\t') {
    ++c.i;
  }
  return ParseScalar(c.s.substr(start, c.i - start), where);
}

}  // namespace

TomlValue TomlValue::Integer(int64_t n) {
  TomlValue v;
  v.kind = Kind::kInteger;
  v.integer = n;
  v.number = static_cast<double>(n);
  return v;
}

TomlValue TomlValue::Float(double x) {
  TomlValue v;
  v.kind = Kind::kFloat;
  v.number = x;
  return v;
}

TomlValue TomlValue::Bool(bool b) {
  TomlValue v;
  v.kind = Kind::kBool;
  v.boolean = b;
  return v;
}

TomlValue TomlValue::String(std::string s) {
  TomlValue v;
  v.kind = Kind::kString;
  v.text = std::move(s);
  return v;
}

TomlValue TomlValue::Array(std::vector<TomlValue> items) {
  TomlValue v;
  v.kind = Kind::kArray;
  v.items = std::move(items);
  return v;
}

std::string TomlValue::ToToml() const {
  switch (kind) {
    case Kind::kString: {
      std::string out = "\"";
      for (char ch : text) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (ch == '\n') {
          out += "\\n";
          continue;
        }
        out += ch;
      }
      return out + "\"";
    }
    case Kind::kInteger:
      return std::to_string(integer);
    case Kind::kFloat: {
      std::ostringstream out;
      out.precision(17);
      out << number;
      std::string s = out.str();
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::kBool:
      return boolean ? "true" : "false";
    case Kind::kArray: {
      std::string out = "[";
      for (std::size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + items[k].ToToml();
      return out + "]";
    }
  }
  return "";
}

TomlTable ParseToml(const std::string& text, const std::string& name) {
  TomlTable table;
  std::istringstream in(text);
  std::string line, prefix;
  std::map<std::string, int> tables;  // header -> the line that opened it
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = name + " line " + std::to_string(line_no);
    Cursor c{line};
    if (c.AtEnd()) continue;
    if (line[c.i] == '[') {
      ++c.i;
      const std::string header = ParseKey(c, where);
      c.SkipSpace();
      if (c.i >= line.size() || line[c.i] != ']')
        throw std::invalid_argument(where + ": expected ']' after [" + header);
      ++c.i;
      if (!c.AtEnd()) throw std::invalid_argument(where + ": unexpected text after the table header");
      const auto [first, added] = tables.emplace(header, line_no);
      if (!added) {
        throw std::invalid_argument(where + ": table [" + header + "] is defined twice (first on line " +
                                    std::to_string(first->second) + ")");
      }
      prefix = header + ".";
      continue;
    }
    const std::string key = prefix + ParseKey(c, where);
    if (c.i >= line.size() || line[c.i] != '=') throw std::invalid_argument(where + ": expected '=' after " + key);
    ++c.i;
    TomlValue value = ParseValue(c, where);
    if (!c.AtEnd()) throw std::invalid_argument(where + ": unexpected text after the value of " + key);
    value.line = line_no;
    if (!table.emplace(key, value).second) throw std::invalid_argument(where + ": " + key + " is set twice");
  }
  return table;
}

TomlTable ReadTomlFile(const std::string& path) {
  return ParseToml(ReadInputFile(path, "config", kMaxTomlBytes), path);
}

TomlValue ParseTomlValue(const std::string& text, const std::string& where) {
  Cursor c{text};
  c.SkipSpace();
  const std::size_t last = text.find_last_not_of(" \t");
  const std::string word = last == std::string::npos ? "" : text.substr(c.i, last + 1 - c.i);
  const unsigned char first = word.empty() ? '\0' : static_cast<unsigned char>(word[0]);
  const bool looks_like_value = word.empty() || word == "true" || word == "false" || std::isdigit(first) ||
                                first == '+' || first == '-' || first == '"' || first == '[';
  if (!looks_like_value) {
    TomlValue string;  // a bare word (cuda, CartPole-v1)
    string.kind = TomlValue::Kind::kString;
    string.text = word;
    return string;
  }
  TomlValue value = ParseValue(c, where);
  if (!c.AtEnd()) throw std::invalid_argument(where + ": unexpected text after the value");
  return value;
}

}  // namespace cugym
