// TensorBoard event files (events.out.tfevents.*) written without TensorFlow or protobuf: TFRecord
// framing (length, masked CRC-32C of the length, payload, masked CRC-32C of the payload) around
// hand-encoded `Event` messages holding scalar summaries. TensorBoard, W&B's sync and every tool
// built on TensorBoard's EventAccumulator read them. The format: docs/tensorboard.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/crc32c.h"  // Crc32c

namespace cugym {

// TFRecord's mask: rotate right by 15 bits, add 0xA282EAD8.
uint32_t MaskCrc32c(uint32_t crc);

struct Scalar {
  std::string tag;  // e.g. "charts/episodic_return"
  float value;
};

// The serialized `Event` message of one step's scalars (one Summary.Value each, in order), and of
// the version record every file starts with.
std::string EncodeScalarEvent(double wall_time, int64_t step, const std::vector<Scalar>& scalars);
std::string EncodeVersionEvent(double wall_time);
// `payload` framed as one TFRecord.
std::string FrameRecord(const std::string& payload);

// Appends events to a new file in `dir` (which must exist), named as TensorBoard names them:
// events.out.tfevents.<10-digit epoch seconds>.<hostname>.<pid>, with ".N" added when a file of
// that name exists. The seconds are those of now or, when a file of `dir` has the same or later
// ones, one more than its: TensorBoard reads a folder's files in name order. The version record comes first. Each Add
// writes whole records and flushes them, so a process killed at any moment leaves a file that readers take up to its
// last whole record. Not thread-safe.
class EventFileWriter {
 public:
  // Throws std::runtime_error naming the path when the file cannot be created or written.
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One event at `step` with these scalars (none: nothing is written); wall_time is now.
  void Add(int64_t step, const std::vector<Scalar>& scalars);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// One record of an event file, decoded as far as cugym writes them.
struct EventRecord {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;     // non-empty for the version record
  std::vector<Scalar> scalars;  // simple_value summaries, in order
};

// The whole records of the event file at `path`, up to the first incomplete or corrupt one (where
// TensorBoard's reader stops too). Fields cugym does not write are skipped. Throws
// std::runtime_error when the file cannot be read.
std::vector<EventRecord> ReadEventFile(const std::string& path);

// The event files (names containing "tfevents") directly in `dir`, sorted by name.
std::vector<std::string> EventFilesIn(const std::string& dir);

// Rewrites the event file at `path` (atomically) without the records of steps after `last_step`
// and without a torn or corrupt tail, so that a resumed run, which writes a new file from
// last_step on, repeats no step. The version record is kept. A file that needs no change is left
// untouched; returns whether it changed.
bool TruncateEventFile(const std::string& path, int64_t last_step);

}  // namespace cugym
