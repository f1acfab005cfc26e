// PNG folder, PNG file and ffmpeg outputs for `cugym record`.
#include "render/frame_writer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "core/atomic_file.h"

namespace cugym {
namespace fs = std::filesystem;
namespace {

std::string Extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// The folder a new file at `path` goes in must exist and be writable.
void CheckParentWritable(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent))
    throw std::invalid_argument("cannot write '" + path + "': folder '" + parent.string() + "' does not exist");
  if (access(parent.c_str(), W_OK) != 0)
    throw std::invalid_argument("cannot write '" + path + "': folder '" + parent.string() + "' is not writable");
}

class PngFolderWriter final : public FrameWriter {
 public:
  PngFolderWriter(const std::string& dir, bool force) : dir_(dir) {
    std::error_code error;
    if (fs::exists(dir_) && !fs::is_directory(dir_))
      throw std::invalid_argument("--out '" + dir + "' exists and is not a folder");
    if (!fs::exists(dir_)) {
      fs::create_directories(dir_, error);
      if (error) throw std::invalid_argument("cannot create folder '" + dir + "': " + error.message());
    } else if (access(dir_.c_str(), W_OK) != 0) {
      throw std::invalid_argument("cannot write into folder '" + dir + "'");
    }
    if (!force) {
      for (const auto& entry : fs::directory_iterator(dir_)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("frame_", 0) == 0 && Extension(name) == ".png")
          throw std::invalid_argument("folder '" + dir + "' already holds frames (" + name +
                                      "); use --force to overwrite");
      }
    }
  }
  void Write(const Image& frame) override {
    char name[32];
    std::snprintf(name, sizeof(name), "frame_%05lld.png", static_cast<long long>(count_++));
    WritePng((fs::path(dir_) / name).string(), frame);
  }
  void Finish() override {}
  int64_t max_frames() const override { return 100000; }
  std::string Describe() const override {
    return std::to_string(count_) + " PNG frames in " + dir_ + "/ (frame_00000.png ...)";
  }

 private:
  std::string dir_;
  int64_t count_ = 0;
};

class PngFileWriter final : public FrameWriter {
 public:
  explicit PngFileWriter(const std::string& path) : path_(path) {}
  void Write(const Image& frame) override { WritePng(path_, frame); }
  void Finish() override {}
  int64_t max_frames() const override { return 1; }
  std::string Describe() const override { return "1 frame in " + path_; }

 private:
  std::string path_;
};

// Pipes raw RGB frames to ffmpeg, which encodes into the temporary file of an AtomicFile; Finish()
// commits it, and anything else (an error, an exception) removes it.
class FfmpegWriter final : public FrameWriter {
 public:
  FfmpegWriter(const std::string& ffmpeg, const std::string& path, int fps, int width, int height)
      : output_(path), width_(width), height_(height) {
    const bool gif = Extension(path) == ".gif";
    // GIF: a palette made from the frames themselves; MP4: H.264 in yuv420p, which players expect.
    const std::string filters = gif ? "-vf \"split[a][b];[a]palettegen=max_colors=64[p];[b][p]paletteuse\""
                                    : "-c:v libx264 -pix_fmt yuv420p -vf \"pad=ceil(iw/2)*2:ceil(ih/2)*2\"";
    // -y: the temporary file exists already (empty); ffmpeg truncates and fills that same file.
    const std::string command = "'" + ffmpeg + "' -y -loglevel error -f rawvideo -pix_fmt rgb24 -s " +
                                std::to_string(width) + "x" + std::to_string(height) + " -r " + std::to_string(fps) +
                                " -i - " + filters + " '" + output_.temp_path() + "'";
    signal(SIGPIPE, SIG_IGN);  // a dying ffmpeg must give an error, not kill us
    pipe_ = popen(command.c_str(), "w");
    if (pipe_ == nullptr) throw std::runtime_error("cannot start ffmpeg");
  }
  ~FfmpegWriter() override {
    if (pipe_ != nullptr) pclose(pipe_);
  }
  void Write(const Image& frame) override {
    if (frame.width != width_ || frame.height != height_) throw std::logic_error("frame size changed");
    if (std::fwrite(frame.rgb.data(), 1, frame.rgb.size(), pipe_) != frame.rgb.size())
      throw std::runtime_error("ffmpeg stopped reading frames while writing '" + output_.path() + "'");
    ++count_;
  }
  void Finish() override {
    int status = pclose(pipe_);
    pipe_ = nullptr;
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error("ffmpeg failed to encode '" + output_.path() + "' (exit status " +
                               std::to_string(status) + ")");
    output_.Commit();
  }
  int64_t max_frames() const override { return 100000; }
  std::string Describe() const override { return std::to_string(count_) + " frames encoded in " + output_.path(); }

 private:
  AtomicFile output_;
  int width_, height_;
  FILE* pipe_ = nullptr;
  int64_t count_ = 0;
};

}  // namespace

std::string FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

std::unique_ptr<FrameWriter> OpenFrameWriter(const std::string& path, bool force, int fps, int width, int height) {
  if (path.empty()) throw std::invalid_argument("--out is required");
  if (path.find('\'') != std::string::npos) throw std::invalid_argument("--out: quotes in paths are not supported");
  const std::string ext = Extension(path);
  if (ext == ".png" || ext == ".gif" || ext == ".mp4") {
    if (fs::is_directory(path)) throw std::invalid_argument("--out '" + path + "' is a folder");
    if (fs::exists(path) && !force) throw std::invalid_argument("'" + path + "' exists; use --force to overwrite it");
    CheckParentWritable(path);
    if (ext == ".png") return std::make_unique<PngFileWriter>(path);
    const std::string ffmpeg = FindOnPath("ffmpeg");
    if (ffmpeg.empty())
      throw std::invalid_argument(
          "writing " + ext +
          " needs ffmpeg on the PATH (not found); install it, or record PNG frames with --out FOLDER");
    return std::make_unique<FfmpegWriter>(ffmpeg, path, fps, width, height);
  }
  if (!ext.empty())
    throw std::invalid_argument("--out '" + path + "': unknown extension " + ext +
                                " (use .png, .gif, .mp4 or a folder)");
  return std::make_unique<PngFolderWriter>(path, force);
}

}  // namespace cugym
