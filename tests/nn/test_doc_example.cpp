// The example of docs/nn.md, compiled and run (on the CPU here; on the GPU the same code runs
// with Device::kCuda), so the documentation cannot drift from the API.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nn/adam.h"
#include "nn/checkpoint.h"
#include "nn/mlp.h"

namespace cugym {
namespace {

TEST(DocExample, RegressionLoop) {
  const std::string model_path = ::testing::TempDir() + "cugym_doc_" + std::to_string(::getpid()) + ".safetensors";
  // --8<-- [docs/nn.md example]
  const Device device = Device::kCpu;  // or ResolveDevice("auto")
  std::shared_ptr<nn::Backend> backend = nn::MakeBackend(device);

  nn::MlpOptions net_options;
  net_options.max_batch = 128;                         // most rows per call
  net_options.seed = 1;                                // PyTorch's nn.Linear initialization from the counter RNG
  nn::Mlp net(backend, {4, 120, 84, 2}, net_options);  // 4 inputs, 2 outputs
  nn::AdamOptions adam_options;
  adam_options.lr = 2.5e-4;
  nn::Adam adam(backend, net.parameters().size(), adam_options);

  // A minibatch on the device: inputs, which output each row regresses, and its target.
  const int b = 128;
  Buffer<float> x(device, b * 4), targets(device, b), stats(device, 2);
  Buffer<int32_t> selected(device, b);
  x.Zero();
  targets.Zero();
  selected.Zero();
  nn::ConstBatchView x_view(x.data(), b, 4, device);

  auto step = [&] {
    nn::ConstBatchView y = net.ForwardTrain(x_view);
    backend->GatherLoss(nn::LossKind::kMse, y, nn::AsVector(selected), nn::AsVector(targets), net.OutputGrad(),
                        net.linear_grads(net.num_layers() - 1).bias, nn::AsVector(stats));  // loss, mean output
    net.Backward(net.OutputGrad(), /*last_bias_grad_ready=*/true);
    adam.Step(net.parameters(), net.gradients());
  };
  step();                                                     // eager (loads the kernels)
  std::unique_ptr<nn::Graph> graph = backend->Capture(step);  // one CUDA graph on the GPU
  for (int i = 0; i < 10; ++i) graph->Replay();

  // Inference on 16 rows, and the best output of each.
  Buffer<int32_t> best(device, 16);
  backend->RowMax(net.Forward(nn::ConstBatchView(x.data(), 16, 4, device)), nn::VectorView<float>(),
                  nn::AsVector(best));
  const std::vector<float> loss = stats.ToHost();  // waits for the device: every K steps, not every step
  std::printf("loss %.4f  updates %lld\n", loss[0], static_cast<long long>(adam.ReadStepCount()));
  nn::SaveMlp(model_path, net, {{"updates", std::to_string(adam.ReadStepCount())}});
  // --8<--
  EXPECT_EQ(adam.ReadStepCount(), 11);
  EXPECT_EQ(nn::ReadMlpLayerSizes(model_path), (std::vector<int>{4, 120, 84, 2}));
  EXPECT_EQ(best.ToHost().size(), 16u);
  std::remove(model_path.c_str());
}

// The PPO networks of docs/nn.md (CleanRL's ppo.py): the actor's logits start near 0, a nearly
// uniform policy (output gain 0.01 on at most 64 tanh outputs: |logit| <= 0.01 * 8).
TEST(DocExample, PpoActorAndCritic) {
  std::shared_ptr<nn::Backend> backend = nn::MakeBackend(Device::kCpu);
  const int obs_dim = 4, actions = 2;
  // --8<-- [docs/nn.md ppo]
  nn::MlpOptions actor;
  actor.activation = nn::Activation::kTanh;
  actor.init = nn::MlpInit::kOrthogonal;  // hidden_gain sqrt(2)
  actor.output_gain = 0.01;               // a nearly uniform first policy
  nn::MlpOptions critic = actor;
  critic.output_gain = 1.0;
  nn::Mlp policy(backend, {obs_dim, 64, 64, actions}, actor), value(backend, {obs_dim, 64, 64, 1}, critic);
  // --8<--
  const std::vector<float> obs = {0.5f, -1.0f, 2.0f, 0.1f};
  const std::vector<float> logits = nn::ToHost(policy.Forward(nn::ConstBatchView(obs.data(), 1, 4, Device::kCpu)));
  for (float l : logits) EXPECT_LE(std::fabs(l), 0.08f);
  EXPECT_EQ(value.activation(), nn::Activation::kTanh);
}

}  // namespace
}  // namespace cugym
