// MLP model files: round trip, metadata (the hidden activation too), and the errors for files that
// do not fit the network.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "cugym_ckpt_" + std::to_string(::getpid()) + "_" + name;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

class Checkpoint : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& p : paths_) std::remove(p.c_str());
  }
  std::string Path(const std::string& name) {
    paths_.push_back(TempPath(name));
    return paths_.back();
  }
  std::shared_ptr<Backend> cpu_ = MakeBackend(Device::kCpu);
  std::vector<std::string> paths_;
};

TEST_F(Checkpoint, RoundTripWithMetadata) {
  MlpOptions o;
  o.seed = 17;
  Mlp net(cpu_, {4, 120, 84, 2}, o);
  const std::string path = Path("model.safetensors");
  SaveMlp(path, net, {{"env", "CartPole-v1"}, {"step", "50000"}, {"cugym.layers", "ignored"}});

  SafetensorsFile file = ReadSafetensors(path);
  EXPECT_EQ(file.metadata.at("cugym.layers"), "4,120,84,2");  // the caller cannot override it
  EXPECT_EQ(file.metadata.at("cugym.kind"), "mlp");
  EXPECT_EQ(file.metadata.at("env"), "CartPole-v1");
  ASSERT_EQ(file.tensors.size(), 6u);
  EXPECT_EQ(file.Find("2.weight")->shape, (std::vector<int64_t>{84, 120}));
  EXPECT_EQ(file.Find("4.bias")->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(ReadMlpLayerSizes(path), (std::vector<int>{4, 120, 84, 2}));

  o.seed = 18;
  Mlp other(cpu_, {4, 120, 84, 2}, o);
  ASSERT_NE(ToHost(other.parameters()), ToHost(net.parameters()));
  SafetensorsMetadata meta = LoadMlp(path, other);
  EXPECT_EQ(meta.at("step"), "50000");
  EXPECT_EQ(ToHost(other.parameters()), ToHost(net.parameters()));
}

TEST_F(Checkpoint, RefusesAnotherShape) {
  Mlp net(cpu_, {4, 120, 84, 2});
  const std::string path = Path("a.safetensors");
  SaveMlp(path, net);
  Mlp small(cpu_, {4, 64, 2});
  EXPECT_EQ(ErrorOf([&] { LoadMlp(path, small); }), path + ": the file holds a 4,120,84,2 network, this one is 4,64,2");
}

TEST_F(Checkpoint, RefusesFilesThatDoNotFit) {
  Mlp net(cpu_, {2, 3, 1});
  std::vector<NamedTensor> good = MlpTensors(net);
  const SafetensorsMetadata meta = MlpMetadata(net.layer_sizes());

  const std::string no_meta = Path("no_meta.safetensors");
  WriteSafetensors(no_meta, good);
  EXPECT_NE(ErrorOf([&] { LoadMlp(no_meta, net); }).find("not a cugym model file"), std::string::npos);

  const std::string missing = Path("missing.safetensors");
  WriteSafetensors(missing, {good[0], good[1], good[2]}, meta);
  EXPECT_EQ(ErrorOf([&] { LoadMlp(missing, net); }), missing + ": no tensor '2.bias'");

  std::vector<NamedTensor> wrong_shape = good;
  wrong_shape[0].shape = {2, 3};  // transposed: same bytes, other shape
  const std::string shape_path = Path("shape.safetensors");
  WriteSafetensors(shape_path, wrong_shape, meta);
  EXPECT_EQ(ErrorOf([&] { LoadMlp(shape_path, net); }),
            shape_path + ": tensor '0.weight' has shape [2,3], the network needs [3,2]");

  std::vector<NamedTensor> wrong_dtype = good;
  std::vector<int64_t> ints(3, 1);
  wrong_dtype[1] = NamedTensor::FromI64("0.bias", {3}, ints.data());
  const std::string dtype_path = Path("dtype.safetensors");
  WriteSafetensors(dtype_path, wrong_dtype, meta);
  EXPECT_EQ(ErrorOf([&] { LoadMlp(dtype_path, net); }), dtype_path + ": tensor '0.bias' is I64, expected F32");

  EXPECT_THROW(LoadMlp(Path("does_not_exist.safetensors"), net), std::runtime_error);
}

// PPO's networks: tanh hidden layers, recorded as cugym.activation = "tanh" and read back into a
// tanh network; a ReLU network refuses the file, and ReLU networks' files still say "relu".
TEST_F(Checkpoint, TanhNetworkRoundTrip) {
  MlpOptions o;
  o.seed = 3;
  o.max_batch = 4;
  o.activation = Activation::kTanh;
  o.init = MlpInit::kOrthogonal;
  o.output_gain = 0.01;
  Mlp net(cpu_, {4, 64, 64, 2}, o);
  const std::string path = Path("tanh.safetensors");
  SaveMlp(path, net, {{"cugym.activation", "relu"}});  // the caller cannot override it
  const SafetensorsFile file = ReadSafetensors(path);
  EXPECT_EQ(file.metadata.at("cugym.activation"), "tanh");
  EXPECT_EQ(ReadMlpActivation(file, path), Activation::kTanh);

  o.seed = 4;
  Mlp other(cpu_, {4, 64, 64, 2}, o);
  LoadMlp(path, other);
  EXPECT_EQ(ToHost(other.parameters()), ToHost(net.parameters()));
  const std::vector<float> x = testing::RandomFloats(4 * 4, 9);
  const ConstBatchView xv(x.data(), 4, 4, Device::kCpu);
  const std::vector<float> want = ToHost(net.Forward(xv));
  EXPECT_EQ(ToHost(other.Forward(xv)), want);

  Mlp relu(cpu_, {4, 64, 64, 2});
  EXPECT_EQ(ErrorOf([&] { LoadMlp(path, relu); }),
            path + ": the file holds a 4,64,64,2 tanh network, this one is 4,64,64,2");
  const std::string relu_path = Path("relu.safetensors");
  SaveMlp(relu_path, relu);
  EXPECT_EQ(ReadSafetensors(relu_path).metadata.at("cugym.activation"), "relu");
  EXPECT_EQ(ErrorOf([&] { LoadMlp(relu_path, other); }),
            relu_path + ": the file holds a 4,64,64,2 network, this one is 4,64,64,2 tanh");
}

TEST_F(Checkpoint, RefusesAnUnknownActivationByName) {
  Mlp net(cpu_, {2, 3, 1});
  SafetensorsMetadata meta = MlpMetadata(net.layer_sizes());
  meta["cugym.activation"] = "gelu";
  const std::string path = Path("gelu.safetensors");
  WriteSafetensors(path, MlpTensors(net), meta);
  const std::string error = path + ": metadata cugym.activation: unknown activation 'gelu' (expected relu or tanh)";
  EXPECT_EQ(ErrorOf([&] { LoadMlp(path, net); }), error);
  EXPECT_EQ(ErrorOf([&] { ReadMlpActivation(ReadSafetensors(path), path); }), error);

  // Without the key (a file from another tool): a ReLU network, as before.
  meta.erase("cugym.activation");
  const std::string bare = Path("bare.safetensors");
  WriteSafetensors(bare, MlpTensors(net), meta);
  EXPECT_EQ(ReadMlpActivation(ReadSafetensors(bare), bare), Activation::kRelu);
  EXPECT_EQ(ErrorOf([&] { LoadMlp(bare, net); }), "(no error)");
}

TEST(LayerSizes, ParseAndFormat) {
  EXPECT_EQ(ParseLayerSizes("4,120,84,2"), (std::vector<int>{4, 120, 84, 2}));
  EXPECT_EQ(FormatLayerSizes({8, 256, 4}), "8,256,4");
  for (const char* bad : {"", "4", "4,,2", "4,-1,2", "4,0,2", "4, 2", "a,b", "4,99999999999"}) {
    EXPECT_THROW(ParseLayerSizes(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace cugym::nn
