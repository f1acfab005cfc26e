// Strict JSON parsing (recursive descent, bounded depth) and the string escaper.
#include "core/json.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace cugym {
namespace {

class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  JsonValue ParseDocument() {
    SkipSpace();
    JsonValue value = ParseValue(0);
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected '" + Printable(text_[pos_]) + "' after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw std::invalid_argument(where_ + " at byte " + std::to_string(pos_) + ": " + what);
  }
  static std::string Printable(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    return buf;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) ++pos_;
  }
  void Expect(char c) {
    if (AtEnd()) Fail(std::string("expected '") + c + "', got the end of the input");
    if (Peek() != c) Fail(std::string("expected '") + c + "', got '" + Printable(Peek()) + "'");
    ++pos_;
  }
  void ExpectWord(const char* word) {
    std::size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) Fail(std::string("expected '") + word + "'");
    pos_ += n;
  }

  JsonValue ParseValue(int depth) {
    if (depth > kMaxJsonDepth) Fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (AtEnd()) Fail("expected a value, got the end of the input");
    JsonValue value;
    char c = Peek();
    if (c == '{') {
      value.kind = JsonKind::kObject;
      ++pos_;
      SkipSpace();
      if (!AtEnd() && Peek() == '}') {
        ++pos_;
        return value;
      }
      while (true) {
        SkipSpace();
        if (AtEnd() || Peek() != '"') Fail("expected a string key");
        std::string key = ParseString();
        for (const auto& member : value.members) {
          if (member.first == key) Fail("duplicate key \"" + key + "\"");
        }
        SkipSpace();
        Expect(':');
        SkipSpace();
        value.members.emplace_back(std::move(key), ParseValue(depth + 1));
        SkipSpace();
        if (!AtEnd() && Peek() == ',') {
          ++pos_;
          continue;
        }
        Expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.kind = JsonKind::kArray;
      ++pos_;
      SkipSpace();
      if (!AtEnd() && Peek() == ']') {
        ++pos_;
        return value;
      }
      while (true) {
        SkipSpace();
        value.items.push_back(ParseValue(depth + 1));
        SkipSpace();
        if (!AtEnd() && Peek() == ',') {
          ++pos_;
          continue;
        }
        Expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.kind = JsonKind::kString;
      value.text = ParseString();
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      value.kind = JsonKind::kNumber;
      value.text = ParseNumber();
      return value;
    }
    if (c == 't') {
      ExpectWord("true");
      value.kind = JsonKind::kBool;
      value.text = "true";
      return value;
    }
    if (c == 'f') {
      ExpectWord("false");
      value.kind = JsonKind::kBool;
      value.text = "false";
      return value;
    }
    if (c == 'n') {
      ExpectWord("null");
      return value;
    }
    Fail("unexpected '" + Printable(c) + "'");
  }

  std::string ParseNumber() {
    std::size_t start = pos_;
    auto digits = [&]() {
      std::size_t from = pos_;
      while (!AtEnd() && Peek() >= '0' && Peek() <= '9') ++pos_;
      return pos_ - from;
    };
    if (Peek() == '-') ++pos_;
    if (AtEnd()) Fail("incomplete number");
    if (Peek() == '0') {
      ++pos_;
    } else if (digits() == 0) {
      Fail("expected a digit");
    }
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      if (digits() == 0) Fail("expected a digit after '.'");
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (digits() == 0) Fail("expected a digit in the exponent");
    }
    return text_.substr(start, pos_ - start);
  }

  unsigned Hex4() {
    if (text_.size() - pos_ < 4) Fail("incomplete \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        Fail("bad hex digit in \\u escape");
    }
    return value;
  }

  static void AppendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // One UTF-8 sequence starting at pos_ (first byte >= 0x80), copied to `out` when valid.
  void CopyUtf8(std::string& out) {
    unsigned char b0 = static_cast<unsigned char>(text_[pos_]);
    int extra = b0 >= 0xF0 && b0 <= 0xF4 ? 3 : b0 >= 0xE0 ? 2 : b0 >= 0xC2 && b0 <= 0xDF ? 1 : -1;
    if (extra < 0 || text_.size() - pos_ <= static_cast<std::size_t>(extra)) Fail("invalid UTF-8 in a string");
    unsigned cp = b0 & (0x3F >> extra);
    for (int i = 1; i <= extra; ++i) {
      unsigned char b = static_cast<unsigned char>(text_[pos_ + i]);
      if ((b & 0xC0) != 0x80) Fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (b & 0x3F);
    }
    bool overlong = (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) Fail("invalid UTF-8 in a string");
    out.append(text_, pos_, extra + 1);
    pos_ += extra + 1;
  }

  std::string ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (AtEnd()) Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) Fail("control character in a string");
      if (c >= 0x80) {
        CopyUtf8(out);
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (AtEnd()) Fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = Hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) Fail("lone low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.compare(pos_, 2, "\\u") != 0) Fail("high surrogate without its low half");
            pos_ += 2;
            unsigned low = Hex4();
            if (low < 0xDC00 || low > 0xDFFF) Fail("high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          Fail("unknown escape '\\" + Printable(e) + "'");
      }
    }
  }

  const std::string& text_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

}  // namespace

JsonValue ParseJson(const std::string& text, const std::string& where) {
  return JsonParser(text, where).ParseDocument();
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + '"';
}

}  // namespace cugym
