// The example of docs/nn.md, compiled and run (on the CPU here; on the GPU the same code runs
// with Device::kCuda), so the documentation cannot drift from the API.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/q_trainer.h"

namespace cugym {
namespace {

TEST(DocExample, DqnUpdateLoop) {
  const std::string model_path = ::testing::TempDir() + "cugym_doc_" + std::to_string(::getpid()) + ".safetensors";
  // --8<-- [docs/nn.md example]
  const Device device = Device::kCpu;  // or ResolveDevice("auto")
  std::shared_ptr<nn::Backend> backend = nn::MakeBackend(device);

  nn::QTrainerOptions options;
  options.layer_sizes = {4, 120, 84, 2};  // CartPole-v1: 4 observations, 2 actions
  options.batch_size = 128;               // minibatch rows
  options.max_act_batch = 16;             // envs acted for at once
  options.loss = nn::LossKind::kMse;      // CleanRL; SB3 uses kHuber with max_grad_norm 10
  options.adam.lr = 2.5e-4;
  options.seed = 1;
  nn::QTrainer q(backend, options);

  // Minibatch buffers on the device, filled by the replay buffer (here: zeros).
  const int b = options.batch_size;
  Buffer<float> obs(device, b * 4), next_obs(device, b * 4), targets(device, b);
  Buffer<int32_t> actions(device, b);
  obs.Zero();
  next_obs.Zero();
  actions.Zero();
  nn::ConstBatchView obs_view(obs.data(), b, 4, device), next_view(next_obs.data(), b, 4, device);

  auto update = [&] {
    q.TargetMaxQ(next_view, nn::AsVector(targets));  // max_a Q_target(s', a)
    // ... the agent's own pass: targets = r + gamma * (1 - terminated) * targets ...
    q.TrainStep(obs_view, nn::AsVector(actions), nn::AsVector(targets));
  };
  update();                                                     // eager
  std::unique_ptr<nn::Graph> graph = backend->Capture(update);  // one CUDA graph on the GPU
  for (int step = 0; step < 10; ++step) {
    graph->Replay();
    if (step % 5 == 4) q.UpdateTarget();  // hard copy; or q.UpdateTarget(0.005f) every step
  }

  // Acting: greedy actions for a batch of observations.
  Buffer<float> env_obs(device, 16 * 4);
  Buffer<int32_t> greedy(device, 16);
  env_obs.Zero();
  q.Act(nn::ConstBatchView(env_obs.data(), 16, 4, device), nn::AsVector(greedy));

  nn::QTrainer::Stats stats = q.ReadStats();  // waits for the device: every K steps, not every step
  std::printf("loss %.4f  mean Q %.4f  updates %lld\n", stats.loss, stats.mean_q,
              static_cast<long long>(stats.updates));
  nn::SaveMlp(model_path, q.online(), {{"env", "CartPole-v1"}, {"step", std::to_string(stats.updates)}});
  // --8<--
  EXPECT_EQ(stats.updates, 11);
  EXPECT_EQ(nn::ReadMlpLayerSizes(model_path), options.layer_sizes);
  std::remove(model_path.c_str());
}

}  // namespace
}  // namespace cugym
