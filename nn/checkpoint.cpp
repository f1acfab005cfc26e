// MLP <-> safetensors, with the layer sizes checked against the metadata.
#include "nn/checkpoint.h"

#include <stdexcept>

namespace cugym::nn {
namespace {

constexpr const char* kKindKey = "cugym.kind";
constexpr const char* kLayersKey = "cugym.layers";
constexpr const char* kActivationKey = "cugym.activation";

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

std::string LinearTensorName(const std::string& prefix, int layer, const char* what) {
  return prefix + std::to_string(2 * layer) + "." + what;
}

std::vector<NamedTensor> MlpTensors(const Mlp& net, const std::string& prefix) {
  const std::vector<float> host = ToHost(net.parameters());
  std::vector<NamedTensor> tensors;
  const std::vector<int>& s = net.layer_sizes();
  for (int l = 0; l < net.num_layers(); ++l) {
    tensors.push_back(NamedTensor::FromF32(LinearTensorName(prefix, l, "weight"), {s[l + 1], s[l]},
                                           host.data() + net.weight_offset(l)));
    tensors.push_back(
        NamedTensor::FromF32(LinearTensorName(prefix, l, "bias"), {s[l + 1]}, host.data() + net.bias_offset(l)));
  }
  return tensors;
}

std::vector<float> MlpParametersFrom(const SafetensorsFile& file, const Mlp& net, const std::string& prefix,
                                     const std::string& where) {
  std::vector<float> host(static_cast<std::size_t>(net.parameters().size()), 0.0f);
  const std::vector<int>& s = net.layer_sizes();
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
  for (int l = 0; l < net.num_layers(); ++l) {
    load(LinearTensorName(prefix, l, "weight"), {s[l + 1], s[l]}, net.weight_offset(l));
    load(LinearTensorName(prefix, l, "bias"), {s[l + 1]}, net.bias_offset(l));
  }
  return host;
}

SafetensorsMetadata MlpMetadata(const std::vector<int>& layer_sizes) {
  return {{kKindKey, "mlp"}, {kLayersKey, FormatLayerSizes(layer_sizes)}, {kActivationKey, "relu"}};
}

void SaveMlp(const std::string& path, const Mlp& net, const SafetensorsMetadata& extra) {
  SafetensorsMetadata metadata = extra;
  for (const auto& [key, value] : MlpMetadata(net.layer_sizes())) metadata[key] = value;
  WriteSafetensors(path, MlpTensors(net), metadata);
}

SafetensorsMetadata LoadMlp(const std::string& path, Mlp& net) { return LoadMlp(ReadSafetensors(path), path, net); }

SafetensorsMetadata LoadMlp(const SafetensorsFile& file, const std::string& path, Mlp& net) {
  std::vector<int> sizes = LayersOf(file, path);
  if (sizes != net.layer_sizes()) {
    throw std::invalid_argument(path + ": the file holds a " + FormatLayerSizes(sizes) + " network, this one is " +
                                FormatLayerSizes(net.layer_sizes()));
  }
  auto act = file.metadata.find(kActivationKey);
  if (act != file.metadata.end() && act->second != "relu") {
    throw std::invalid_argument(path + ": activation '" + act->second + "' (cugym's MLP uses relu)");
  }
  CopyFromHost(net.parameters(), MlpParametersFrom(file, net, "", path));
  return file.metadata;
}

std::vector<int> ReadMlpLayerSizes(const std::string& path) { return LayersOf(ReadSafetensors(path), path); }

std::vector<int> ReadMlpLayerSizes(const SafetensorsFile& file, const std::string& path) {
  return LayersOf(file, path);
}

}  // namespace cugym::nn
