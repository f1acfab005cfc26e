// PPO policy model files: SavePolicyModel / LoadPolicyModel round trips, GreedyPolicy acting as a
// plain host reference in double computes from the file (normalize, forward, argmax or the mean
// clipped or squashed into the Box), its refusals, and EvaluateModel on a Box env.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "agents/common/evaluation.h"
#include "agents/common/policy.h"
#include "core/build_info.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"
#include "tests/agents/agent_test_util.h"
#include "tests/gpu_skip.h"

namespace cugym::agent {
namespace {

using testing::Builtins;
using testing::ScratchDir;

// A hand-built actor as PPO builds it: tanh hidden layers, orthogonal weights. A large output gain
// drives the means past Pendulum's Box (+-2), so the clip is exercised.
std::unique_ptr<nn::Mlp> MakeActor(std::vector<int> sizes, uint64_t seed, double output_gain, int max_batch = 16) {
  nn::MlpOptions o;
  o.max_batch = max_batch;
  o.seed = seed;
  o.activation = nn::Activation::kTanh;
  o.init = nn::MlpInit::kOrthogonal;
  o.output_gain = output_gain;
  return std::make_unique<nn::Mlp>(nn::MakeBackend(Device::kCpu), std::move(sizes), o);
}

// A normalizer's statistics of `dim` features, away from mean 0 and variance 1.
void AddNormalizer(PolicyModelInfo& info, int dim) {
  for (int d = 0; d < dim; ++d) {
    info.obs_mean.push_back(0.3 * std::sin(1.1 * d + 0.2) + 1.0 / 3.0);
    info.obs_var.push_back(0.5 + 0.25 * d + 1e-3 / 7.0);
  }
}

PolicyModelInfo GaussianInfo(int action_dim, bool squash, bool normalize, int obs_dim) {
  PolicyModelInfo info;
  info.env_id = "Pendulum-v1";
  info.global_step = 123456;
  info.gaussian = true;
  info.squash = squash;
  for (int k = 0; k < action_dim; ++k) info.log_std.push_back(-0.5f + 0.1f * static_cast<float>(k));
  if (normalize) AddNormalizer(info, obs_dim);
  info.obs_clip = 1.5;  // small: some observations are clipped
  return info;
}

PolicyModelInfo CategoricalInfo(bool normalize, int obs_dim) {
  PolicyModelInfo info;
  info.env_id = "CartPole-v1";
  info.global_step = 42;
  if (normalize) AddNormalizer(info, obs_dim);
  info.obs_clip = 2.0;
  return info;
}

std::vector<float> Observations(int64_t n, int dim, float scale) {
  std::vector<float> obs(n * dim);
  for (std::size_t i = 0; i < obs.size(); ++i) obs[i] = scale * std::sin(1.7f * static_cast<float>(i) + 0.3f);
  return obs;
}

template <class T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The actor's outputs for n observations as a plain host loop computes them in double from the
// model file: normalized (clip((x - mean) / sqrt(var + 1e-8), -clip, clip)), then Linear -> tanh
// -> ... -> Linear.
std::vector<double> ReferenceOutputs(const std::string& path, const std::vector<float>& obs, int64_t n) {
  const SafetensorsFile file = ReadSafetensors(path);
  const std::vector<int> sizes = nn::ReadMlpLayerSizes(file, path);
  const NamedTensor* mean_bits = file.Find("norm.obs_mean");
  std::vector<double> mean, var;
  if (mean_bits != nullptr) {
    const std::vector<int64_t> m = mean_bits->ToI64(), v = file.Find("norm.obs_var")->ToI64();
    mean.resize(m.size());
    var.resize(v.size());
    std::memcpy(mean.data(), m.data(), m.size() * sizeof(double));
    std::memcpy(var.data(), v.data(), v.size() * sizeof(double));
  }
  const double clip = std::stod(file.metadata.at("cugym.norm.obs_clip"));
  std::vector<double> out;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double> x(obs.begin() + r * sizes[0], obs.begin() + (r + 1) * sizes[0]);
    for (std::size_t d = 0; d < x.size() && !mean.empty(); ++d)
      x[d] = std::clamp((x[d] - mean[d]) / std::sqrt(var[d] + 1e-8), -clip, clip);
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
      const std::vector<float> w = file.Find(std::to_string(2 * l) + ".weight")->ToF32();
      const std::vector<float> b = file.Find(std::to_string(2 * l) + ".bias")->ToF32();
      std::vector<double> y(sizes[l + 1]);
      for (int o = 0; o < sizes[l + 1]; ++o) {
        double s = b[o];
        for (int i = 0; i < sizes[l]; ++i) s += static_cast<double>(w[o * sizes[l] + i]) * x[i];
        y[o] = l + 2 < sizes.size() ? std::tanh(s) : s;
      }
      x = y;
    }
    out.insert(out.end(), x.begin(), x.end());
  }
  return out;
}

// The env actions of the reference: the mean clipped to [low, high], or tanh(mean) rescaled.
std::vector<double> ReferenceBoxActions(const std::vector<double>& means, const Space& box, bool squash) {
  std::vector<double> a(means.size());
  const std::size_t dim = box.low.size();
  for (std::size_t i = 0; i < means.size(); ++i) {
    const double low = box.low[i % dim], high = box.high[i % dim];
    a[i] = squash ? low + (std::tanh(means[i]) + 1.0) * 0.5 * (high - low) : std::clamp(means[i], low, high);
  }
  return a;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PolicyModel, RoundTripsAGaussianActorWithItsNormalizerBitForBit) {
  const ScratchDir dir("cugym_policy_model_gaussian");
  const auto actor = MakeActor({3, 16, 16, 1}, 7, 3.0);
  const PolicyModelInfo info = GaussianInfo(1, true, true, 3);
  const std::string path = (dir / "m.safetensors").string();
  SavePolicyModel(path, *actor, info);

  const auto loaded = MakeActor({3, 16, 16, 1}, 99, 1.0);
  const PolicyModelInfo back = LoadPolicyModel(path, *loaded);
  EXPECT_TRUE(SameBits(nn::ToHost(loaded->parameters()), nn::ToHost(actor->parameters())));
  EXPECT_TRUE(SameBits(back.log_std, info.log_std));
  EXPECT_TRUE(SameBits(back.obs_mean, info.obs_mean));
  EXPECT_TRUE(SameBits(back.obs_var, info.obs_var));
  EXPECT_EQ(back.env_id, "Pendulum-v1");
  EXPECT_EQ(back.global_step, 123456);
  EXPECT_TRUE(back.gaussian);
  EXPECT_TRUE(back.squash);
  EXPECT_EQ(back.obs_clip, 1.5);

  // The file as other tools see it: the documented tensors and metadata, and a network LoadMlp reads.
  const SafetensorsFile file = ReadSafetensors(path);
  EXPECT_TRUE(file.checksummed);
  std::vector<std::string> names;
  for (const NamedTensor& t : file.tensors) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight", "4.bias", "4.weight",
                                             "log_std", "norm.obs_mean", "norm.obs_var"}));
  EXPECT_EQ(file.Find("log_std")->dtype, DType::kF32);
  EXPECT_EQ(file.Find("norm.obs_mean")->dtype, DType::kI64);
  const SafetensorsMetadata expected = {
      {"cugym.kind", "policy"},        {"cugym.algo", "ppo"},           {"cugym.policy", "gaussian"},
      {"cugym.squash", "true"},        {"cugym.log_std", "parameter"},  {"cugym.norm.obs_clip", "1.5"},
      {"cugym.env_id", "Pendulum-v1"}, {"cugym.global_step", "123456"}, {"cugym.version", VersionString()},
      {"cugym.layers", "3,16,16,1"},   {"cugym.activation", "tanh"}};
  EXPECT_EQ(file.metadata, expected);
  const auto plain = MakeActor({3, 16, 16, 1}, 5, 1.0);
  nn::LoadMlp(path, *plain);
  EXPECT_TRUE(SameBits(nn::ToHost(plain->parameters()), nn::ToHost(actor->parameters())));
}

TEST(PolicyModel, RoundTripsACategoricalActorWithAndWithoutANormalizer) {
  const ScratchDir dir("cugym_policy_model_categorical");
  for (bool normalize : {false, true}) {
    const auto actor = MakeActor({4, 8, 2}, 3, 0.01);
    const std::string path = (dir / "m.safetensors").string();
    SavePolicyModel(path, *actor, CategoricalInfo(normalize, 4));
    const auto loaded = MakeActor({4, 8, 2}, 4, 1.0);
    const PolicyModelInfo back = LoadPolicyModel(path, *loaded);
    EXPECT_TRUE(SameBits(nn::ToHost(loaded->parameters()), nn::ToHost(actor->parameters())));
    EXPECT_FALSE(back.gaussian);
    EXPECT_FALSE(back.squash);
    EXPECT_TRUE(back.log_std.empty());
    EXPECT_EQ(back.obs_mean.size(), normalize ? 4u : 0u);
    EXPECT_TRUE(SameBits(back.obs_var, CategoricalInfo(normalize, 4).obs_var));
    const SafetensorsFile file = ReadSafetensors(path);
    EXPECT_EQ(file.metadata.at("cugym.policy"), "categorical");
    EXPECT_EQ(file.Find("log_std"), nullptr);
    EXPECT_EQ(file.Find("norm.obs_var") != nullptr, normalize);
  }
}

TEST(PolicyModel, LoadRefusesQModelsOtherShapesAndDamagedFiles) {
  const ScratchDir dir("cugym_policy_model_refusals");
  const auto actor = MakeActor({4, 8, 2}, 3, 0.01);
  const std::string q_model = (dir / "q.safetensors").string(), path = (dir / "m.safetensors").string();
  nn::SaveMlp(q_model, *actor, {{"cugym.env_id", "CartPole-v1"}});
  EXPECT_EQ(ErrorOf([&] { LoadPolicyModel(q_model, *actor); }),
            q_model + " is a Q-network model (cugym.kind mlp), not a policy file");
  SavePolicyModel(path, *actor, CategoricalInfo(true, 4));
  const auto wider = MakeActor({4, 9, 2}, 3, 0.01);
  EXPECT_TRUE(Contains(ErrorOf([&] { LoadPolicyModel(path, *wider); }), path + ": the file holds a 4,8,2 tanh"));
  // One flipped byte in the last tensor's data: its checksum names it.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes[bytes.size() - 3] ^= 0x40;
  const std::string damaged = (dir / "damaged.safetensors").string();
  std::ofstream(damaged, std::ios::binary) << bytes;
  EXPECT_TRUE(Contains(ErrorOf([&] { LoadPolicyModel(damaged, *actor); }), damaged + ": tensor '"));
  std::ofstream(damaged, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_TRUE(Contains(ErrorOf([&] { LoadPolicyModel(damaged, *actor); }), damaged));
  // A log_std of the wrong size is refused when written.
  EXPECT_EQ(ErrorOf([&] { SavePolicyModel(path, *actor, GaussianInfo(3, false, false, 4)); }),
            "SavePolicyModel(" + path + "): log_std has 3 entries, the actor has 2 outputs");
}

TEST(GreedyPolicy, ActsOnAGaussianFileAsTheHostReferenceDoes) {
  const ScratchDir dir("cugym_policy_gaussian_act");
  const Space& box = Builtins().Get("Pendulum-v1").spec.action_space;
  for (bool squash : {false, true}) {
    for (bool normalize : {false, true}) {
      const auto actor = MakeActor({3, 16, 16, 1}, 11, 4.0);
      const std::string path = (dir / "m.safetensors").string();
      SavePolicyModel(path, *actor, GaussianInfo(1, squash, normalize, 3));
      GreedyPolicy policy(Builtins(), path, "", 16, Device::kCpu);
      ASSERT_TRUE(policy.continuous());
      ASSERT_TRUE(policy.is_policy_model());
      const int64_t n = 16;
      const std::vector<float> obs = Observations(n, 3, 3.0f);
      std::vector<float> actions(n, -99.0f);
      policy.Act(obs.data(), actions.data(), n);
      const std::vector<double> ref = ReferenceBoxActions(ReferenceOutputs(path, obs, n), box, squash);
      int clipped = 0;
      for (int64_t r = 0; r < n; ++r) {
        EXPECT_NEAR(actions[r], ref[r], 1e-5) << "row " << r << " squash " << squash << " normalize " << normalize;
        clipped += std::fabs(actions[r]) == 2.0f;
      }
      if (!squash) {
        EXPECT_GT(clipped, 0) << "no mean fell outside the Box: the clip went untested";
        EXPECT_LT(clipped, n) << "every mean outside the Box: the means went untested";
      }
    }
  }
}

TEST(GreedyPolicy, ActsOnACategoricalFileAsTheHostReferenceDoes) {
  const ScratchDir dir("cugym_policy_categorical_act");
  const auto actor = MakeActor({4, 16, 2}, 21, 1.0);
  const std::string path = (dir / "m.safetensors").string();
  SavePolicyModel(path, *actor, CategoricalInfo(true, 4));
  GreedyPolicy policy(Builtins(), path, "", 64, Device::kCpu);
  EXPECT_FALSE(policy.continuous());
  const int64_t n = 64;
  const std::vector<float> obs = Observations(n, 4, 2.5f);
  std::vector<int32_t> actions(n, -1);
  policy.Act(obs.data(), actions.data(), n);
  const std::vector<double> logits = ReferenceOutputs(path, obs, n);
  int ones = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (std::fabs(logits[2 * r + 1] - logits[2 * r]) < 1e-5) continue;  // a near tie: float may pick either
    EXPECT_EQ(actions[r], logits[2 * r + 1] > logits[2 * r] ? 1 : 0) << "row " << r;
    ones += actions[r];
  }
  EXPECT_GT(ones, 0);
  EXPECT_LT(ones, n);
}

TEST(GreedyPolicy, RefusesAPolicyFileOfTheOtherActionSpaceAndTheOtherActForm) {
  const ScratchDir dir("cugym_policy_refusals");
  const std::string gaussian = (dir / "g.safetensors").string(), categorical = (dir / "c.safetensors").string();
  SavePolicyModel(gaussian, *MakeActor({3, 8, 1}, 1, 1.0), GaussianInfo(1, false, false, 3));
  SavePolicyModel(categorical, *MakeActor({3, 8, 3}, 1, 1.0), CategoricalInfo(false, 3));
  EXPECT_EQ(ErrorOf([&] { GreedyPolicy(Builtins(), categorical, "Pendulum-v1", 4, Device::kCpu); }),
            categorical + " is a categorical policy (discrete actions), but Pendulum-v1 has Box(1,) float32 actions");
  EXPECT_EQ(ErrorOf([&] { GreedyPolicy(Builtins(), gaussian, "CartPole-v1", 4, Device::kCpu); }),
            gaussian + " is a gaussian policy (continuous actions), but CartPole-v1 has Discrete(2) actions");
  EXPECT_TRUE(Contains(ErrorOf([&] { GreedyPolicy(Builtins(), categorical, "CartPole-v1", 4, Device::kCpu); }),
                       categorical + " is a 3,8,3 actor, which does not fit CartPole-v1"));
  GreedyPolicy box(Builtins(), gaussian, "", 4, Device::kCpu);
  std::vector<float> obs(12, 0.5f), floats(4);
  std::vector<int32_t> ints(4);
  EXPECT_EQ(ErrorOf([&] { box.Act(obs.data(), ints.data(), 4); }),
            "Pendulum-v1 has Box actions: act with float actions (n x 1), not int32 ones");
  // A Q model: refused on a Box env (naming the file), and it cannot act with floats.
  const std::string q_model = (dir / "q.safetensors").string();
  nn::SaveMlp(q_model, *MakeActor({3, 8, 1}, 1, 1.0), {{"cugym.env_id", "Pendulum-v1"}});
  EXPECT_EQ(
      ErrorOf([&] { GreedyPolicy(Builtins(), q_model, "", 4, Device::kCpu); }),
      q_model + " is a Q-network model, which needs discrete actions, but Pendulum-v1 has Box(1,) float32 actions");
  nn::SaveMlp(q_model, *MakeActor({4, 8, 2}, 1, 1.0), {{"cugym.env_id", "CartPole-v1"}});
  GreedyPolicy discrete(Builtins(), q_model, "", 4, Device::kCpu);
  EXPECT_FALSE(discrete.is_policy_model());
  EXPECT_EQ(ErrorOf([&] { discrete.Act(obs.data(), floats.data(), 4); }),
            "CartPole-v1 has discrete actions: act with int32 actions, not float ones");
  // A damaged policy file.
  std::ifstream in(gaussian, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(gaussian, std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  EXPECT_TRUE(Contains(ErrorOf([&] { GreedyPolicy(Builtins(), gaussian, "", 4, Device::kCpu); }), gaussian));
}

// What EvaluateLanes plays, as a host loop: env i's first quota_i finished episodes, by step, then env.
template <class ActFn>
EvalResult HostEvaluation(const std::string& env_id, int64_t episodes, int64_t n, uint64_t seed, ActFn act) {
  std::unique_ptr<VectorEnv> env = MakeVectorEnv(Builtins(), env_id, n, Device::kCpu);
  env->Reset(seed);
  const int64_t dim = env->spec().action_dim();
  std::vector<int64_t> quota(n), count(n, 0);
  for (int64_t j = 0; j < n; ++j) quota[j] = episodes / n + (j < episodes % n ? 1 : 0);
  std::vector<double> returns, lengths;
  std::vector<float> actions(n * dim);
  while (static_cast<int64_t>(returns.size()) < episodes) {
    act(env->obs(), actions.data());
    env->Step(actions.data());
    for (int64_t i = 0; i < n; ++i) {
      if (!(env->terminated()[i] | env->truncated()[i]) || count[i] == quota[i]) continue;
      ++count[i];
      returns.push_back(env->episode_returns()[i]);
      lengths.push_back(env->episode_lengths()[i]);
    }
  }
  EvalResult r;
  r.episodes = static_cast<int64_t>(returns.size());
  r.mean_return = std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(r.episodes);
  r.min_return = *std::min_element(returns.begin(), returns.end());
  r.max_return = *std::max_element(returns.begin(), returns.end());
  r.mean_length = std::accumulate(lengths.begin(), lengths.end(), 0.0) / static_cast<double>(r.episodes);
  return r;
}

TEST(EvaluateModel, PlaysAGaussianPolicyFileOnPendulumAsAHostLoopDoes) {
  const ScratchDir dir("cugym_policy_eval_pendulum");
  const auto actor = MakeActor({3, 16, 16, 1}, 5, 4.0);
  const std::string path = (dir / "m.safetensors").string();
  SavePolicyModel(path, *actor, GaussianInfo(1, false, true, 3));
  const int64_t episodes = 100, n = 10;
  const uint64_t seed = 77;
  const EvalResult r = EvaluateModel(Builtins(), path, episodes, n, seed, Device::kCpu, 0.0);
  EXPECT_EQ(r.episodes, 100);
  EXPECT_EQ(r.env_id, "Pendulum-v1");
  EXPECT_EQ(r.mean_length, 200.0);
  // The same bits as a host loop stepping with the policy's actions.
  GreedyPolicy policy(Builtins(), path, "", n, Device::kCpu);
  const EvalResult host =
      HostEvaluation("Pendulum-v1", episodes, n, seed, [&](const float* obs, float* a) { policy.Act(obs, a, n); });
  EXPECT_EQ(r.mean_return, host.mean_return);
  EXPECT_EQ(r.min_return, host.min_return);
  EXPECT_EQ(r.max_return, host.max_return);
  // And near a host loop acting with the double reference (its actions differ in the last bits).
  const Space& box = Builtins().Get("Pendulum-v1").spec.action_space;
  const EvalResult ref = HostEvaluation("Pendulum-v1", episodes, n, seed, [&](const float* obs, float* a) {
    const std::vector<double> act =
        ReferenceBoxActions(ReferenceOutputs(path, std::vector<float>(obs, obs + 3 * n), n), box, false);
    for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(act[i]);
  });
  EXPECT_NEAR(r.mean_return, ref.mean_return, 1e-6 * std::fabs(ref.mean_return));  // 1.3e-8 seen
  EXPECT_LT(r.max_return, 0.0);                                                    // Pendulum's rewards are <= 0
  EXPECT_GT(r.min_return, -16.3 * 200);
}

TEST(EvaluateModel, EpsilonIsForDiscreteActionsOnly) {
  const ScratchDir dir("cugym_policy_eval_epsilon");
  const std::string gaussian = (dir / "g.safetensors").string(), categorical = (dir / "c.safetensors").string();
  SavePolicyModel(gaussian, *MakeActor({3, 8, 1}, 1, 1.0), GaussianInfo(1, false, false, 3));
  SavePolicyModel(categorical, *MakeActor({4, 8, 2}, 1, 1.0), CategoricalInfo(true, 4));
  EXPECT_EQ(ErrorOf([&] { EvaluateModel(Builtins(), gaussian, 2, 1, 1, Device::kCpu, 0.1); }),
            "epsilon-greedy needs discrete actions, but Pendulum-v1 has Box(1,) float32 actions: evaluate it with "
            "epsilon 0");
  // A categorical policy takes epsilon as a Q model does: random actions change its episodes.
  const EvalResult greedy = EvaluateModel(Builtins(), categorical, 12, 4, 3, Device::kCpu, 0.0);
  const EvalResult noisy = EvaluateModel(Builtins(), categorical, 12, 4, 3, Device::kCpu, 0.5);
  EXPECT_EQ(greedy.episodes, 12);
  EXPECT_EQ(noisy.episodes, 12);
  EXPECT_NE(greedy.mean_return, noisy.mean_return);
}

// On every back end: the device ops act as the CPU's (to within cuBLAS's sum order on CUDA), and
// EvaluateModel plays its episodes there.
class PolicyOnDevice : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { CUGYM_SKIP_WITHOUT_GPU(GetParam()); }
};

TEST_P(PolicyOnDevice, ActsAsOnTheCpu) {
  const Device device = GetParam();
  const ScratchDir dir(std::string("cugym_policy_device_") + DeviceName(device));
  const std::string gaussian = (dir / "g.safetensors").string(), categorical = (dir / "c.safetensors").string();
  SavePolicyModel(gaussian, *MakeActor({3, 16, 16, 1}, 11, 4.0), GaussianInfo(1, false, true, 3));
  SavePolicyModel(categorical, *MakeActor({4, 16, 2}, 21, 1.0), CategoricalInfo(true, 4));
  const int64_t n = 16;
  const std::vector<float> box_obs = Observations(n, 3, 3.0f), discrete_obs = Observations(n, 4, 2.5f);
  Buffer<float> obs(device, n * 4), floats(device, n);
  Buffer<int32_t> ints(device, n);
  std::vector<float> cpu_floats(n);
  std::vector<int32_t> cpu_ints(n);
  GreedyPolicy(Builtins(), gaussian, "", n, Device::kCpu).Act(box_obs.data(), cpu_floats.data(), n);
  GreedyPolicy(Builtins(), categorical, "", n, Device::kCpu).Act(discrete_obs.data(), cpu_ints.data(), n);
  obs.FromHost(box_obs.data(), box_obs.size());
  GreedyPolicy box(Builtins(), gaussian, "", n, device);
  box.Act(obs.data(), floats.data(), n);
  obs.FromHost(discrete_obs.data(), discrete_obs.size());
  GreedyPolicy discrete(Builtins(), categorical, "", n, device);
  discrete.Act(obs.data(), ints.data(), n);
  const std::vector<float> got_floats = floats.ToHost();
  const std::vector<int32_t> got_ints = ints.ToHost();
  const std::vector<double> logits = ReferenceOutputs(categorical, discrete_obs, n);
  for (int64_t r = 0; r < n; ++r) {
    EXPECT_NEAR(got_floats[r], cpu_floats[r], 1e-5) << "row " << r;
    if (std::fabs(logits[2 * r + 1] - logits[2 * r]) > 1e-5) {
      EXPECT_EQ(got_ints[r], cpu_ints[r]) << "row " << r;
    }
  }
  const EvalResult r = EvaluateModel(Builtins(), gaussian, 20, 10, 3, device, 0.0);
  EXPECT_EQ(r.episodes, 20);
  EXPECT_EQ(r.mean_length, 200.0);
  EXPECT_TRUE(std::isfinite(r.mean_return));
}

INSTANTIATE_TEST_SUITE_P(Devices, PolicyOnDevice, ::testing::Values(Device::kCpu, Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); });

}  // namespace
}  // namespace cugym::agent
