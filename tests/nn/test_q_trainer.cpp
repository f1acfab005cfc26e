// The DQN training step: learning on a fixed minibatch, acting and target evaluation, CUDA-graph
// replay against eager execution, checkpoints with optimizer state.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/q_trainer.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::RandomActions;
using testing::RandomFloats;
using testing::ToDevice;

constexpr int kBatch = 32, kIn = 4, kActions = 3;

QTrainerOptions Options(LossKind loss, double max_grad_norm) {
  QTrainerOptions o;
  o.layer_sizes = {kIn, 16, 16, kActions};
  o.batch_size = kBatch;
  o.max_act_batch = 10;
  o.loss = loss;
  o.adam.lr = 1e-2;
  o.adam.max_grad_norm = max_grad_norm;
  o.seed = 5;
  return o;
}

// A minibatch on the device.
struct Batch {
  Batch(Device device, uint32_t seed)
      : obs(ToDevice(device, RandomFloats(kBatch * kIn, seed))),
        next_obs(ToDevice(device, RandomFloats(kBatch * kIn, seed + 1))),
        actions(ToDevice(device, RandomActions(kBatch, kActions, seed + 2))),
        targets(ToDevice(device, RandomFloats(kBatch, seed + 3, -2.0f, 2.0f))),
        device(device) {}
  ConstBatchView Obs() const { return {obs.data(), kBatch, kIn, device}; }
  ConstBatchView NextObs() const { return {next_obs.data(), kBatch, kIn, device}; }
  Buffer<float> obs, next_obs;
  Buffer<int32_t> actions;
  Buffer<float> targets;
  Device device;
};

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "cugym_nn_" + std::to_string(::getpid()) + "_" + name;
}

class QTrainerTest : public testing::DeviceTest {};

TEST_P(QTrainerTest, FitsAFixedMinibatch) {
  for (LossKind loss : {LossKind::kMse, LossKind::kHuber}) {
    QTrainer trainer(backend_, Options(loss, 10.0f));
    Batch batch(device(), 1);
    trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
    const QTrainer::Stats first = trainer.ReadStats();
    for (int i = 0; i < 300; ++i) trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
    const QTrainer::Stats last = trainer.ReadStats();
    EXPECT_LT(last.loss, 0.1f * first.loss) << LossName(loss);
    EXPECT_EQ(last.updates, 301);
    EXPECT_GT(first.grad_norm, 0.0f);
  }
}

TEST_P(QTrainerTest, ActAndTargetEvaluation) {
  QTrainer trainer(backend_, Options(LossKind::kHuber, 0.0f));
  const int n = 10;
  Buffer<float> obs = ToDevice(device(), RandomFloats(n * kIn, 9));
  ConstBatchView ov(obs.data(), n, kIn, device());
  Buffer<int32_t> actions(device(), n);
  Buffer<float> max_q(device(), n), q_at(device(), n);
  trainer.Act(ov, AsVector(actions));
  const std::vector<float> q = ToHost(trainer.QValues(ov));
  const std::vector<int32_t> a = actions.ToHost();
  // The target starts as a copy of the online network.
  trainer.TargetMaxQ(ov, AsVector(max_q));
  trainer.TargetQAt(ov, AsVector(actions), AsVector(q_at));
  const std::vector<float> m = max_q.ToHost(), at = q_at.ToHost();
  for (int r = 0; r < n; ++r) {
    int best = 0;
    for (int j = 1; j < kActions; ++j) best = q[r * kActions + j] > q[r * kActions + best] ? j : best;
    EXPECT_EQ(a[r], best);
    EXPECT_EQ(m[r], q[r * kActions + best]);
    EXPECT_EQ(at[r], q[r * kActions + best]);
  }
  // After training the online network moves and the target does not, until UpdateTarget.
  Batch batch(device(), 2);
  trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
  trainer.TargetMaxQ(ov, AsVector(max_q));
  EXPECT_EQ(max_q.ToHost(), m);
  trainer.UpdateTarget();
  EXPECT_EQ(ToHost(trainer.target().parameters()), ToHost(trainer.online().parameters()));
}

TEST_P(QTrainerTest, GraphReplayMatchesEager) {
  // A DQN update: target max over next observations (used directly as the regression target),
  // then the clipped Huber step; every 4th update a Polyak target update.
  QTrainer eager(backend_, Options(LossKind::kHuber, 1.0f));
  QTrainer graphed(backend_, Options(LossKind::kHuber, 1.0f));
  Batch batch(device(), 3);
  Buffer<float> targets_e(device(), kBatch), targets_g(device(), kBatch);
  auto step = [&](QTrainer& t, Buffer<float>& targets) {
    t.TargetMaxQ(batch.NextObs(), AsVector(targets));
    t.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(targets));
  };
  const int kSteps = 12;
  for (int i = 0; i < kSteps; ++i) {
    step(eager, targets_e);
    if (i % 4 == 3) eager.UpdateTarget(0.5f);
  }
  std::unique_ptr<Graph> update = backend_->Capture([&] { step(graphed, targets_g); });
  std::unique_ptr<Graph> sync = backend_->Capture([&] { graphed.UpdateTarget(0.5f); });
  EXPECT_EQ(graphed.ReadStats().updates, 0) << "capturing runs nothing";
  for (int i = 0; i < kSteps; ++i) {
    update->Replay();
    if (i % 4 == 3) sync->Replay();
  }
  backend_->Synchronize();
  EXPECT_EQ(ToHost(graphed.online().parameters()), ToHost(eager.online().parameters()));
  EXPECT_EQ(ToHost(graphed.target().parameters()), ToHost(eager.target().parameters()));
  EXPECT_EQ(ToHost(graphed.optimizer().exp_avg_sq()), ToHost(eager.optimizer().exp_avg_sq()));
  const QTrainer::Stats se = eager.ReadStats(), sg = graphed.ReadStats();
  EXPECT_EQ(sg.updates, kSteps);
  EXPECT_EQ(sg.loss, se.loss);
  EXPECT_EQ(sg.grad_norm, se.grad_norm);
}

TEST_P(QTrainerTest, CheckpointRestoresEverything) {
  QTrainer a(backend_, Options(LossKind::kMse, 0.0f));
  Batch batch(device(), 4);
  for (int i = 0; i < 5; ++i) a.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
  a.UpdateTarget(0.3f);
  const std::string path = TempPath("trainer.safetensors");
  a.Save(path, {{"env", "CartPole-v1"}, {"step", "5"}});

  QTrainerOptions other = Options(LossKind::kMse, 0.0f);
  other.seed = 99;
  QTrainer b(backend_, other);
  SafetensorsMetadata meta = b.Load(path);
  EXPECT_EQ(meta["env"], "CartPole-v1");
  EXPECT_EQ(meta["cugym.kind"], "q_trainer");
  EXPECT_EQ(meta["cugym.layers"], "4,16,16,3");
  EXPECT_EQ(b.ReadStats().updates, 5);
  // Continuing from the checkpoint is the same as continuing the original.
  for (int i = 0; i < 3; ++i) {
    a.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
    b.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
  }
  EXPECT_EQ(ToHost(b.online().parameters()), ToHost(a.online().parameters()));
  EXPECT_EQ(ToHost(b.target().parameters()), ToHost(a.target().parameters()));

  // The online network loads as a plain model too.
  Mlp model(backend_, {4, 16, 16, 3});
  LoadMlp(path, model);
  SafetensorsFile file = ReadSafetensors(path);
  EXPECT_EQ(file.Find("0.weight")->ToF32(), ToHost(model.weight(0)));

  // Another shape or a model file is refused with a clear message.
  QTrainerOptions small = Options(LossKind::kMse, 0.0f);
  small.layer_sizes = {4, 8, 3};
  QTrainer c(backend_, small);
  try {
    c.Load(path);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("holds a 4,16,16,3 network, this trainer's is 4,8,3"), std::string::npos)
        << e.what();
  }
  const std::string model_path = TempPath("model.safetensors");
  SaveMlp(model_path, model);
  EXPECT_THROW(b.Load(model_path), std::invalid_argument);
  std::remove(path.c_str());
  std::remove(model_path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Devices, QTrainerTest, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
