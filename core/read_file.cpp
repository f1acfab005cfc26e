// ReadInputFile (see read_file.h).
#include "core/read_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace cugym {

std::string ReadInputFile(const std::string& path, const std::string& what, std::size_t max_bytes) {
  const std::string named = what + " '" + path + "'";
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw std::invalid_argument(named + " is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open " + named + " (" + std::strerror(errno) + ")");
  std::string bytes;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > max_bytes - bytes.size())
      throw std::invalid_argument(named + " is larger than " + std::to_string(max_bytes) + " bytes");
    bytes.append(chunk, got);
  }
  if (in.bad()) throw std::invalid_argument("cannot read " + named + " (" + std::strerror(errno) + ")");
  return bytes;
}

}  // namespace cugym
