// The newest usable checkpoint (see checkpoint_files.h).
#include "core/checkpoint_files.h"

#include <exception>
#include <stdexcept>

#include "core/safetensors.h"

namespace cugym {
namespace {

// verify's message without a leading "PATH: " (the readers' errors start with the path) and on
// one line.
std::string ReasonOf(const std::string& path, std::string message) {
  const std::string prefix = path + ": ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  return message.empty() ? "unusable" : message;
}

}  // namespace

void VerifySafetensors(const std::string& path) { ReadSafetensors(path); }

UsableFile NewestUsableFile(const std::vector<std::string>& newest_first,
                            const std::function<void(const std::string&)>& verify) {
  if (newest_first.empty()) throw std::invalid_argument("no checkpoint to resume from");
  UsableFile result;
  for (const std::string& path : newest_first) {
    try {
      verify(path);
      result.path = path;
      return result;
    } catch (const std::exception& e) {
      result.skipped.push_back({path, ReasonOf(path, e.what())});
    }
  }
  std::string list;
  for (const SkippedFile& s : result.skipped) list += (list.empty() ? "" : "; ") + s.path + " (" + s.reason + ")";
  throw std::invalid_argument("no usable checkpoint: " + list);
}

std::string SkipLine(const SkippedFile& skipped) { return "skipping " + skipped.path + ": " + skipped.reason; }

}  // namespace cugym
