// Choosing the checkpoint to resume from: the newest one that reads and verifies, as a database
// falls back to its last good state. A file damaged on disk, cut short by a full disk or flipped in
// a copy between machines is skipped with its reason instead of stopping the resume; only when no
// file is usable does the resume stop, listing every file and why. Generic over what "usable"
// means (a verify function), with the safetensors check (structure and CRC-32C, core/safetensors.h)
// as the usual one.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cugym {

struct SkippedFile {
  std::string path;
  std::string reason;  // one line, without the path (e.g. "tensor 'replay.obs' is damaged: ...")
};

struct UsableFile {
  std::string path;                  // the newest usable file
  std::vector<SkippedFile> skipped;  // the newer ones passed over, newest first
};

// Reads and checks a safetensors file (ReadSafetensors: every offset, size, dtype and shape, and
// the tensors' CRC-32C where the file has them); throws what ReadSafetensors throws.
void VerifySafetensors(const std::string& path);

// The first of `newest_first` for which verify(path) returns without throwing (std::exception),
// and the files skipped before it with verify's message as the reason. A verify that needs what
// it read (to read a large file once) can keep it in a variable it captures. Throws
// std::invalid_argument when no file is usable, one line listing each with its reason:
// "no usable checkpoint: a.safetensors (too short ...); b.safetensors (tensor 'w' is damaged: ...)",
// or "no checkpoint to resume from" for an empty list.
UsableFile NewestUsableFile(const std::vector<std::string>& newest_first,
                            const std::function<void(const std::string& path)>& verify = VerifySafetensors);

// The line to print for a skipped file: "skipping PATH: REASON".
std::string SkipLine(const SkippedFile& skipped);

}  // namespace cugym
