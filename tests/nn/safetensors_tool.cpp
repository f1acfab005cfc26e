// Test helper for tests/nn/safetensors_interop.py: writes a cugym model file and prints what it
// wrote, or prints what cugym reads from a file (written by Python's `safetensors`).
//   cugym_nn_safetensors_tool write PATH   MLP 4-8-3 (seed 7) + metadata; prints it and a forward pass
//   cugym_nn_safetensors_tool write-conv PATH   the same for a 6x5x3 conv 4 (3x3) + 90-8-3 network
//   cugym_nn_safetensors_tool dump PATH    prints the file's metadata and tensors
// Output lines (tab-separated): meta KEY VALUE | tensor NAME DTYPE DIMS VALUES | input/forward VALUES
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "nn/checkpoint.h"
#include "nn/mlp.h"

namespace {

using cugym::DType;
using cugym::NamedTensor;

void PrintValues(const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) std::printf("%s%.9g", i ? " " : "", v[i]);
}

void PrintTensor(const NamedTensor& t) {
  std::string dims;
  for (std::size_t i = 0; i < t.shape.size(); ++i) dims += (i ? "," : "") + std::to_string(t.shape[i]);
  std::printf("tensor\t%s\t%s\t%s\t", t.name.c_str(), cugym::DTypeName(t.dtype), dims.c_str());
  if (t.dtype == DType::kF32) {
    PrintValues(t.ToF32());
  } else {
    const std::vector<int64_t> v = t.ToI64();
    for (std::size_t i = 0; i < v.size(); ++i) std::printf("%s%lld", i ? " " : "", static_cast<long long>(v[i]));
  }
  std::printf("\n");
}

void PrintMetadata(const cugym::SafetensorsMetadata& metadata) {
  for (const auto& [key, value] : metadata) std::printf("meta\t%s\t%s\n", key.c_str(), value.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const bool conv = argc == 3 && std::strcmp(argv[1], "write-conv") == 0;
  if (argc != 3 || (std::strcmp(argv[1], "write") != 0 && std::strcmp(argv[1], "dump") != 0 && !conv)) {
    std::fprintf(stderr, "usage: %s write|write-conv|dump PATH\n", argv[0]);
    return 2;
  }
  try {
    const std::string path = argv[2];
    if (std::strcmp(argv[1], "dump") == 0) {
      cugym::SafetensorsFile file = cugym::ReadSafetensors(path);
      PrintMetadata(file.metadata);
      for (const NamedTensor& t : file.tensors) PrintTensor(t);
      return 0;
    }
    cugym::nn::MlpOptions options;
    options.seed = 7;
    options.max_batch = 2;
    if (conv) options.conv = cugym::nn::ConvSpec{6, 5, 3, 4, 3};
    const int in = conv ? 90 : 4;
    cugym::nn::Mlp net(cugym::nn::MakeBackend(cugym::Device::kCpu), {in, 8, 3}, options);
    const cugym::SafetensorsMetadata extra = {{"env", "CartPole-v1"}, {"step", "123"}};
    cugym::nn::SaveMlp(path, net, extra);
    cugym::SafetensorsMetadata metadata = extra;
    for (const auto& [key, value] : cugym::nn::MlpMetadata(net.layer_sizes(), net.conv())) metadata[key] = value;
    PrintMetadata(metadata);
    for (const NamedTensor& t : cugym::nn::MlpTensors(net)) PrintTensor(t);  // from memory, not the file
    std::vector<float> x = {0.1f, 0.2f, 0.3f, 0.4f, -1.0f, 0.5f, 2.0f, 0.0f};
    if (conv) {  // two NHWC images with values of both signs
      x.resize(2 * in);
      for (int i = 0; i < 2 * in; ++i) x[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
    }
    std::printf("input\t");
    PrintValues(x);
    std::printf("\nforward\t");
    PrintValues(cugym::nn::ToHost(net.Forward(cugym::nn::ConstBatchView(x.data(), 2, in, cugym::Device::kCpu))));
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
