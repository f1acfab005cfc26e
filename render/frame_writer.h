// Where `cugym record` puts its frames: a folder of PNGs, one PNG, or a GIF/MP4 encoded by piping
// raw frames to ffmpeg. Nothing is overwritten unless asked, and nothing half-written is left
// under the real name.
#pragma once

#include <memory>
#include <string>

#include "render/image.h"

namespace cugym {

class FrameWriter {
 public:
  virtual ~FrameWriter() = default;
  virtual void Write(const Image& frame) = 0;
  // Completes the output (ffmpeg finishes encoding, the file is moved into place).
  virtual void Finish() = 0;
  // How many frames the output holds at most (1 for a .png file).
  virtual int64_t max_frames() const = 0;
  // A one-line description of what was written, for the user.
  virtual std::string Describe() const = 0;
};

// Chooses the output by `path`: ending in .png -> one PNG file; .gif or .mp4 -> ffmpeg; anything
// else -> a folder of frame_00000.png, ... Checks up front that the output can be written and
// that it would not overwrite anything (unless `force`); throws std::invalid_argument with a
// one-line reason otherwise (ffmpeg missing for .gif/.mp4 included).
std::unique_ptr<FrameWriter> OpenFrameWriter(const std::string& path, bool force, int fps, int width, int height);

// The full path of `program` on PATH, or "".
std::string FindOnPath(const std::string& program);

}  // namespace cugym
