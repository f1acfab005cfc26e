// Statistics over runs (agents/run/run_stats.h): the figures summary.json, cugym.stats and the
// benchmarks report.
#include "agents/run/run_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace cugym::agent {
namespace {

TEST(RunStats, IqmIsTheMeanOfTheMiddleHalf) {
  EXPECT_EQ(Iqm({8, 1, 7, 2, 6, 3, 5, 4}), 4.5);  // mean of 3, 4, 5, 6
  EXPECT_EQ(Iqm({1, 2, 3, 4, 100}), 3.0);         // cuts floor(5 / 4) = 1 at each end
  EXPECT_EQ(Iqm({7, 9, 8}), 8.0);                 // fewer than 4 runs: nothing cut
  std::vector<double> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[i] = i;
  EXPECT_DOUBLE_EQ(Iqm(hundred), 49.5);
  EXPECT_TRUE(std::isnan(Iqm({})));
  EXPECT_TRUE(std::isnan(Mean({})));
}

TEST(RunStats, PercentilesInterpolateAsNumpy) {
  // numpy.percentile([5, 1, 3, 2, 4], [0, 25, 50, 75, 100]) = [1, 2, 3, 4, 5];
  // numpy.percentile([1, 2, 3, 4], [50, 10]) = [2.5, 1.3].
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 0), 1.0);
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 25), 2.0);
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 50), 3.0);
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 100), 5.0);
  EXPECT_EQ(Percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 10), 1.3);
  EXPECT_TRUE(std::isnan(Percentile({}, 50)));
  EXPECT_THROW(Percentile({1.0}, 101), std::invalid_argument);
}

TEST(RunStats, TheBootstrapOfAConstantIsTheConstant) {
  EXPECT_EQ(Bootstrap(std::vector<double>(10, 5.0), Iqm), std::make_pair(5.0, 5.0));
}

TEST(RunStats, TheBootstrapOfACoinsMeanIsItsNormalInterval) {
  // 100 zeros and 100 ones: the mean's standard error is 0.5 / sqrt(200) = 0.0354, so the 95%
  // interval is close to 0.5 +- 1.96 * 0.0354 = [0.431, 0.569].
  std::vector<double> coin(200, 0.0);
  for (int i = 100; i < 200; ++i) coin[i] = 1.0;
  const auto [low, high] = Bootstrap(coin, Mean);
  EXPECT_NEAR(low, 0.431, 0.012);
  EXPECT_NEAR(high, 0.569, 0.012);
  EXPECT_EQ(Bootstrap(coin, Mean), std::make_pair(low, high));  // one fixed generator: it repeats
}

TEST(RunStats, TheBandDrawsTheSameRunsAtEveryPoint) {
  // Point 1 is point 0 plus 10 in every run: the same drawn runs at both points shift the bounds
  // by exactly 10; a point of one value is that value.
  const std::vector<std::vector<double>> runs = {{0, 10, 7}, {3, 13, 7}, {1, 11, 7}, {9, 19, 7}, {4, 14, 7}};
  const auto [low, high] = BootstrapBand(runs, Iqm);
  ASSERT_EQ(low.size(), 3u);
  EXPECT_DOUBLE_EQ(low[1], low[0] + 10);
  EXPECT_DOUBLE_EQ(high[1], high[0] + 10);
  EXPECT_LT(low[0], high[0]);
  EXPECT_TRUE(low[0] >= 0 && high[0] <= 9);
  EXPECT_EQ(low[2], 7.0);
  EXPECT_EQ(high[2], 7.0);
  // The first point's interval is Bootstrap's of that point alone.
  EXPECT_EQ(Bootstrap({0, 3, 1, 9, 4}, Iqm), std::make_pair(low[0], high[0]));
  EXPECT_THROW(BootstrapBand({}, Iqm), std::invalid_argument);
  EXPECT_THROW(BootstrapBand({{1, 2}, {3}}, Mean), std::invalid_argument);
}

}  // namespace
}  // namespace cugym::agent
