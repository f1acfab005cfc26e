// Atomic file writing: temporary file, fsync, rename, fsync of the folder; in groups, one
// syncfs for the files and one for the folders.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

thread_local AtomicFileGroup* current_group = nullptr;

// `sync` (fsync or syncfs) on a file or folder opened by name; false (errno set) when it cannot be
// opened or synced.
bool SyncPath(const std::string& path, bool folder, int (*sync)(int)) {
  const int fd = open(path.c_str(), (folder ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return false;
  const bool synced = sync(fd) == 0;
  const int err = errno;
  close(fd);
  errno = err;
  return synced;
}

// Syncs the file systems holding `paths` (syncfs once per file system), or each path where
// syncfs is missing (not Linux). Returns the first path whose sync failed, "" when none did (a
// folder that cannot be synced still has its files: no failure).
std::string SyncAll(const std::vector<std::string>& paths, bool folders) {
#ifdef __linux__
  std::vector<dev_t> synced;
  for (const std::string& path : paths) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return path;
    if (std::find(synced.begin(), synced.end(), st.st_dev) != synced.end()) continue;
    if (!SyncPath(path, folders, syncfs) && !folders) return path;
    synced.push_back(st.st_dev);
  }
#else
  for (const std::string& path : paths)
    if (!SyncPath(path, folders, fsync) && !folders) return path;
#endif
  return "";
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
  AtomicFileGroup* group = current_group;
  int err = std::ferror(f) ? EIO : 0;
  if (err == 0 && (std::fflush(f) != 0 || (group == nullptr && fsync(fileno(f)) != 0))) err = errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err != 0) throw std::runtime_error(path_ + ": write failed: " + std::strerror(err));
  if (group != nullptr) {  // the group syncs and renames it
    group->pending_.push_back({temp_path_, path_});
    committed_ = true;
    return;
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    err = errno;
    throw std::runtime_error(path_ + ": cannot rename " + temp_path_ + " into place: " + std::strerror(err));
  }
  committed_ = true;
  // Persist the rename itself; a file system that cannot sync a folder still has the file.
  SyncPath(Folder(path_), true, fsync);
}

AtomicFileGroup::AtomicFileGroup() {
  if (current_group != nullptr) throw std::logic_error("AtomicFileGroup: a group is already open on this thread");
  current_group = this;
}

AtomicFileGroup::~AtomicFileGroup() {
  if (active_) current_group = nullptr;
  Discard();
}

void AtomicFileGroup::Discard() {
  for (const Pending& p : pending_) unlink(p.temp_path.c_str());
  pending_.clear();
  removals_.clear();
}

void RemoveFile(const std::string& path) {
  if (current_group != nullptr) {
    current_group->removals_.push_back(path);
    return;
  }
  std::error_code error;
  std::filesystem::remove(path, error);
  if (error) throw std::runtime_error(path + ": cannot remove: " + error.message());
}

void AtomicFileGroup::Commit() {
  if (!active_) throw std::logic_error("AtomicFileGroup committed twice");
  active_ = false;
  current_group = nullptr;
  std::vector<std::string> removals = std::move(removals_);
  removals_.clear();
  if (!pending_.empty()) RenameAll();
  for (const std::string& path : removals) RemoveFile(path);  // the group is closed: at once
}

void AtomicFileGroup::RenameAll() {
  std::vector<std::string> temps, folders;
  for (const Pending& p : pending_) {
    temps.push_back(p.temp_path);
    const std::string folder = Folder(p.path);
    if (std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
  }
  const std::string unsynced = SyncAll(temps, false);
  if (!unsynced.empty()) {
    const int err = errno;
    const auto p =
        std::find_if(pending_.begin(), pending_.end(), [&](const Pending& q) { return q.temp_path == unsynced; });
    const std::string message = (p != pending_.end() ? p->path : unsynced) + ": write failed: " + std::strerror(err);
    Discard();
    throw std::runtime_error(message);
  }
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const Pending& p = pending_[i];
    if (std::rename(p.temp_path.c_str(), p.path.c_str()) != 0) {
      const int err = errno;
      const std::string message = p.path + ": cannot rename " + p.temp_path + " into place: " + std::strerror(err);
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(i));  // renamed: not removed
      Discard();
      throw std::runtime_error(message);
    }
  }
  pending_.clear();
  SyncAll(folders, true);  // best effort, as AtomicFile's folder sync
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
