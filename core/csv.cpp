// Numeric CSV parsing with line/column error messages.
#include "core/csv.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "core/read_file.h"

namespace cugym {
namespace {

constexpr std::size_t kMaxCsvBytes = std::size_t{1} << 28;  // a reference trace is a few MB

std::vector<std::string> SplitFields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (std::string& field : fields) {
    std::size_t b = field.find_first_not_of(" \t");
    std::size_t e = field.find_last_not_of(" \t");
    field = b == std::string::npos ? "" : field.substr(b, e - b + 1);
  }
  return fields;
}

bool ParseNumber(const std::string& field, double* out) {
  if (field == "true" || field == "True") {
    *out = 1.0;
    return true;
  }
  if (field == "false" || field == "False") {
    *out = 0.0;
    return true;
  }
  if (field.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(field.c_str(), &end);
  if (end != field.c_str() + field.size()) return false;
  *out = value;
  return true;
}

}  // namespace

int64_t CsvTable::Find(const std::string& name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int64_t>(i);
  }
  return -1;
}

CsvTable ParseNumericCsv(const std::string& text, const std::string& name) {
  CsvTable table;
  std::istringstream in(text);
  std::string line;
  int64_t line_no = 0;
  auto fail = [&](int64_t column, const std::string& what) {
    std::string where = name + " line " + std::to_string(line_no);
    if (column > 0) {
      where += ", column " + std::to_string(column);
      if (column <= table.cols()) where += " (" + table.header[column - 1] + ")";
    }
    throw std::invalid_argument(where + ": " + what);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields = SplitFields(line);
    if (table.header.empty()) {
      for (std::size_t c = 0; c < fields.size(); ++c) {
        if (fields[c].empty()) fail(static_cast<int64_t>(c) + 1, "empty column name in the header");
      }
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() != table.header.size()) {
      fail(static_cast<int64_t>(std::min(fields.size(), table.header.size())) + 1,
           "expected " + std::to_string(table.header.size()) + " fields, got " + std::to_string(fields.size()));
    }
    for (std::size_t c = 0; c < fields.size(); ++c) {
      double value = 0;
      if (!ParseNumber(fields[c], &value))
        fail(static_cast<int64_t>(c) + 1, "expected a number, got '" + fields[c] + "'");
      table.values.push_back(value);
    }
  }
  if (table.header.empty()) throw std::invalid_argument(name + ": empty file (expected a header row)");
  return table;
}

CsvTable ReadNumericCsv(const std::string& path) {
  return ParseNumericCsv(ReadInputFile(path, "CSV file", kMaxCsvBytes), path);
}

}  // namespace cugym
