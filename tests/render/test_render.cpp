// Offscreen rendering: CartPole lands on the pixels Gymnasium's geometry predicts, PNG files
// round-trip, frame outputs refuse to overwrite, and nothing half-written is left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "envs/classic/cartpole.h"
#include "render/frame_writer.h"
#include "render/image.h"
#include "render/surface.h"

namespace cugym {
namespace {

namespace fs = std::filesystem;

Image DrawCartPole(float x, float theta) {
  OffscreenSurface surface(600, 400);
  CartPole::Draw(CartPole::Params{}, CartPole::State{x, 0.0f, theta, 0.0f}, surface.canvas());
  return surface.Read();
}

void ExpectColor(const Image& image, int x, int y, Color want) {
  const uint8_t* p = image.At(x, y);
  EXPECT_EQ(p[0], want.r) << "pixel (" << x << ", " << y << ")";
  EXPECT_EQ(p[1], want.g) << "pixel (" << x << ", " << y << ")";
  EXPECT_EQ(p[2], want.b) << "pixel (" << x << ", " << y << ")";
}

// Gymnasium draws y up and flips: pixel row = 399 - y.
int Row(double y) { return static_cast<int>(std::lround(399 - y)); }

constexpr Color kWhite{255, 255, 255}, kBlack{0, 0, 0}, kPole{202, 152, 101}, kAxle{129, 132, 203};

TEST(CartPoleDraw, UprightAtTheCentre) {
  const Image image = DrawCartPole(0.0f, 0.0f);
  ASSERT_EQ(image.width, 600);
  ASSERT_EQ(image.height, 400);
  ExpectColor(image, 10, 10, kWhite);
  ExpectColor(image, 10, Row(100), kBlack);  // the track, across the whole width
  ExpectColor(image, 590, Row(100), kBlack);
  ExpectColor(image, 300 - 20, Row(100 - 10), kBlack);  // the cart, 50 x 30 around (300, 100)
  ExpectColor(image, 300 + 20, Row(100 + 10), kBlack);
  ExpectColor(image, 300 - 30, Row(100 - 10), kWhite);
  ExpectColor(image, 300, Row(107.5), kAxle);  // the axle, 7.5 px above the cart's centre
  ExpectColor(image, 300, Row(180), kPole);    // the pole, up to 107.5 + 120 = 227.5
  ExpectColor(image, 300, Row(225), kPole);
  ExpectColor(image, 300, Row(231), kWhite);
  ExpectColor(image, 300 + 8, Row(180), kWhite);  // 10 px wide
}

TEST(CartPoleDraw, MovedAndTiltedPoleEndsWhereTheGeometrySays) {
  const float x = 1.0f, theta = 0.2f;
  const Image image = DrawCartPole(x, theta);
  const double cart_x = 300 + 125.0 * x;
  ExpectColor(image, static_cast<int>(cart_x) - 20, Row(95), kBlack);
  // Points along the pole's axis, 115 px from the axle, and beside it.
  const double along = 115;
  const double px = cart_x + along * std::sin(theta), py = 107.5 + along * std::cos(theta);
  ExpectColor(image, static_cast<int>(std::lround(px)), Row(py), kPole);
  ExpectColor(image, static_cast<int>(std::lround(px)) - 12, Row(py), kWhite);
  ExpectColor(image, static_cast<int>(std::lround(px)) + 12, Row(py), kWhite);
  // Past the tip (120 px along the axis, then the pole ends): white.
  ExpectColor(image, static_cast<int>(std::lround(cart_x + 126 * std::sin(theta))), Row(107.5 + 126 * std::cos(theta)),
              kWhite);
}

TEST(Surface, ViewportsTileFrames) {
  OffscreenSurface surface(1200, 400);
  surface.SetViewport(600, 0, 600, 400);
  CartPole::Draw(CartPole::Params{}, CartPole::State{0, 0, 0, 0}, surface.canvas());
  const Image image = surface.Read();
  ExpectColor(image, 300, Row(100), kWhite);  // the left tile was never drawn on: still white
  ExpectColor(image, 900, Row(100), kBlack);
  ExpectColor(image, 900, Row(180), kPole);
}

TEST(Png, RoundTripsAndRejectsOtherFiles) {
  if (!CanReadPng()) GTEST_SKIP() << "built without libpng";
  const fs::path dir = fs::temp_directory_path() / "cugym_png_test";
  fs::create_directories(dir);
  Image image{3, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}};
  const std::string path = (dir / "a.png").string();
  WritePng(path, image);
  std::ifstream file(path, std::ios::binary);
  char signature[8];
  file.read(signature, 8);
  EXPECT_EQ(std::string(signature + 1, 3), "PNG");
  const Image back = ReadPng(path);
  EXPECT_EQ(back.width, 3);
  EXPECT_EQ(back.height, 2);
  EXPECT_EQ(back.rgb, image.rgb);
  std::ofstream((dir / "bad.png").string()) << "not a png";
  EXPECT_THROW(ReadPng((dir / "bad.png").string()), std::invalid_argument);
  fs::remove_all(dir);
}

TEST(FrameWriter, NeverOverwritesWithoutForce) {
  const fs::path dir = fs::temp_directory_path() / "cugym_writer_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Image frame{4, 4, std::vector<uint8_t>(48, 200)};
  auto folder = OpenFrameWriter((dir / "frames").string(), false, 50, 4, 4);
  folder->Write(frame);
  folder->Write(frame);
  folder->Finish();
  EXPECT_TRUE(fs::exists(dir / "frames" / "frame_00001.png"));
  EXPECT_THROW(OpenFrameWriter((dir / "frames").string(), false, 50, 4, 4), std::invalid_argument);
  EXPECT_NO_THROW(OpenFrameWriter((dir / "frames").string(), true, 50, 4, 4));
  std::ofstream((dir / "keep.png").string()) << "precious";
  EXPECT_THROW(OpenFrameWriter((dir / "keep.png").string(), false, 50, 4, 4), std::invalid_argument);
  EXPECT_EQ(fs::file_size(dir / "keep.png"), 8u);  // untouched
  EXPECT_THROW(OpenFrameWriter((dir / "x.avi").string(), false, 50, 4, 4), std::invalid_argument);
  EXPECT_THROW(OpenFrameWriter((dir / "missing" / "x.png").string(), false, 50, 4, 4), std::invalid_argument);
  EXPECT_EQ(OpenFrameWriter((dir / "one.png").string(), false, 50, 4, 4)->max_frames(), 1);
  fs::remove_all(dir);
}

std::string Listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& name : names) out += name + " ";
  return out;
}

TEST(Png, AFailedWriteLeavesNothing) {
  const fs::path dir = fs::temp_directory_path() / "cugym_png_fail_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_THROW(WritePng((dir / "empty.png").string(), Image{}), std::runtime_error);  // the encoder refuses 0x0
  WritePng((dir / "ok.png").string(), Image{1, 1, {1, 2, 3}});
  EXPECT_EQ(Listing(dir), "ok.png ");
  fs::remove_all(dir);
}

// A stand-in for ffmpeg on the PATH: reads the frames, then writes `output` into its last argument
// (the file it was told to create) and exits with `status`.
class FakeFfmpeg {
 public:
  FakeFfmpeg(const fs::path& dir, const std::string& output, int status)
      : old_path_(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin") {
    fs::create_directories(dir / "bin");
    std::ofstream(dir / "bin" / "ffmpeg") << "#!/bin/sh\nfor last; do :; done\ncat >/dev/null\nprintf '" << output
                                          << "' >\"$last\"\nexit " << status << "\n";
    fs::permissions(dir / "bin" / "ffmpeg", fs::perms::owner_all);
    setenv("PATH", ((dir / "bin").string() + ":" + old_path_).c_str(), 1);
  }
  ~FakeFfmpeg() { setenv("PATH", old_path_.c_str(), 1); }

 private:
  std::string old_path_;
};

TEST(FrameWriter, VideoIsCommittedOnlyWhenFfmpegSucceeds) {
  const fs::path dir = fs::temp_directory_path() / "cugym_ffmpeg_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  const Image frame{4, 4, std::vector<uint8_t>(48, 200)};
  {
    FakeFfmpeg ffmpeg(dir, "GIF89a", 0);
    auto writer = OpenFrameWriter((dir / "out" / "ok.gif").string(), false, 50, 4, 4);
    writer->Write(frame);
    EXPECT_NE(Listing(dir / "out").find(".ok.tmp."), std::string::npos) << "ffmpeg writes a temporary file";
    writer->Finish();
    std::ifstream in(dir / "out" / "ok.gif");
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), "GIF89a");
    // Abandoned before Finish (an exception while rendering): nothing is left.
    OpenFrameWriter((dir / "out" / "dropped.mp4").string(), false, 50, 4, 4)->Write(frame);
  }
  {
    FakeFfmpeg ffmpeg(dir, "partial", 1);
    auto writer = OpenFrameWriter((dir / "out" / "bad.mp4").string(), false, 50, 4, 4);
    writer->Write(frame);
    EXPECT_THROW(writer->Finish(), std::runtime_error);
  }
  EXPECT_EQ(Listing(dir / "out"), "ok.gif ");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cugym
