// Adam and gradient-norm clipping against values computed independently in float64 by
// scripts/nn_reference.py (NumPy; cross-checked there with torch.optim.Adam), on every back end.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "core/csv.h"
#include "nn/adam.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::ToDevice;

class AdamTest : public testing::DeviceTest {};

TEST_P(AdamTest, MatchesNumpyReference) {
  const CsvTable t = ReadNumericCsv(std::string(CUGYM_FIXTURES_DIR) + "/nn/adam_reference.csv");
  auto col = [&](const char* name) {
    int64_t c = t.Find(name);
    EXPECT_GE(c, 0) << name;
    return c;
  };
  const int64_t c_case = col("case"), c_step = col("step"), c_index = col("index"), c_grad = col("grad"),
                c_param = col("param"), c_m = col("exp_avg"), c_v = col("exp_avg_sq"), c_norm = col("grad_norm");
  std::map<int, std::vector<int64_t>> rows_of_case;
  for (int64_t r = 0; r < t.rows(); ++r) rows_of_case[static_cast<int>(t.at(r, c_case))].push_back(r);
  ASSERT_EQ(rows_of_case.size(), 4u);

  for (const auto& [case_id, rows] : rows_of_case) {
    const int64_t first = rows.front();
    AdamOptions o;
    o.lr = t.at(first, col("lr"));
    o.beta1 = t.at(first, col("beta1"));
    o.beta2 = t.at(first, col("beta2"));
    o.eps = t.at(first, col("eps"));
    o.max_grad_norm = t.at(first, col("max_grad_norm"));
    int n = 0, steps = 0;
    for (int64_t r : rows) {
      n = std::max(n, static_cast<int>(t.at(r, c_index)) + 1);
      steps = std::max(steps, static_cast<int>(t.at(r, c_step)));
    }
    auto values = [&](int step, int64_t c) {
      std::vector<float> out(n);
      for (int64_t r : rows) {
        if (static_cast<int>(t.at(r, c_step)) == step)
          out[static_cast<int>(t.at(r, c_index))] = static_cast<float>(t.at(r, c));
      }
      return out;
    };
    Adam adam(backend_, n, o);
    Buffer<float> params = ToDevice(device(), values(0, c_param));
    Buffer<float> grads(device(), n);
    for (int step = 1; step <= steps; ++step) {
      const std::vector<float> g = values(step, c_grad);
      grads.FromHost(g.data(), n);
      adam.Step(AsVector(params), AsVector(grads));
      const std::vector<float> p = params.ToHost(), m = ToHost(adam.exp_avg()), v = ToHost(adam.exp_avg_sq());
      const std::vector<float> p_ref = values(step, c_param), m_ref = values(step, c_m), v_ref = values(step, c_v);
      for (int i = 0; i < n; ++i) {
        SCOPED_TRACE("case " + std::to_string(case_id) + " step " + std::to_string(step) + " index " +
                     std::to_string(i));
        EXPECT_NEAR(p[i], p_ref[i], 1e-6 * std::max(1.0f, std::fabs(p_ref[i])));
        EXPECT_NEAR(m[i], m_ref[i], 1e-5 * std::fabs(m_ref[i]) + 1e-9);
        EXPECT_NEAR(v[i], v_ref[i], 1e-5 * std::fabs(v_ref[i]) + 1e-12);
      }
      EXPECT_EQ(adam.ReadStepCount(), step);
      if (o.max_grad_norm > 0) {
        const float norm_ref = values(step, c_norm)[0];
        EXPECT_NEAR(adam.ReadGradNorms()[0], norm_ref, 1e-6 * norm_ref) << "case " << case_id << " step " << step;
      }
    }
  }
}

TEST_P(AdamTest, RadamMatchesTorch) {
  // torch.optim.RAdam(lr 0.01, betas (0.9, 0.999), eps 1e-8), torch 2.15.0, float32: eight steps,
  // the first five plain momentum steps (rho_t <= 5), then rectified ones.
  AdamOptions o;
  o.lr = 0.01;
  o.rectified = true;
  const std::vector<std::vector<float>> grads = {
      {0.1f, -0.2f, 0.3f, -0.4f}, {0.2f, 0.1f, -0.3f, 0.05f}, {-0.1f, 0.4f, 0.2f, 0.3f}, {0.3f, -0.1f, 0.1f, -0.2f},
      {0.05f, 0.2f, -0.4f, 0.1f}, {-0.3f, 0.1f, 0.2f, 0.4f},  {0.1f, 0.1f, 0.1f, -0.1f}, {0.2f, -0.3f, 0.05f, 0.2f}};
  const std::vector<std::vector<float>> torch_params = {{0.499000013f, -1.24800003f, 1.99699998f, 0.00400000019f},
                                                        {0.497473687f, -1.24757898f, 1.99715793f, 0.00563157909f},
                                                        {0.496879578f, -1.24878931f, 1.99651957f, 0.00555408839f},
                                                        {0.495585889f, -1.24935687f, 1.99577606f, 0.00608069496f},
                                                        {0.494486004f, -1.2502743f, 1.99619091f, 0.00623451313f},
                                                        {0.494457126f, -1.25038815f, 1.99618125f, 0.00616637012f},
                                                        {0.494392753f, -1.25054336f, 1.99614561f, 0.00611588219f},
                                                        {0.494259268f, -1.25058913f, 1.99609411f, 0.00601156102f}};
  Adam adam(backend_, 4, o);
  Buffer<float> params = ToDevice(device(), std::vector<float>{0.5f, -1.25f, 2.0f, 0.0f}), g(device(), 4);
  for (std::size_t step = 0; step < grads.size(); ++step) {
    g.FromHost(grads[step].data(), 4);
    adam.Step(AsVector(params), AsVector(g));
    const std::vector<float> p = params.ToHost();
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(p[i], torch_params[step][i], 2e-7 * std::max(1.0f, std::fabs(torch_params[step][i])))
          << "step " << step + 1 << " index " << i;
  }
}

TEST(Radam, RectificationStartsAtStepSix) {
  // rho_1..rho_5 = 1, 2, 3, 4, 4.996 (<= 5): momentum steps; rho_6 = 5.994 (Liu et al., optax and
  // PyTorch agree).
  for (int t = 1; t <= 5; ++t) EXPECT_EQ(RadamRectification(0.999, t), 0.0) << "step " << t;
  const double rho_inf = 1999.0, rho_6 = rho_inf - 12.0 * std::pow(0.999, 6) / (1.0 - std::pow(0.999, 6));
  EXPECT_NEAR(RadamRectification(0.999, 6),
              std::sqrt((rho_6 - 4) * (rho_6 - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_6)), 1e-12);
  EXPECT_GT(RadamRectification(0.999, 6), 0.0);
  EXPECT_LT(RadamRectification(0.999, 6), RadamRectification(0.999, 1000));
  EXPECT_LT(RadamRectification(0.999, 100000), 1.0 + 1e-9);
}

TEST_P(AdamTest, ClipByNormScalesAsPyTorch) {
  // One step with eps = 1 so the update sees the gradient's scale: p -= lr * g' / (|g'| + 1), g'
  // the clipped gradient. g = (3, 4): norm 5; max_norm 1 scales it by 1 / (5 + 1e-6).
  AdamOptions o;
  o.lr = 1.0;
  o.eps = 1.0;
  o.max_grad_norm = 1.0;
  Adam adam(backend_, 2, o);
  Buffer<float> params = ToDevice(device(), std::vector<float>{0, 0}),
                grads = ToDevice(device(), std::vector<float>{3, 4});
  adam.Step(AsVector(params), AsVector(grads));
  const double coef = 1.0 / (5.0 + 1e-6);
  const std::vector<float> p = params.ToHost();
  EXPECT_NEAR(p[0], -(3 * coef) / (3 * coef + 1), 1e-6);
  EXPECT_NEAR(p[1], -(4 * coef) / (4 * coef + 1), 1e-6);
  EXPECT_NEAR(adam.ReadGradNorms()[0], 5.0f, 1e-6);
  EXPECT_EQ(grads.ToHost(), (std::vector<float>{3, 4})) << "gradients are read, not modified";

  // Below the limit nothing is scaled.
  o.max_grad_norm = 10.0;
  Adam unclipped(backend_, 2, o);
  Buffer<float> q = ToDevice(device(), std::vector<float>{0, 0});
  unclipped.Step(AsVector(q), AsVector(grads));
  EXPECT_NEAR(q.ToHost()[0], -3.0 / 4.0, 1e-6);
  EXPECT_NEAR(q.ToHost()[1], -4.0 / 5.0, 1e-6);
}

TEST_P(AdamTest, ATinyPositiveLimitClipsOnEveryBackEnd) {
  // 1e-50 is 0 as a float. The decision to clip is made once, on the double (as PyTorch, whose
  // clip coefficient 1e-50 / norm underflows to 0): the gradient is scaled to zero, so the
  // parameters stay put, on the GPU as on the CPU.
  AdamOptions o;
  o.lr = 1.0;
  o.max_grad_norm = 1e-50;
  ASSERT_TRUE(ClipsGradients(o));
  Adam adam(backend_, 2, o);
  Buffer<float> params = ToDevice(device(), std::vector<float>{1, 2}),
                grads = ToDevice(device(), std::vector<float>{3, 4});
  adam.Step(AsVector(params), AsVector(grads));
  EXPECT_EQ(params.ToHost(), (std::vector<float>{1, 2}));
  EXPECT_NEAR(adam.ReadGradNorms()[0], 5.0f, 1e-6);
}

TEST_P(AdamTest, LinearLrDecayReachesZeroAtTheLastUpdate) {
  // eps = 1 and g = 1 make every update lr_t * m_hat / (sqrt(v_hat) + 1) = lr_t / 2 exactly.
  AdamOptions o;
  o.lr = 0.4;
  o.eps = 1.0;
  o.lr_decay_updates = 4;
  EXPECT_DOUBLE_EQ(ScheduledLr(0.4, 4, 1), 0.4);
  EXPECT_DOUBLE_EQ(ScheduledLr(0.4, 4, 2), 0.3);
  EXPECT_DOUBLE_EQ(ScheduledLr(0.4, 4, 5), 0.0);
  EXPECT_DOUBLE_EQ(ScheduledLr(0.4, 4, 9), 0.0);
  EXPECT_DOUBLE_EQ(ScheduledLr(0.4, 0, 9), 0.4);
  Adam adam(backend_, 1, o);
  Buffer<float> params = ToDevice(device(), std::vector<float>{0}), grads = ToDevice(device(), std::vector<float>{1});
  float expected = 0.0f;
  for (int t = 1; t <= 6; ++t) {
    adam.Step(AsVector(params), AsVector(grads));
    expected -= static_cast<float>(ScheduledLr(0.4, 4, t) / 2);
    EXPECT_NEAR(params.ToHost()[0], expected, 1e-6) << "update " << t;
  }
  EXPECT_NEAR(expected, -0.5f, 1e-6);  // (0.4 + 0.3 + 0.2 + 0.1) / 2, then nothing more
}

TEST_P(AdamTest, MomentsThatDecayBelowTheNormalRangeBecomeZero) {
  // A parameter whose gradient stops: its first moment falls by 0.9 per step. Unflushed it would
  // stick at a few subnormal ulps (0.1 of them rounds to 0), slowing every later CPU step.
  AdamOptions o;
  o.lr = 1e-3;
  Adam adam(backend_, 2, o);
  Buffer<float> params = ToDevice(device(), std::vector<float>{1, 1}),
                grads = ToDevice(device(), std::vector<float>{1e-10f, 1.0f});
  adam.Step(AsVector(params), AsVector(grads));
  grads.FromHost(std::vector<float>{0.0f, 1.0f}.data(), 2);
  for (int t = 0; t < 1000; ++t) adam.Step(AsVector(params), AsVector(grads));
  const std::vector<float> m = ToHost(adam.exp_avg()), v = ToHost(adam.exp_avg_sq());
  EXPECT_EQ(m[0], 0.0f);
  EXPECT_GT(v[0], 0.0f) << "1e-20 * 0.999^1000 is still a normal float";
  EXPECT_FLOAT_EQ(m[1], 1.0f);
}

TEST_P(AdamTest, ResetAndBadOptions) {
  Adam adam(backend_, 3);
  Buffer<float> params = ToDevice(device(), std::vector<float>{1, 2, 3}),
                grads = ToDevice(device(), std::vector<float>{1, 1, 1});
  adam.Step(AsVector(params), AsVector(grads));
  adam.Step(AsVector(params), AsVector(grads));
  EXPECT_EQ(adam.ReadStepCount(), 2);
  adam.Reset();
  EXPECT_EQ(adam.ReadStepCount(), 0);
  EXPECT_EQ(ToHost(adam.exp_avg()), (std::vector<float>{0, 0, 0}));

  AdamOptions bad;
  bad.beta2 = 1.0;
  EXPECT_THROW(Adam(backend_, 3, bad), std::invalid_argument);
  bad = AdamOptions();
  bad.eps = 0.0;
  EXPECT_THROW(Adam(backend_, 3, bad), std::invalid_argument);
  bad = AdamOptions();
  bad.lr_decay_updates = -1;
  EXPECT_THROW(Adam(backend_, 3, bad), std::invalid_argument);
  Buffer<float> wrong(device(), 4);
  EXPECT_THROW(adam.Step(AsVector(wrong), AsVector(grads)), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Devices, AdamTest, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
