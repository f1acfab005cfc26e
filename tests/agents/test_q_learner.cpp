// The DQN learner (agents/common/q_learner.h): learning on a fixed minibatch, acting and target
// evaluation, CUDA-graph replay against eager execution, checkpoints with optimizer state, and
// CUDA against the CPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/q_learner.h"
#include "nn/checkpoint.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using agent::QLearner;
using agent::QLearnerOptions;
using testing::AllDevices;
using testing::DeviceParamName;
using testing::NormwiseError;
using testing::RandomActions;
using testing::RandomFloats;
using testing::ToDevice;

constexpr int kBatch = 32, kIn = 4, kActions = 3;

QLearnerOptions Options(LossKind loss, double max_grad_norm) {
  QLearnerOptions o;
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

class QLearnerTest : public testing::DeviceTest {};

TEST_P(QLearnerTest, FitsAFixedMinibatch) {
  for (LossKind loss : {LossKind::kMse, LossKind::kHuber}) {
    QLearner trainer(backend_, Options(loss, 10.0f));
    Batch batch(device(), 1);
    trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
    const QLearner::Stats first = trainer.ReadStats();
    for (int i = 0; i < 300; ++i) trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
    const QLearner::Stats last = trainer.ReadStats();
    EXPECT_LT(last.loss, 0.1f * first.loss) << LossName(loss);
    EXPECT_EQ(last.updates, 301);
    EXPECT_GT(first.grad_norm, 0.0f);
  }
}

TEST_P(QLearnerTest, ADuelingHeadLearnsAndActsOnAggregatedValues) {
  QLearnerOptions o = Options(LossKind::kMse, 0.0f);
  o.dueling = true;
  QLearner trainer(backend_, o);
  EXPECT_EQ(trainer.online().layer_sizes().back(), kActions + 1);  // the value output
  Batch batch(device(), 1);
  trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
  const float first = trainer.ReadStats().loss;
  for (int i = 0; i < 300; ++i) trainer.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
  EXPECT_LT(trainer.ReadStats().loss, 0.1f * first);
  // Q = V + A - mean(A) from the network's outputs; acting takes its argmax.
  const int n = 6;
  Buffer<float> obs = ToDevice(device(), RandomFloats(n * kIn, 12));
  ConstBatchView ov(obs.data(), n, kIn, device());
  const std::vector<float> out = ToHost(trainer.online().Forward(ov));
  const std::vector<float> q = ToHost(trainer.QValues(ov));
  Buffer<int32_t> actions(device(), n);
  trainer.Act(ov, AsVector(actions));
  const std::vector<int32_t> a = actions.ToHost();
  for (int r = 0; r < n; ++r) {
    const float* row = out.data() + r * (kActions + 1);
    float mean = 0;
    for (int j = 0; j < kActions; ++j) mean += row[1 + j] / kActions;
    int best = 0;
    for (int j = 0; j < kActions; ++j) {
      EXPECT_NEAR(q[r * kActions + j], row[0] + row[1 + j] - mean, 1e-5);
      best = q[r * kActions + j] > q[r * kActions + best] ? j : best;
    }
    EXPECT_EQ(a[r], best);
  }
}

TEST_P(QLearnerTest, ActAndTargetEvaluation) {
  QLearner trainer(backend_, Options(LossKind::kHuber, 0.0f));
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

TEST_P(QLearnerTest, GraphReplayMatchesEager) {
  // A DQN update: target max over next observations (used directly as the regression target),
  // then the clipped Huber step; every 4th update a Polyak target update.
  QLearner eager(backend_, Options(LossKind::kHuber, 1.0f));
  QLearner graphed(backend_, Options(LossKind::kHuber, 1.0f));
  Batch batch(device(), 3);
  Buffer<float> targets_e(device(), kBatch), targets_g(device(), kBatch);
  auto step = [&](QLearner& t, Buffer<float>& targets) {
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
  const QLearner::Stats se = eager.ReadStats(), sg = graphed.ReadStats();
  EXPECT_EQ(sg.updates, kSteps);
  EXPECT_EQ(sg.loss, se.loss);
  EXPECT_EQ(sg.grad_norm, se.grad_norm);
}

TEST_P(QLearnerTest, CheckpointRestoresEverything) {
  QLearner a(backend_, Options(LossKind::kMse, 0.0f));
  Batch batch(device(), 4);
  for (int i = 0; i < 5; ++i) a.TrainStep(batch.Obs(), AsVector(batch.actions), AsVector(batch.targets));
  a.UpdateTarget(0.3f);
  const std::string path = TempPath("trainer.safetensors");
  a.Save(path, {{"env", "CartPole-v1"}, {"step", "5"}});

  QLearnerOptions other = Options(LossKind::kMse, 0.0f);
  other.seed = 99;
  QLearner b(backend_, other);
  SafetensorsMetadata meta = b.Load(path);
  EXPECT_EQ(meta["env"], "CartPole-v1");
  EXPECT_EQ(meta["cugym.kind"], "q_learner");
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
  QLearnerOptions small = Options(LossKind::kMse, 0.0f);
  small.layer_sizes = {4, 8, 3};
  QLearner c(backend_, small);
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

  // A checkpoint of the learner's old kind, "q_trainer", loads the same.
  file.metadata["cugym.kind"] = "q_trainer";
  const std::string old_path = TempPath("old_kind.safetensors");
  WriteSafetensors(old_path, file.tensors, file.metadata);
  QLearner d(backend_, other), e(backend_, other);
  EXPECT_EQ(d.Load(old_path)["cugym.kind"], "q_trainer");
  e.Load(path);
  EXPECT_EQ(d.ReadStats().updates, 5);
  EXPECT_EQ(ToHost(d.online().parameters()), ToHost(e.online().parameters()));
  EXPECT_EQ(ToHost(d.target().parameters()), ToHost(e.target().parameters()));
  std::remove(path.c_str());
  std::remove(model_path.c_str());
  std::remove(old_path.c_str());
}

// A learner with a convolution in front (conv_channels): it learns, and its checkpoint carries the
// convolution's weights, target copy and Adam moments ("conv.weight", "target.conv.weight",
// "adam.exp_avg.conv.weight", ...), so continuing from it equals continuing the original.
TEST_P(QLearnerTest, AConvolutionTrainsAndCheckpoints) {
  constexpr int kH = 4, kW = 3, kC = 2;  // kIn would not be an image: these observations are [n x 24]
  QLearnerOptions o = Options(LossKind::kHuber, 10.0);
  o.layer_sizes = {kH * kW * kC, 16, kActions};
  o.conv = agent::ConvForObservations(5, {kH, kW, kC}, "Grid-v0");
  ASSERT_EQ(o.conv, (ConvSpec{kH, kW, kC, 5, 3}));
  QLearner a(backend_, o);
  Buffer<float> obs = ToDevice(device(), RandomFloats(kBatch * 24, 71, 0.0f, 1.0f));
  Buffer<int32_t> actions = ToDevice(device(), RandomActions(kBatch, kActions, 72));
  Buffer<float> targets = ToDevice(device(), RandomFloats(kBatch, 73));
  const ConstBatchView x(obs.data(), kBatch, 24, device());
  a.TrainStep(x, AsVector(actions), AsVector(targets));
  const float first = a.ReadStats().loss;
  const std::vector<float> conv_before = ToHost(a.online().conv_params().weight);
  for (int i = 0; i < 200; ++i) a.TrainStep(x, AsVector(actions), AsVector(targets));
  EXPECT_LT(a.ReadStats().loss, 0.1f * first);
  EXPECT_NE(ToHost(a.online().conv_params().weight), conv_before);
  a.UpdateTarget(0.5f);

  const std::string path = TempPath("conv_learner.safetensors");
  a.Save(path);
  const SafetensorsFile file = ReadSafetensors(path);
  EXPECT_EQ(file.metadata.at("cugym.conv"), "height=4,width=3,in_channels=2,out_channels=5,kernel=3");
  for (const char* name :
       {"conv.weight", "target.conv.weight", "adam.exp_avg.conv.weight", "adam.exp_avg_sq.conv.weight"}) {
    ASSERT_NE(file.Find(name), nullptr) << name;
    EXPECT_EQ(file.Find(name)->shape, (std::vector<int64_t>{5, 2, 3, 3})) << name;
  }
  EXPECT_NE(file.Find("adam.exp_avg.conv.bias"), nullptr);
  EXPECT_EQ(file.Find("0.weight")->shape, (std::vector<int64_t>{16, 2 * 1 * 5}));

  QLearnerOptions other = o;
  other.seed = 99;
  QLearner b(backend_, other);
  b.Load(path);
  for (int i = 0; i < 3; ++i) {
    a.TrainStep(x, AsVector(actions), AsVector(targets));
    b.TrainStep(x, AsVector(actions), AsVector(targets));
  }
  EXPECT_EQ(ToHost(b.online().parameters()), ToHost(a.online().parameters()));
  EXPECT_EQ(ToHost(b.target().parameters()), ToHost(a.target().parameters()));

  // The same layer sizes without the convolution: refused, naming both.
  QLearnerOptions plain = o;
  plain.conv = ConvSpec();
  QLearner c(backend_, plain);
  try {
    c.Load(path);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": the checkpoint holds a conv 4x3x2->5 3x3, 24,16,3 network, this trainer's is 24,16,3");
  }
  std::remove(path.c_str());
}

// K learners as one (QLearnerOptions::replicas): four prioritized-replay-style updates (weights and
// errors), target evaluation, acting and a Polyak update give each replica what a learner of one
// with its seed gives: the same bits on the CPU, within rounding on CUDA (cuBLAS's batched GEMM).
TEST_P(QLearnerTest, ReplicasLearnAsLearnersOfOne) {
  constexpr int kReplicas = 3, kActRows = 10;
  const Device dev = device();
  auto expect_same = [dev](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    if (dev == Device::kCpu) {
      EXPECT_EQ(got, want) << what;
    } else {
      EXPECT_LT(NormwiseError(got, want), 1e-5) << what;
    }
  };
  for (bool dueling : {false, true}) {
    for (LossKind loss : {LossKind::kMse, LossKind::kHuber}) {
      SCOPED_TRACE(::testing::Message() << (dueling ? "dueling " : "") << LossName(loss));
      QLearnerOptions o = Options(loss, 0.0);
      o.dueling = dueling;
      std::vector<std::unique_ptr<QLearner>> solo;
      for (int r = 0; r < kReplicas; ++r) {
        QLearnerOptions one = o;
        one.seed = 40 + r;
        one.replica_seeds.clear();
        solo.push_back(std::make_unique<QLearner>(backend_, one));
        o.replica_seeds.push_back(40 + r);
      }
      o.replicas = kReplicas;
      QLearner batch(backend_, o);
      const int64_t stride = batch.online().replica_stride();
      auto block = [](const std::vector<float>& v, int64_t r, int64_t size) {
        return std::vector<float>(v.begin() + r * size, v.begin() + (r + 1) * size);
      };

      for (int step = 0; step < 4; ++step) {
        const std::vector<float> obs = RandomFloats(kReplicas * kBatch * kIn, 60 + step);
        const std::vector<int32_t> actions = RandomActions(kReplicas * kBatch, kActions, 70 + step);
        const std::vector<float> targets = RandomFloats(kReplicas * kBatch, 80 + step, -2.0f, 2.0f);
        const std::vector<float> weights = RandomFloats(kReplicas * kBatch, 90 + step, 0.1f, 1.0f);
        Buffer<float> obs_d = ToDevice(dev, obs), targets_d = ToDevice(dev, targets),
                      weights_d = ToDevice(dev, weights);
        Buffer<int32_t> actions_d = ToDevice(dev, actions);
        Buffer<float> errors(dev, kReplicas * kBatch), solo_errors(dev, kBatch);
        batch.TrainStep(ConstBatchView(obs_d.data(), kReplicas * kBatch, kIn, dev), AsVector(actions_d),
                        AsVector(targets_d), AsVector(weights_d), AsVector(errors));
        const std::vector<float> params = ToHost(batch.online().parameters()), errs = errors.ToHost();
        for (int r = 0; r < kReplicas; ++r) {
          SCOPED_TRACE(::testing::Message() << "step " << step << " replica " << r);
          const int64_t first = static_cast<int64_t>(r) * kBatch;
          solo[r]->TrainStep(ConstBatchView(obs_d.data() + first * kIn, kBatch, kIn, dev),
                             VectorView<const int32_t>(actions_d.data() + first, kBatch, dev),
                             VectorView<const float>(targets_d.data() + first, kBatch, dev),
                             VectorView<const float>(weights_d.data() + first, kBatch, dev), AsVector(solo_errors));
          expect_same(block(params, r, stride), ToHost(solo[r]->online().parameters()), "online weights");
          expect_same(block(errs, r, kBatch), solo_errors.ToHost(), "TD errors");
          const QLearner::Stats got = batch.ReadStats(r), want = solo[r]->ReadStats();
          expect_same({got.loss, got.mean_q}, {want.loss, want.mean_q}, "loss and mean Q");
          EXPECT_EQ(got.updates, want.updates);
        }
      }

      // Acting, the target's values, and a Polyak update.
      const std::vector<float> obs = RandomFloats(kReplicas * kActRows * kIn, 99);
      Buffer<float> obs_d = ToDevice(dev, obs), max_q(dev, kReplicas * kActRows), solo_max(dev, kActRows);
      Buffer<int32_t> acts(dev, kReplicas * kActRows), solo_acts(dev, kActRows);
      const ConstBatchView all(obs_d.data(), kReplicas * kActRows, kIn, dev);
      batch.Act(all, AsVector(acts));
      batch.UpdateTarget(0.05f);
      batch.TargetMaxQ(all, AsVector(max_q));
      const std::vector<int32_t> a = acts.ToHost();
      const std::vector<float> m = max_q.ToHost(), target = ToHost(batch.target().parameters());
      for (int r = 0; r < kReplicas; ++r) {
        SCOPED_TRACE(::testing::Message() << "replica " << r);
        const ConstBatchView mine(obs_d.data() + static_cast<int64_t>(r) * kActRows * kIn, kActRows, kIn, dev);
        solo[r]->Act(mine, AsVector(solo_acts));
        solo[r]->UpdateTarget(0.05f);
        solo[r]->TargetMaxQ(mine, AsVector(solo_max));
        if (dev == Device::kCpu) {
          EXPECT_EQ(std::vector<int32_t>(a.begin() + r * kActRows, a.begin() + (r + 1) * kActRows), solo_acts.ToHost());
        }
        expect_same(block(m, r, kActRows), solo_max.ToHost(), "target max Q");
        expect_same(block(target, r, stride), ToHost(solo[r]->target().parameters()), "target weights");
      }
    }
  }
}

// One replica's whole state moves to a learner of one and back: replica 1 copied out, into
// replica 0, and out again gives the same networks, Adam state and statistics.
TEST_P(QLearnerTest, AReplicasStateCopiesOutAndIn) {
  QLearnerOptions o = Options(LossKind::kMse, 0.0);
  o.replicas = 2;
  o.replica_seeds = {1, 2};
  QLearner batch(backend_, o);
  const std::vector<float> obs = RandomFloats(2 * kBatch * kIn, 3), targets = RandomFloats(2 * kBatch, 4);
  const std::vector<int32_t> actions = RandomActions(2 * kBatch, kActions, 5);
  Buffer<float> obs_d = ToDevice(device(), obs), targets_d = ToDevice(device(), targets);
  Buffer<int32_t> actions_d = ToDevice(device(), actions);
  for (int i = 0; i < 3; ++i) {
    batch.TrainStep(ConstBatchView(obs_d.data(), 2 * kBatch, kIn, device()), AsVector(actions_d), AsVector(targets_d));
  }
  batch.UpdateTarget(0.5f);
  QLearnerOptions one = Options(LossKind::kMse, 0.0);
  QLearner a(backend_, one), b(backend_, one);
  batch.CopyReplicaTo(1, a);
  EXPECT_EQ(ToHost(a.online().parameters()),
            ToHost(VectorView<const float>(batch.online().parameters().data() + batch.online().replica_stride(),
                                           batch.online().replica_stride(), device())));
  batch.CopyReplicaFrom(0, a);
  batch.CopyReplicaTo(0, b);
  EXPECT_EQ(ToHost(b.online().parameters()), ToHost(a.online().parameters()));
  EXPECT_EQ(ToHost(b.target().parameters()), ToHost(a.target().parameters()));
  EXPECT_EQ(ToHost(b.optimizer().exp_avg()), ToHost(a.optimizer().exp_avg()));
  EXPECT_EQ(ToHost(b.optimizer().exp_avg_sq()), ToHost(a.optimizer().exp_avg_sq()));
  EXPECT_EQ(b.ReadStats().updates, 3);
  EXPECT_EQ(b.ReadStats().loss, batch.ReadStats(1).loss);
  EXPECT_NE(ToHost(a.online().parameters()), ToHost(QLearner(backend_, one).online().parameters()))
      << "a copy, not a learner's initial weights";
  QLearnerOptions other = one;
  other.dueling = true;
  QLearner dueling(backend_, other);
  EXPECT_THROW(batch.CopyReplicaTo(0, dueling), std::invalid_argument);
  EXPECT_THROW(batch.CopyReplicaTo(2, a), std::invalid_argument);
}

TEST_P(QLearnerTest, ReplicasRefuseWhatTheyCannotKeepApart) {
  QLearnerOptions o = Options(LossKind::kMse, 10.0);
  o.replicas = 2;
  EXPECT_EQ(QLearner(backend_, o).optimizer().groups(), 2) << "each replica clipped by its own norm";
  o.replica_seeds = {1, 2, 3};
  EXPECT_THROW(QLearner(backend_, o), std::invalid_argument) << "three seeds for two replicas";
  o.replica_seeds = {1, 2};
  QLearner learner(backend_, o);
  EXPECT_NE(ToHost(learner.online().parameters())[0],
            ToHost(learner.online().parameters())[learner.online().replica_stride()])
      << "each replica from its own seed";
  EXPECT_THROW(learner.ReadStats(2), std::invalid_argument);
  EXPECT_THROW(learner.Save(TempPath("replicas.safetensors")), std::invalid_argument) << "a file holds one learner";
}

TEST(QLearnerConv, ConvForObservationsNeedsImages) {
  EXPECT_FALSE(agent::ConvForObservations(0, {4}, "CartPole-v1").enabled());
  EXPECT_EQ(agent::ConvForObservations(16, {10, 10, 7}, "MinAtar/Seaquest-v1"), (ConvSpec{10, 10, 7, 16, 3}));
  auto error = [](int64_t channels, std::vector<int64_t> shape) {
    try {
      agent::ConvForObservations(channels, shape, "Env-v0");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error(16, {4}), "conv_channels needs an image observation (H, W, C); Env-v0's is (4,)");
  EXPECT_EQ(error(16, {10, 10}), "conv_channels needs an image observation (H, W, C); Env-v0's is (10,10)");
  EXPECT_EQ(error(16, {2, 10, 4}), "conv_channels: Env-v0's images (2,10,4) are smaller than the 3 x 3 kernel");
  EXPECT_EQ(error(-1, {10, 10, 4}), "conv_channels -1 (expected 0..4096)");
}

// Five learner steps on CUDA against the CPU, within 1e-4 relative (fp32 sums in another order).
TEST(QLearnerCudaAgreement, FiveStepsAgreeWithTheCpu) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const std::shared_ptr<Backend> cpu_ = MakeBackend(Device::kCpu), gpu_ = MakeBackend(Device::kCuda);
  for (const std::vector<int>& sizes : {std::vector<int>{4, 120, 84, 2}, std::vector<int>{8, 256, 256, 4}}) {
    SCOPED_TRACE(FormatLayerSizes(sizes));
    const int n = 128, in = sizes.front(), out = sizes.back();
    QLearnerOptions o;
    o.layer_sizes = sizes;
    o.batch_size = n;
    o.max_act_batch = n;
    o.adam.lr = 1e-3;
    o.adam.max_grad_norm = 10.0;
    o.seed = 9;
    QLearner c(cpu_, o), g(gpu_, o);
    const std::vector<float> obs = RandomFloats(n * in, 4), next = RandomFloats(n * in, 5);
    const std::vector<int32_t> a = RandomActions(n, out, 6);
    struct Side {
      QLearner* trainer;
      Device device;
      Buffer<float> obs, next, targets, max_q;
      Buffer<int32_t> actions, greedy;
    };
    Side sides[2] = {
        {&c, Device::kCpu, ToDevice(Device::kCpu, obs), ToDevice(Device::kCpu, next), Buffer<float>(Device::kCpu, n),
         Buffer<float>(Device::kCpu, n), ToDevice(Device::kCpu, a), Buffer<int32_t>(Device::kCpu, n)},
        {&g, Device::kCuda, ToDevice(Device::kCuda, obs), ToDevice(Device::kCuda, next),
         Buffer<float>(Device::kCuda, n), Buffer<float>(Device::kCuda, n), ToDevice(Device::kCuda, a),
         Buffer<int32_t>(Device::kCuda, n)}};
    for (Side& s : sides) {
      for (int i = 0; i < 5; ++i) {
        s.trainer->TargetMaxQ(ConstBatchView(s.next.data(), n, in, s.device), AsVector(s.targets));
        s.trainer->TrainStep(ConstBatchView(s.obs.data(), n, in, s.device), AsVector(s.actions), AsVector(s.targets));
      }
      s.trainer->TargetMaxQ(ConstBatchView(s.next.data(), n, in, s.device), AsVector(s.max_q));
      s.trainer->Act(ConstBatchView(s.obs.data(), n, in, s.device), AsVector(s.greedy));
    }
    const QLearner::Stats stc = c.ReadStats(), stg = g.ReadStats();
    EXPECT_NEAR(stg.loss, stc.loss, 1e-4 * std::fabs(stc.loss));
    EXPECT_NEAR(stg.grad_norm, stc.grad_norm, 1e-4 * stc.grad_norm);
    EXPECT_EQ(stg.updates, 5);
    EXPECT_LT(NormwiseError(ToHost(g.online().parameters()), ToHost(c.online().parameters())), 1e-4);
    EXPECT_LT(NormwiseError(sides[1].max_q.ToHost(), sides[0].max_q.ToHost()), 1e-4);
    // Greedy actions agree except where two Q-values are within rounding of each other.
    const std::vector<int32_t> ac = sides[0].greedy.ToHost(), ag = sides[1].greedy.ToHost();
    int differ = 0;
    for (int i = 0; i < n; ++i) differ += ac[i] != ag[i];
    EXPECT_LE(differ, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, QLearnerTest, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
