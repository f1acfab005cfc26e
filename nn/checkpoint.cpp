// MLP <-> safetensors, with the layer sizes checked against the metadata.
#include "nn/checkpoint.h"

#include <stdexcept>

namespace cugym::nn {
namespace {

constexpr const char* kKindKey = "cugym.kind";
constexpr const char* kLayersKey = "cugym.layers";
constexpr const char* kActivationKey = "cugym.activation";
constexpr const char* kConvKey = "cugym.conv";
constexpr const char* kNormKey = "cugym.norm";
constexpr const char* kConvFields[] = {"height", "width", "in_channels", "out_channels", "kernel"};

std::vector<int> LayersOf(const SafetensorsFile& file, const std::string& path) {
  auto it = file.metadata.find(kLayersKey);
  if (it == file.metadata.end()) {
    throw std::invalid_argument(path + ": no \"" + std::string(kLayersKey) +
                                "\" in the metadata (not a cugym model file)");
  }
  try {
    return ParseLayerSizes(it->second);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": metadata " + kLayersKey + ": " + e.what());
  }
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

std::string FormatLayerSizes(const std::vector<int>& sizes) {
  std::string out;
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(sizes[i]);
  return out;
}

std::vector<int> ParseLayerSizes(const std::string& text) {
  std::vector<int> sizes;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string field = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool ok = !field.empty() && field.size() <= 9 && field.find_first_not_of("0123456789") == std::string::npos;
    if (!ok || std::stoi(field) < 1) {
      throw std::invalid_argument("layer sizes '" + text + "': expected positive integers separated by commas");
    }
    sizes.push_back(std::stoi(field));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (sizes.size() < 2)
    throw std::invalid_argument("layer sizes '" + text + "': need at least an input and an output size");
  return sizes;
}

std::string LinearTensorName(const std::string& prefix, int layer, const char* what, bool layer_norm) {
  return prefix + std::to_string((layer_norm ? 3 : 2) * layer) + "." + what;
}

std::string FormatConv(const ConvSpec& conv) {
  const int values[] = {conv.height, conv.width, conv.in_channels, conv.out_channels, conv.kernel};
  std::string out;
  for (int i = 0; i < 5; ++i) out += (i > 0 ? "," : "") + std::string(kConvFields[i]) + "=" + std::to_string(values[i]);
  return out;
}

ConvSpec ParseConv(const std::string& text) {
  ConvSpec conv;
  int* fields[] = {&conv.height, &conv.width, &conv.in_channels, &conv.out_channels, &conv.kernel};
  std::size_t start = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string key = std::string(kConvFields[i]) + "=";
    const std::size_t end = i < 4 ? text.find(',', start) : text.size();
    const std::string field = end == std::string::npos ? "" : text.substr(start, end - start);
    const std::string digits = field.rfind(key, 0) == 0 ? field.substr(key.size()) : "";
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(digits) < 1) {
      throw std::invalid_argument("convolution '" + text + "': expected " + FormatConv({10, 10, 4, 16, 3}) +
                                  " (positive integers)");
    }
    *fields[i] = std::stoi(digits);
    start = end + 1;
  }
  CheckConvSpec(conv, "convolution '" + text + "'");
  return conv;
}

std::string DescribeNetwork(const std::vector<int>& layer_sizes, const ConvSpec& conv, bool layer_norm,
                            Activation activation) {
  const std::string suffix =
      std::string(layer_norm ? " LayerNorm" : "") + (activation == Activation::kTanh ? " tanh" : "");
  if (!conv.enabled()) return FormatLayerSizes(layer_sizes) + suffix;
  return "conv " + std::to_string(conv.height) + "x" + std::to_string(conv.width) + "x" +
         std::to_string(conv.in_channels) + "->" + std::to_string(conv.out_channels) + " " +
         std::to_string(conv.kernel) + "x" + std::to_string(conv.kernel) + ", " + FormatLayerSizes(layer_sizes) +
         suffix;
}

std::vector<ParameterTensor> MlpParameterTensors(const Mlp& net) {
  if (net.replicas() != 1) {
    throw std::invalid_argument("a network of " + std::to_string(net.replicas()) +
                                " replicas: save or load one replica through a network of one (Mlp::CopyReplicaTo)");
  }
  std::vector<ParameterTensor> tensors;
  if (net.has_conv()) {
    const ConvSpec& c = net.conv();
    tensors.push_back({"conv.weight", {c.out_channels, c.in_channels, c.kernel, c.kernel}, net.conv_weight_offset()});
    tensors.push_back({"conv.bias", {c.out_channels}, net.conv_bias_offset()});
    if (net.layer_norm()) {
      tensors.push_back({"conv_norm.weight", {c.out_channels}, net.conv_norm_weight_offset()});
      tensors.push_back({"conv_norm.bias", {c.out_channels}, net.conv_norm_bias_offset()});
    }
  }
  const std::vector<int>& s = net.layer_sizes();
  const bool ln = net.layer_norm();
  for (int l = 0; l < net.num_layers(); ++l) {
    tensors.push_back({LinearTensorName("", l, "weight", ln), {s[l + 1], net.linear_in(l)}, net.weight_offset(l)});
    tensors.push_back({LinearTensorName("", l, "bias", ln), {s[l + 1]}, net.bias_offset(l)});
    if (ln && l + 1 < net.num_layers()) {
      tensors.push_back({std::to_string(3 * l + 1) + ".weight", {s[l + 1]}, net.norm_weight_offset(l)});
      tensors.push_back({std::to_string(3 * l + 1) + ".bias", {s[l + 1]}, net.norm_bias_offset(l)});
    }
  }
  return tensors;
}

std::vector<NamedTensor> MlpTensors(const Mlp& net, const std::string& prefix) {
  const std::vector<float> host = ToHost(net.parameters());
  std::vector<NamedTensor> tensors;
  for (const ParameterTensor& t : MlpParameterTensors(net))
    tensors.push_back(NamedTensor::FromF32(prefix + t.name, t.shape, host.data() + t.offset));
  return tensors;
}

std::vector<float> MlpParametersFrom(const SafetensorsFile& file, const Mlp& net, const std::string& prefix,
                                     const std::string& where) {
  std::vector<float> host(static_cast<std::size_t>(net.parameters().size()), 0.0f);
  auto load = [&](const std::string& name, std::vector<int64_t> shape, int64_t offset) {
    const NamedTensor* t = file.Find(name);
    if (t == nullptr) throw std::invalid_argument(where + ": no tensor '" + name + "'");
    if (t->dtype != DType::kF32) {
      throw std::invalid_argument(where + ": tensor '" + name + "' is " + DTypeName(t->dtype) + ", expected F32");
    }
    if (t->shape != shape) {
      throw std::invalid_argument(where + ": tensor '" + name + "' has shape " + ShapeText(t->shape) +
                                  ", the network needs " + ShapeText(shape));
    }
    std::vector<float> values = t->ToF32();
    std::copy(values.begin(), values.end(), host.begin() + offset);
  };
  for (const ParameterTensor& t : MlpParameterTensors(net)) load(prefix + t.name, t.shape, t.offset);
  return host;
}

SafetensorsMetadata MlpMetadata(const std::vector<int>& layer_sizes, const ConvSpec& conv, bool layer_norm,
                                Activation activation) {
  SafetensorsMetadata metadata = {
      {kKindKey, "mlp"}, {kLayersKey, FormatLayerSizes(layer_sizes)}, {kActivationKey, ActivationName(activation)}};
  if (conv.enabled()) metadata[kConvKey] = FormatConv(conv);
  if (layer_norm) metadata[kNormKey] = "layer_norm";
  return metadata;
}

void EraseNetworkMetadata(SafetensorsMetadata& metadata) {
  metadata.erase(kConvKey);
  metadata.erase(kNormKey);
  metadata.erase(kActivationKey);
}

void SaveMlp(const std::string& path, const Mlp& net, const SafetensorsMetadata& extra) {
  SafetensorsMetadata metadata = extra;
  EraseNetworkMetadata(metadata);  // only the network says what its layers and activation are
  for (const auto& [key, value] : MlpMetadata(net.layer_sizes(), net.conv(), net.layer_norm(), net.activation()))
    metadata[key] = value;
  WriteSafetensors(path, MlpTensors(net), metadata);
}

SafetensorsMetadata LoadMlp(const std::string& path, Mlp& net) { return LoadMlp(ReadSafetensors(path), path, net); }

SafetensorsMetadata LoadMlp(const SafetensorsFile& file, const std::string& path, Mlp& net) {
  std::vector<int> sizes = LayersOf(file, path);
  const ConvSpec conv = ReadMlpConv(file, path);
  const bool layer_norm = ReadMlpLayerNorm(file, path);
  const Activation activation = ReadMlpActivation(file, path);
  if (sizes != net.layer_sizes() || conv != net.conv() || layer_norm != net.layer_norm() ||
      activation != net.activation()) {
    throw std::invalid_argument(path + ": the file holds a " + DescribeNetwork(sizes, conv, layer_norm, activation) +
                                " network, this one is " +
                                DescribeNetwork(net.layer_sizes(), net.conv(), net.layer_norm(), net.activation()));
  }
  CopyFromHost(net.parameters(), MlpParametersFrom(file, net, "", path));
  return file.metadata;
}

std::vector<int> ReadMlpLayerSizes(const std::string& path) { return LayersOf(ReadSafetensors(path), path); }

std::vector<int> ReadMlpLayerSizes(const SafetensorsFile& file, const std::string& path) {
  return LayersOf(file, path);
}

ConvSpec ReadMlpConv(const SafetensorsFile& file, const std::string& path) {
  auto it = file.metadata.find(kConvKey);
  if (it == file.metadata.end()) return {};
  try {
    return ParseConv(it->second);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": metadata " + kConvKey + ": " + e.what());
  }
}

bool ReadMlpLayerNorm(const SafetensorsFile& file, const std::string& path) {
  auto it = file.metadata.find(kNormKey);
  if (it == file.metadata.end()) return false;
  if (it->second != "layer_norm")
    throw std::invalid_argument(path + ": metadata " + kNormKey + " '" + it->second + "' (expected layer_norm)");
  return true;
}

Activation ReadMlpActivation(const SafetensorsFile& file, const std::string& path) {
  auto it = file.metadata.find(kActivationKey);
  if (it == file.metadata.end()) return Activation::kRelu;  // files from other tools: cugym's networks were ReLU
  try {
    return ParseHiddenActivation(it->second);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": metadata " + kActivationKey + ": " + e.what());
  }
}

}  // namespace cugym::nn
