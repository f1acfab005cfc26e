// A small TOML reader and writer for run configurations: `key = value` lines, [table] headers
// (keys become "table.key"), comments, strings, decimal integers (with _ separators), floats,
// booleans and one-line arrays of those. Enough for configs/*.toml; anything else is an error
// naming the line (the subset: docs/file-formats.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cugym {

struct TomlValue {
  enum class Kind { kString, kInteger, kFloat, kBool, kArray };
  Kind kind = Kind::kString;
  std::string text;  // kString: the string; otherwise the source text
  int64_t integer = 0;
  double number = 0;  // kInteger and kFloat
  bool boolean = false;
  std::vector<TomlValue> items;  // kArray
  int line = 0;                  // where it was defined (0: set from the command line)

  std::string ToToml() const;  // the value written back as TOML

  // Values made in code (line 0), as the parser makes them (an integer's `number` set too).
  static TomlValue Integer(int64_t n);
  static TomlValue Float(double x);
  static TomlValue Bool(bool b);
  static TomlValue String(std::string s);
  static TomlValue Array(std::vector<TomlValue> items);
};

using TomlTable = std::map<std::string, TomlValue>;  // dotted keys, sorted

// Throws std::invalid_argument "NAME line L: ..." for anything it cannot read, including a key
// or a [table] defined twice.
TomlTable ParseToml(const std::string& text, const std::string& name);
// The file at `path`: ParseToml's errors, and ReadInputFile's (a missing file, a folder, more than
// 1 MiB) as "... config 'PATH' ...".
TomlTable ReadTomlFile(const std::string& path);
// Parses one value as it would appear after `key =` (for --set key=value). A bare word, one that
// does not start like a TOML value (a digit, sign, quote or '['), is taken as a string, so
// --set device=cuda works; what does start like a value must be one. Throws
// std::invalid_argument "WHERE: ..." (e.g. "--set lr: cannot read the value '1e-3x'").
TomlValue ParseTomlValue(const std::string& text, const std::string& where);

}  // namespace cugym
