// Numeric CSV files with a header row (reference traces, metrics).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cugym {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<double> values;  // row-major, rows() x cols()
  int64_t rows() const { return header.empty() ? 0 : static_cast<int64_t>(values.size() / header.size()); }
  int64_t cols() const { return static_cast<int64_t>(header.size()); }
  double at(int64_t row, int64_t col) const { return values[row * cols() + col]; }
  // Index of a column, or -1.
  int64_t Find(const std::string& name) const;
};

// Parses a CSV whose fields after the header are numbers (also "true"/"false", "nan", "inf").
// Throws std::invalid_argument "PATH line L, column C (NAME): ..." for malformed input, and
// ReadInputFile's for a file it cannot read (a missing file, a folder, more than 256 MiB).
CsvTable ReadNumericCsv(const std::string& path);
CsvTable ParseNumericCsv(const std::string& text, const std::string& name);

}  // namespace cugym
