// The one way cugym writes a file: under a fresh temporary name in the target's folder, synced,
// then renamed over the target, so a crash never leaves a half-written file under the real name.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

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

// Defers the syncs and renames of the AtomicFile commits made on this thread while it is alive:
// each file is still written, flushed and closed at its Commit(), but made durable and renamed over
// its target only at the group's Commit(), which syncs the data of every file with one syncfs(2)
// per file system, renames them in order, then syncs the folders the same way. Many runs writing
// at the same step (a lockstep batch's, agents/run/trainer.h) then cost two syncs instead of two per
// file; a crash still never leaves a half-written file under a real name. Until the group commits,
// each target keeps its old contents, so nothing may read a file written in the same group.
// Destroying an uncommitted group removes its files' temporary copies (the targets stay as they
// were). Groups do not nest: a second one on the thread throws std::logic_error.
class AtomicFileGroup {
 public:
  AtomicFileGroup();
  ~AtomicFileGroup();
  AtomicFileGroup(const AtomicFileGroup&) = delete;
  AtomicFileGroup& operator=(const AtomicFileGroup&) = delete;

  // Throws std::runtime_error naming the path whose sync or rename failed; the files renamed
  // before it stay, the others' temporary copies are removed. Later commits on this thread are
  // plain AtomicFile commits again.
  void Commit();

 private:
  friend class AtomicFile;
  void RenameAll();  // Commit's syncs and renames
  void Discard();    // removes the temporary files not renamed, forgets the removals
  struct Pending {
    std::string temp_path, path;
  };
  friend void RemoveFile(const std::string& path);
  std::vector<Pending> pending_;
  std::vector<std::string> removals_;
  bool active_ = true;
};

// Removes the file `path` (a missing one is no error; std::runtime_error naming it otherwise).
// Inside an AtomicFileGroup, the removal waits for the group's Commit, after its files are renamed
// and synced, and is dropped when the group is not committed: an old checkpoint goes only once its
// successor is on disk.
void RemoveFile(const std::string& path);

// Writes `bytes` to `path` through an AtomicFile. Throws std::runtime_error naming the path.
void WriteFileAtomically(const std::string& path, const std::string& bytes);
// Lets `write` fill the temporary file, then commits it. Whatever `write` throws propagates, and
// the target is left as it was.
void WriteFileAtomically(const std::string& path, const std::function<void(FILE*)>& write);

}  // namespace cugym
