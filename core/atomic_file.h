// The one way cugym writes a file: under a fresh temporary name in the target's folder, synced,
// then renamed over the target, so a crash never leaves a half-written file under the real name.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace cugym {

// A file being written in place of `path`. The temporary file is created at construction
// (O_EXCL, mode 0666 so the umask applies as for any new file) next to the target, as
// ".NAME.tmp.PID.N.EXT": the same file system (so the rename is atomic), hidden, and with the
// target's extension (tools such as ffmpeg choose the format by it). Commit() makes it the
// target; destroying an uncommitted AtomicFile removes the temporary file, so a failure or an
// exception anywhere leaves nothing behind.
class AtomicFile {
 public:
  // Throws std::runtime_error "PATH: cannot create a temporary file: ..." (a missing or
  // unwritable folder).
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return path_; }
  // For a writer that opens the file by name (another process such as ffmpeg); it must write
  // into this file, not replace it.
  const std::string& temp_path() const { return temp_path_; }
  // The temporary file, open for writing (binary).
  FILE* file() const { return file_; }

  // Flushes and closes the file, fsyncs it (data on disk before the rename makes it visible),
  // renames it over the target and fsyncs the folder (best effort: some file systems refuse).
  // Throws std::runtime_error naming the path when any step fails; the temporary file is gone
  // either way.
  void Commit();

 private:
  std::string path_, temp_path_;
  FILE* file_ = nullptr;
  bool committed_ = false;
};

// Writes `bytes` to `path` through an AtomicFile. Throws std::runtime_error naming the path.
void WriteFileAtomically(const std::string& path, const std::string& bytes);
// Lets `write` fill the temporary file, then commits it. Whatever `write` throws propagates, and
// the target is left as it was.
void WriteFileAtomically(const std::string& path, const std::function<void(FILE*)>& write);

}  // namespace cugym
