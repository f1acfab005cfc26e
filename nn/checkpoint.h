// MLP weights in safetensors files (core/safetensors.h), readable by PyTorch as is.
//
// Tensor names follow nn.Sequential(Linear, ReLU, Linear, ...): layer l's weight is
// "<2l>.weight" [out x in] and its bias "<2l>.bias" [out], F32, so
// `seq.load_state_dict(safetensors.torch.load_file(path))` loads them. The metadata holds
// "cugym.kind" ("mlp"), "cugym.layers" ("4,120,84,2") and "cugym.activation" (the hidden layers'
// activation, MlpOptions::activation: "relu", or "tanh" for nn.Sequential(Linear, Tanh, ...)),
// plus whatever the caller adds (env id, training step, ...). A file without "cugym.activation"
// is a ReLU network; any other value is refused.
//
// A network with a convolution in front adds "conv.weight" [out, in, k, k] (PyTorch's Conv2d
// layout) and "conv.bias" [out], and the metadata "cugym.conv"
// ("height=10,width=10,in_channels=4,out_channels=16,kernel=3"). Its first Linear layer's weight
// is [hidden, Ho*Wo*out] over the convolution's output flattened NHWC, in (y, x, c) order: a
// PyTorch model reading it flattens conv_out.permute(0, 2, 3, 1) (docs/nn.md). Files without
// "cugym.conv" are plain MLPs, read as before.
//
// A network with LayerNorm (MlpOptions::layer_norm) is nn.Sequential(Linear, LayerNorm, ReLU,
// Linear, LayerNorm, ReLU, ..., Linear): layer l's Linear is "<3l>.weight"/"<3l>.bias" and its
// LayerNorm "<3l+1>.weight" (scale) and "<3l+1>.bias" (shift); the convolution's LayerNorm (over
// each position's channels) is "conv_norm.weight"/"conv_norm.bias"; the metadata says
// "cugym.norm" = "layer_norm" (eps 1e-5, PyTorch's default).
#pragma once

#include <string>
#include <vector>

#include "core/safetensors.h"
#include "nn/mlp.h"

namespace cugym::nn {

// "4,120,84,2" <-> {4, 120, 84, 2}. Parsing throws std::invalid_argument naming the text.
std::string FormatLayerSizes(const std::vector<int>& sizes);
std::vector<int> ParseLayerSizes(const std::string& text);

// The name of layer l's "weight" or "bias" under `prefix` ("" or e.g. "target."), in a network
// with or without LayerNorm.
std::string LinearTensorName(const std::string& prefix, int layer, const char* what, bool layer_norm = false);

// "height=10,width=10,in_channels=4,out_channels=16,kernel=3" <-> ConvSpec (the "cugym.conv"
// metadata). Parsing throws std::invalid_argument naming the text.
std::string FormatConv(const ConvSpec& conv);
ConvSpec ParseConv(const std::string& text);
// "4,120,84,2", or with a convolution "conv 10x10x4->16 3x3, 400,128,6", then " LayerNorm" and
// " tanh" where they apply: for error messages.
std::string DescribeNetwork(const std::vector<int>& layer_sizes, const ConvSpec& conv, bool layer_norm = false,
                            Activation activation = Activation::kRelu);

// One tensor of a network's parameters: its name (without prefix), shape and offset in the flat
// buffer, in the buffer's order (the convolution's first). Checkpoints of anything laid out like
// the parameters (Adam's moments) name their tensors by it.
struct ParameterTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset;
};
std::vector<ParameterTensor> MlpParameterTensors(const Mlp& net);

// Host copies of the network's weights and biases as named tensors (they wait for queued work).
std::vector<NamedTensor> MlpTensors(const Mlp& net, const std::string& prefix = "");
// The flat parameter vector (net.parameters()'s layout, padding zero) from tensors named as
// MlpTensors(net, prefix) gives. Throws std::invalid_argument ("WHERE: ...") for a missing
// tensor or a wrong dtype or shape; other tensors are ignored. Copy it in with CopyFromHost.
std::vector<float> MlpParametersFrom(const SafetensorsFile& file, const Mlp& net, const std::string& prefix,
                                     const std::string& where);

// Metadata every model file carries, for a network of these sizes (and convolution, if enabled,
// LayerNorm and hidden activation).
SafetensorsMetadata MlpMetadata(const std::vector<int>& layer_sizes, const ConvSpec& conv = {}, bool layer_norm = false,
                                Activation activation = Activation::kRelu);

// Writes net's parameters to `path` (atomically); `extra` adds metadata keys (it may not
// override the cugym.* ones).
void SaveMlp(const std::string& path, const Mlp& net, const SafetensorsMetadata& extra = {});
// Loads `path` into net and returns the file's metadata. Throws std::invalid_argument naming the
// file when it is damaged, is not an MLP file, or holds a network of other layer sizes, another
// convolution (or none where net has one), or another or an unknown activation.
SafetensorsMetadata LoadMlp(const std::string& path, Mlp& net);
// The same for a file already read (ReadSafetensors(path)); `path` names it in the errors.
SafetensorsMetadata LoadMlp(const SafetensorsFile& file, const std::string& path, Mlp& net);
// The layer sizes recorded in a model file, to build a matching network before LoadMlp.
std::vector<int> ReadMlpLayerSizes(const std::string& path);
std::vector<int> ReadMlpLayerSizes(const SafetensorsFile& file, const std::string& path);
// The convolution a model file records (MlpOptions::conv), disabled when it has none.
ConvSpec ReadMlpConv(const SafetensorsFile& file, const std::string& path);
// Whether a model file's network has LayerNorm (MlpOptions::layer_norm); throws
// std::invalid_argument naming the file for a "cugym.norm" other than "layer_norm".
bool ReadMlpLayerNorm(const SafetensorsFile& file, const std::string& path);
// A model file's hidden activation (MlpOptions::activation): ReLU without "cugym.activation";
// throws std::invalid_argument naming the file and the value for one other than relu or tanh.
Activation ReadMlpActivation(const SafetensorsFile& file, const std::string& path);
// The keys SaveMlp and checkpoints write for the network's shape and activation, which only the
// network sets.
void EraseNetworkMetadata(SafetensorsMetadata& metadata);

}  // namespace cugym::nn
