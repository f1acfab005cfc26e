// Reading a user's input file whole (a config, a trace): one clear line for a path that cannot be
// read, and a bound, so that a folder or an endless device given by mistake (/dev/zero) is refused
// rather than read as empty or read forever. Pipes (`--config <(...)`) read like files.
#pragma once

#include <cstddef>
#include <string>

namespace cugym {

// The bytes of `path`, read to its end. Throws std::invalid_argument, naming `what` ("config") and
// the path: "cannot open WHAT 'PATH' (REASON)" for a missing or unreadable path, "WHAT 'PATH' is a
// folder, not a file", and "WHAT 'PATH' is larger than MAX bytes" once more than max_bytes arrive.
std::string ReadInputFile(const std::string& path, const std::string& what, std::size_t max_bytes);

}  // namespace cugym
