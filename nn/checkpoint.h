// MLP weights in safetensors files (core/safetensors.h), readable by PyTorch as is.
//
// Tensor names follow nn.Sequential(Linear, ReLU, Linear, ...): layer l's weight is
// "<2l>.weight" [out x in] and its bias "<2l>.bias" [out], F32, so
// `seq.load_state_dict(safetensors.torch.load_file(path))` loads them. The metadata holds
// "cugym.kind" ("mlp"), "cugym.layers" ("4,120,84,2") and "cugym.activation" ("relu"), plus
// whatever the caller adds (env id, training step, ...).
#pragma once

#include <string>
#include <vector>

#include "core/safetensors.h"
#include "nn/mlp.h"

namespace cugym::nn {

// "4,120,84,2" <-> {4, 120, 84, 2}. Parsing throws std::invalid_argument naming the text.
std::string FormatLayerSizes(const std::vector<int>& sizes);
std::vector<int> ParseLayerSizes(const std::string& text);

// The name of layer l's "weight" or "bias" under `prefix` ("" or e.g. "target.").
std::string LinearTensorName(const std::string& prefix, int layer, const char* what);

// Host copies of the network's weights and biases as named tensors (they wait for queued work).
std::vector<NamedTensor> MlpTensors(const Mlp& net, const std::string& prefix = "");
// The flat parameter vector (net.parameters()'s layout, padding zero) from tensors named as
// MlpTensors(net, prefix) gives. Throws std::invalid_argument ("WHERE: ...") for a missing
// tensor or a wrong dtype or shape; other tensors are ignored. Copy it in with CopyFromHost.
std::vector<float> MlpParametersFrom(const SafetensorsFile& file, const Mlp& net, const std::string& prefix,
                                     const std::string& where);

// Metadata every model file carries, for a network of these sizes.
SafetensorsMetadata MlpMetadata(const std::vector<int>& layer_sizes);

// Writes net's parameters to `path` (atomically); `extra` adds metadata keys (it may not
// override the cugym.* ones).
void SaveMlp(const std::string& path, const Mlp& net, const SafetensorsMetadata& extra = {});
// Loads `path` into net and returns the file's metadata. Throws std::invalid_argument naming the
// file when it is damaged, is not an MLP file, or holds a network of other layer sizes.
SafetensorsMetadata LoadMlp(const std::string& path, Mlp& net);
// The same for a file already read (ReadSafetensors(path)); `path` names it in the errors.
SafetensorsMetadata LoadMlp(const SafetensorsFile& file, const std::string& path, Mlp& net);
// The layer sizes recorded in a model file, to build a matching network before LoadMlp.
std::vector<int> ReadMlpLayerSizes(const std::string& path);
std::vector<int> ReadMlpLayerSizes(const SafetensorsFile& file, const std::string& path);

}  // namespace cugym::nn
