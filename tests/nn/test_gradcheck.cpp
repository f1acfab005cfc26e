// Finite-difference gradient checks: the fp32 backward passes of Linear, ReLU, tanh, the MLP (ReLU
// and tanh), MSE, Huber and gather against central differences of an independent float64
// reference forward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "nn/backend.h"
#include "nn/layers.h"
#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::ExpectGradientsNear;
using testing::MaxRelError;
using testing::NumericGradient;
using testing::RandomActions;
using testing::RandomFloats;
using testing::ToDevice;
using testing::ToDouble;

double ActivateRef(Activation act, double z) {
  return act == Activation::kRelu ? std::max(z, 0.0) : act == Activation::kTanh ? std::tanh(z) : z;
}

// Reference Linear (+ReLU or tanh) in float64: y = act(x W^T + b), row-major everything.
std::vector<double> LinearRef(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                              int n, int in, int out, Activation act) {
  std::vector<double> y(static_cast<std::size_t>(n) * out);
  for (int r = 0; r < n; ++r) {
    for (int o = 0; o < out; ++o) {
      double z = b[o];
      for (int i = 0; i < in; ++i) z += x[r * in + i] * w[o * in + i];
      y[r * out + o] = ActivateRef(act, z);
    }
  }
  return y;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

class GradCheck : public testing::DeviceTest {};

// L = sum(r * act(Linear(x))), for Linear alone, + ReLU and + tanh; checks y, dW, db, dx.
void CheckLinear(Backend& backend, Device device, Activation act) {
  const int n = 5, in = 4, out = 3;
  const std::vector<float> x = RandomFloats(n * in, 1);
  const std::vector<float> w = RandomFloats(out * in, 2);
  std::vector<float> b = RandomFloats(out, 3, -0.3f, 0.3f);
  const std::vector<float> r = RandomFloats(n * out, 4);
  // Keep every pre-activation away from ReLU's kink, so the differences see one side of it.
  const std::vector<double> z = LinearRef(ToDouble(x), ToDouble(w), ToDouble(b), n, in, out, Activation::kNone);
  for (double v : z) ASSERT_GT(std::fabs(v), 1e-3) << "pick other seeds";

  Buffer<float> xd = ToDevice(device, x), wd = ToDevice(device, w), bd = ToDevice(device, b);
  Buffer<float> yd(device, n * out), dyd = ToDevice(device, r), dxd(device, n * in), dwd(device, out * in),
                                     dbd(device, out);
  LinearParams params{ConstWeightView(wd.data(), out, in, device), VectorView<const float>(bd.data(), out, device)};
  LinearForward(backend, params, ConstBatchView(xd.data(), n, in, device), BatchView(yd.data(), n, out, device), act);
  LinearBackward(backend, params, ConstBatchView(xd.data(), n, in, device), ConstBatchView(yd.data(), n, out, device),
                 BatchView(dyd.data(), n, out, device), act,
                 LinearGrads{WeightView(dwd.data(), out, in, device), VectorView<float>(dbd.data(), out, device)},
                 BatchView(dxd.data(), n, in, device));

  // The forward output itself.
  const std::vector<double> y_ref = LinearRef(ToDouble(x), ToDouble(w), ToDouble(b), n, in, out, act);
  ExpectGradientsNear(yd.ToHost(), y_ref, "y");

  const std::vector<double> rd = ToDouble(r);
  auto loss_w = [&](const std::vector<double>& wv) {
    return Dot(rd, LinearRef(ToDouble(x), wv, ToDouble(b), n, in, out, act));
  };
  auto loss_b = [&](const std::vector<double>& bv) {
    return Dot(rd, LinearRef(ToDouble(x), ToDouble(w), bv, n, in, out, act));
  };
  auto loss_x = [&](const std::vector<double>& xv) {
    return Dot(rd, LinearRef(xv, ToDouble(w), ToDouble(b), n, in, out, act));
  };
  ExpectGradientsNear(dwd.ToHost(), NumericGradient(loss_w, ToDouble(w)), "dW");
  ExpectGradientsNear(dbd.ToHost(), NumericGradient(loss_b, ToDouble(b)), "db");
  ExpectGradientsNear(dxd.ToHost(), NumericGradient(loss_x, ToDouble(x)), "dx");
}

TEST_P(GradCheck, Linear) { CheckLinear(*backend_, device(), Activation::kNone); }

TEST_P(GradCheck, LinearRelu) { CheckLinear(*backend_, device(), Activation::kRelu); }

TEST_P(GradCheck, LinearTanh) { CheckLinear(*backend_, device(), Activation::kTanh); }

TEST_P(GradCheck, ReluBackwardMasksAndSumsBias) {
  // ActivationBackward alone: dz = dy * [y > 0], db = column sums; y = 0 counts as inactive.
  const std::vector<float> y = {0.5f, 0.0f, -0.0f, 2.0f, 0.0f, 1.0f};
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6};
  Buffer<float> yd = ToDevice(device(), y), dyd = ToDevice(device(), dy), db(device(), 3);
  backend_->ActivationBackward(BatchView(dyd.data(), 2, 3, device()), ConstBatchView(yd.data(), 2, 3, device()),
                               AsVector(db), Activation::kRelu);
  EXPECT_EQ(dyd.ToHost(), (std::vector<float>{1, 0, 0, 4, 0, 6}));
  EXPECT_EQ(db.ToHost(), (std::vector<float>{5, 0, 6}));
}

// Reference MLP forward in float64 over the flat parameter vector of an Mlp (its hidden activation).
std::vector<double> MlpRef(const Mlp& net, const std::vector<double>& params, const std::vector<double>& x, int n) {
  std::vector<double> a = x;
  const std::vector<int>& s = net.layer_sizes();
  for (int l = 0; l < net.num_layers(); ++l) {
    std::vector<double> w(params.begin() + net.weight_offset(l),
                          params.begin() + net.weight_offset(l) + s[l + 1] * s[l]);
    std::vector<double> b(params.begin() + net.bias_offset(l), params.begin() + net.bias_offset(l) + s[l + 1]);
    a = LinearRef(a, w, b, n, s[l], s[l + 1], l + 1 < net.num_layers() ? net.activation() : Activation::kNone);
  }
  return a;
}

// A 3-6-5-2 MLP built with `options`: its output against the float64 reference, every parameter's
// gradient against finite differences of it, and the padding's gradient zero.
void CheckMlp(const std::shared_ptr<Backend>& backend, Device device, const MlpOptions& options) {
  const int n = 4;
  Mlp net(backend, {3, 6, 5, 2}, options);
  const std::vector<float> x = RandomFloats(n * 3, 5, -2.0f, 2.0f);
  const std::vector<float> r = RandomFloats(n * 2, 6);
  Buffer<float> xd = ToDevice(device, x), rd = ToDevice(device, r);

  ConstBatchView y = net.ForwardTrain(ConstBatchView(xd.data(), n, 3, device));
  const std::vector<double> params = ToDouble(ToHost(net.parameters()));
  const std::vector<double> y_ref = MlpRef(net, params, ToDouble(x), n);
  ExpectGradientsNear(ToHost(y), y_ref, "output");
  // fp32 against float64 through three layers: a few float roundings of the outputs' scale.
  EXPECT_LT(MaxRelError(ToHost(y), std::vector<float>(y_ref.begin(), y_ref.end())), 1e-5) << "output";
  net.Backward(BatchView(rd.data(), n, 2, device));
  const std::vector<float> analytic = ToHost(net.gradients());

  // Every hidden pre-activation must sit away from ReLU's kink for the differences to be clean.
  const std::vector<double> rv = ToDouble(r);
  auto loss = [&](const std::vector<double>& p) { return Dot(rv, MlpRef(net, p, ToDouble(x), n)); };
  ExpectGradientsNear(analytic, NumericGradient(loss, params), "MLP parameters");
  // The padding between tensors (the flat buffer is larger than the parameter count) stays zero.
  ASSERT_GT(static_cast<int64_t>(analytic.size()), net.num_parameters());
  std::vector<bool> used(analytic.size(), false);
  const std::vector<int>& s = net.layer_sizes();
  for (int l = 0; l < net.num_layers(); ++l) {
    for (int64_t i = 0; i < s[l + 1] * s[l]; ++i) used[net.weight_offset(l) + i] = true;
    for (int64_t i = 0; i < s[l + 1]; ++i) used[net.bias_offset(l) + i] = true;
  }
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    if (!used[i]) {
      EXPECT_EQ(analytic[i], 0.0f) << "padding element " << i;
    }
  }
}

TEST_P(GradCheck, Mlp) {
  MlpOptions options;
  options.max_batch = 8;
  options.seed = 11;
  CheckMlp(backend_, device(), options);
}

// PPO's network (CleanRL's ppo.py): tanh hidden layers, orthogonal weights. The output gain is 1
// here, not the actor's 0.01, so the last layer's input gradients are not all tiny.
TEST_P(GradCheck, TanhMlp) {
  MlpOptions options;
  options.max_batch = 8;
  options.seed = 11;
  options.activation = Activation::kTanh;
  options.init = MlpInit::kOrthogonal;
  CheckMlp(backend_, device(), options);
}

// BiasActivation's tanh against float64's: within float rounding (both libraries' tanhf are within
// 2 ulp), exactly 0 at 0, saturated at +-1, odd, and NaN stays NaN.
TEST_P(GradCheck, TanhForwardIsTanhWithinRounding) {
  std::vector<float> z = {0.0f, -0.0f, 1e-30f, -1e-7f, 1e-3f, 0.25f, -0.5f,
                          0.9f, 1.0f,  -2.0f,  3.5f,   -9.0f, 20.0f, -100.0f};
  const std::vector<float> more = RandomFloats(64, 31, -6.0f, 6.0f);
  z.insert(z.end(), more.begin(), more.end());
  z.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t f = static_cast<int64_t>(z.size());
  Buffer<float> y = ToDevice(device(), z), bias = ToDevice(device(), std::vector<float>(f, 0.0f));
  backend_->BiasActivation(BatchView(y.data(), 1, f, device()), AsVector(bias), Activation::kTanh);
  const std::vector<float> got = y.ToHost();
  for (int64_t j = 0; j + 1 < f; ++j) {
    const double want = std::tanh(static_cast<double>(z[j]));
    EXPECT_NEAR(got[j], want, 3e-7 * std::fabs(want)) << "tanh(" << z[j] << ")";
    EXPECT_LE(std::fabs(got[j]), 1.0f);
  }
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[12], 1.0f);
  EXPECT_EQ(got[13], -1.0f);
  EXPECT_TRUE(std::isnan(got[f - 1])) << "a NaN pre-activation must stay NaN";

  // With a bias (per column), on a batch of rows: tanh(z + b).
  const int64_t n = 3, k = 5;
  const std::vector<float> zs = RandomFloats(n * k, 32, -3.0f, 3.0f), b = RandomFloats(k, 33);
  Buffer<float> ys = ToDevice(device(), zs), bs = ToDevice(device(), b);
  backend_->BiasActivation(BatchView(ys.data(), n, k, device()), AsVector(bs), Activation::kTanh);
  const std::vector<float> out = ys.ToHost();
  for (int64_t i = 0; i < n * k; ++i) {
    const double want = std::tanh(static_cast<double>(zs[i] + b[i % k]));
    EXPECT_NEAR(out[i], want, 3e-7 * std::fabs(want) + 1e-12) << i;
  }
}

TEST_P(GradCheck, TanhBackwardScalesByOneMinusYSquaredAndSumsBias) {
  // ActivationBackward alone: dz = dy * (1 - y^2) from the output y, db = column sums.
  const std::vector<float> y = {0.5f, 0.0f, -0.9f, 1.0f, -0.25f, 0.99f};
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6};
  Buffer<float> yd = ToDevice(device(), y), dyd = ToDevice(device(), dy), db(device(), 3);
  backend_->ActivationBackward(BatchView(dyd.data(), 2, 3, device()), ConstBatchView(yd.data(), 2, 3, device()),
                               AsVector(db), Activation::kTanh);
  const std::vector<float> dz = dyd.ToHost(), sums = db.ToHost();
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(dz[i], dy[i] * (1.0 - static_cast<double>(y[i]) * y[i]), 1e-6) << i;
  }
  EXPECT_EQ(dz[1], 2.0f) << "the slope at 0 is 1";
  EXPECT_EQ(dz[3], 0.0f) << "saturated: no gradient";
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(sums[j], dz[j] + dz[3 + j], 1e-6) << j;
}

TEST(HiddenActivation, ReluOrTanhOnly) {
  EXPECT_STREQ(ActivationName(Activation::kTanh), "tanh");
  EXPECT_STREQ(ActivationName(Activation::kRelu), "relu");
  EXPECT_EQ(ParseHiddenActivation("tanh"), Activation::kTanh);
  EXPECT_EQ(ParseHiddenActivation("relu"), Activation::kRelu);
  for (const char* bad : {"none", "gelu", "Tanh", ""}) {
    try {
      ParseHiddenActivation(bad);
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "unknown activation '" + std::string(bad) + "' (expected relu or tanh)");
    }
  }
  MlpOptions options;
  options.activation = Activation::kNone;
  try {
    Mlp(MakeBackend(Device::kCpu), {3, 4, 2}, options);
    FAIL() << "a network without a hidden activation";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "Mlp: hidden activation none (expected relu or tanh)");
  }
  // A tanh network and a ReLU one are different networks: no parameter copies between them.
  MlpOptions tanh_options;
  tanh_options.activation = Activation::kTanh;
  Mlp relu_net(MakeBackend(Device::kCpu), {3, 4, 2}), tanh_net(relu_net.shared_backend(), {3, 4, 2}, tanh_options);
  EXPECT_THROW(tanh_net.CopyParametersFrom(relu_net), std::invalid_argument);
}

// Loss reference: mean over rows of L(q[r, a_r] - t_r).
double LossRef(LossKind kind, const std::vector<double>& q, const std::vector<int32_t>& a, const std::vector<double>& t,
               int n, int k) {
  double s = 0;
  for (int r = 0; r < n; ++r) {
    const double d = q[r * k + (a.empty() ? 0 : a[r])] - t[r];
    s += kind == LossKind::kMse ? d * d : (std::fabs(d) < 1 ? 0.5 * d * d : std::fabs(d) - 0.5);
  }
  return s / n;
}

void CheckLoss(Backend& backend, Device device, LossKind kind, int k, bool with_actions) {
  const int n = 7;
  const std::vector<float> q = RandomFloats(n * k, 21, -2.0f, 2.0f);
  const std::vector<int32_t> a = with_actions ? RandomActions(n, k, 22) : std::vector<int32_t>();
  const std::vector<float> t = RandomFloats(n, 23, -2.0f, 2.0f);
  // Residuals on both sides of Huber's |d| = 1, none on a kink.
  int small = 0, large = 0;
  for (int r = 0; r < n; ++r) {
    const double d = q[r * k + (a.empty() ? 0 : a[r])] - t[r];
    ASSERT_GT(std::fabs(std::fabs(d) - 1.0), 1e-3);
    (std::fabs(d) < 1 ? small : large)++;
  }
  ASSERT_GT(small, 0);
  ASSERT_GT(large, 0);

  Buffer<float> qd = ToDevice(device, q), td = ToDevice(device, t), dq(device, n * k), db(device, k), stats(device, 2);
  Buffer<int32_t> ad = ToDevice(device, a);
  backend.GatherLoss(kind, ConstBatchView(qd.data(), n, k, device), AsVector(ad), AsVector(td),
                     BatchView(dq.data(), n, k, device), AsVector(db), AsVector(stats));
  const std::vector<double> qv = ToDouble(q), tv = ToDouble(t);
  const std::vector<float> s = stats.ToHost();
  EXPECT_NEAR(s[0], LossRef(kind, qv, a, tv, n, k), 1e-5);
  double mean_q = 0;
  for (int r = 0; r < n; ++r) mean_q += q[r * k + (a.empty() ? 0 : a[r])];
  EXPECT_NEAR(s[1], mean_q / n, 1e-6);

  auto loss = [&](const std::vector<double>& qq) { return LossRef(kind, qq, a, tv, n, k); };
  const std::vector<double> numeric = NumericGradient(loss, qv);
  const std::vector<float> analytic = dq.ToHost();
  ExpectGradientsNear(analytic, numeric, "dq");
  // The fused bias gradient: column sums of dq.
  std::vector<double> col(k, 0.0);
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < k; ++j) col[j] += numeric[r * k + j];
  }
  ExpectGradientsNear(db.ToHost(), col, "dbias");
}

TEST_P(GradCheck, MseWithGather) { CheckLoss(*backend_, device(), LossKind::kMse, 3, true); }
TEST_P(GradCheck, HuberWithGather) { CheckLoss(*backend_, device(), LossKind::kHuber, 3, true); }
TEST_P(GradCheck, MseRegression) { CheckLoss(*backend_, device(), LossKind::kMse, 1, false); }
TEST_P(GradCheck, HuberRegression) { CheckLoss(*backend_, device(), LossKind::kHuber, 1, false); }

TEST_P(GradCheck, LossMatchesPyTorchValues) {
  // torch.nn.functional.mse_loss / smooth_l1_loss(beta=1) of [0.5, 3, -2] against [0, 0, 0]:
  // MSE (0.25 + 9 + 4) / 3; Huber (0.125 + 2.5 + 1.5) / 3.
  const std::vector<float> q = {0.5f, 3.0f, -2.0f}, t = {0, 0, 0};
  Buffer<float> qd = ToDevice(device(), q), td = ToDevice(device(), t), dq(device(), 3), stats(device(), 2);
  for (LossKind kind : {LossKind::kMse, LossKind::kHuber}) {
    backend_->GatherLoss(kind, ConstBatchView(qd.data(), 3, 1, device()), VectorView<const int32_t>(), AsVector(td),
                         BatchView(dq.data(), 3, 1, device()), VectorView<float>(), AsVector(stats));
    const float expected = kind == LossKind::kMse ? 13.25f / 3 : 4.125f / 3;
    EXPECT_FLOAT_EQ(stats.ToHost()[0], expected) << LossName(kind);
    const std::vector<float> g = dq.ToHost();
    if (kind == LossKind::kHuber) {
      EXPECT_FLOAT_EQ(g[0], 0.5f / 3);
      EXPECT_FLOAT_EQ(g[1], 1.0f / 3);
      EXPECT_FLOAT_EQ(g[2], -1.0f / 3);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GradCheck, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
