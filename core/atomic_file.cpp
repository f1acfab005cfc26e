// Atomic file writing: temporary file, fsync, rename, fsync of the folder.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace cugym {
namespace {

std::string Folder(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // The pid keeps processes apart, the counter threads and earlier files of this process; O_EXCL
  // makes sure a leftover of a crashed run is never reused.
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target(path_);
  const std::string stem = "." + target.stem().string() + ".tmp." + std::to_string(getpid()) + ".";
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp_path_ = (target.parent_path() / (stem + std::to_string(counter++) + target.extension().string())).string();
    fd = open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw std::runtime_error(path_ + ": cannot create a temporary file: " + std::strerror(errno));
  file_ = fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int err = errno;
    close(fd);
    unlink(temp_path_.c_str());
    throw std::runtime_error(path_ + ": cannot open a temporary file: " + std::strerror(err));
  }
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) unlink(temp_path_.c_str());
}

void AtomicFile::Commit() {
  if (file_ == nullptr) throw std::logic_error(path_ + ": AtomicFile committed twice");
  FILE* f = std::exchange(file_, nullptr);
  int err = std::ferror(f) ? EIO : 0;
  if (err == 0 && (std::fflush(f) != 0 || fsync(fileno(f)) != 0)) err = errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err != 0) throw std::runtime_error(path_ + ": write failed: " + std::strerror(err));
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    err = errno;
    throw std::runtime_error(path_ + ": cannot rename " + temp_path_ + " into place: " + std::strerror(err));
  }
  committed_ = true;
  // Persist the rename itself; a file system that cannot sync a folder still has the file.
  const int dir = open(Folder(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
}

void WriteFileAtomically(const std::string& path, const std::string& bytes) {
  WriteFileAtomically(path, [&](FILE* f) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
      throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
  });
}

void WriteFileAtomically(const std::string& path, const std::function<void(FILE*)>& write) {
  AtomicFile file(path);
  write(file.file());
  file.Commit();
}

}  // namespace cugym
