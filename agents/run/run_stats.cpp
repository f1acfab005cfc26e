// Statistics over runs (run_stats.h).
#include "agents/run/run_stats.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace cugym::agent {
namespace {

constexpr int kResamples = 2000;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy.percentile's linear interpolation on sorted x.
double SortedPercentile(const std::vector<double>& x, double q) {
  const double pos = q / 100.0 * static_cast<double>(x.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (pos - static_cast<double>(lo)) * (x[hi] - x[lo]);
}

}  // namespace

double Iqm(std::vector<double> x) {
  if (x.empty()) return kNaN;
  std::sort(x.begin(), x.end());
  const std::size_t cut = x.size() / 4;
  return std::accumulate(x.begin() + cut, x.end() - cut, 0.0) / static_cast<double>(x.size() - 2 * cut);
}

double Mean(std::vector<double> x) {
  return x.empty() ? kNaN : std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double Percentile(std::vector<double> x, double q) {
  if (x.empty()) return kNaN;
  if (!(q >= 0 && q <= 100)) throw std::invalid_argument("percentile must be in [0, 100], got " + std::to_string(q));
  std::sort(x.begin(), x.end());
  return SortedPercentile(x, q);
}

std::pair<std::vector<double>, std::vector<double>> BootstrapBand(const std::vector<std::vector<double>>& runs,
                                                                  RunStatistic statistic) {
  if (runs.empty()) throw std::invalid_argument("a bootstrap needs at least one run");
  const std::size_t points = runs[0].size();
  for (const std::vector<double>& run : runs)
    if (run.size() != points)
      throw std::invalid_argument("a bootstrap needs runs of one length, got " + std::to_string(points) + " and " +
                                  std::to_string(run.size()) + " points");
  std::mt19937_64 rng(0);
  std::uniform_int_distribution<std::size_t> pick(0, runs.size() - 1);
  std::vector<std::vector<double>> stats(points, std::vector<double>(kResamples));  // [point][resample]
  std::vector<std::size_t> drawn(runs.size());
  std::vector<double> sample(runs.size());
  for (int s = 0; s < kResamples; ++s) {
    for (std::size_t& r : drawn) r = pick(rng);
    for (std::size_t p = 0; p < points; ++p) {
      for (std::size_t i = 0; i < drawn.size(); ++i) sample[i] = runs[drawn[i]][p];
      stats[p][s] = statistic(sample);
    }
  }
  std::vector<double> low(points), high(points);
  for (std::size_t p = 0; p < points; ++p) {
    std::sort(stats[p].begin(), stats[p].end());
    low[p] = SortedPercentile(stats[p], 2.5);
    high[p] = SortedPercentile(stats[p], 97.5);
  }
  return {low, high};
}

std::pair<double, double> Bootstrap(const std::vector<double>& x, RunStatistic statistic) {
  std::vector<std::vector<double>> runs;
  runs.reserve(x.size());
  for (double v : x) runs.push_back({v});
  const auto [low, high] = BootstrapBand(runs, statistic);
  return {low[0], high[0]};
}

}  // namespace cugym::agent
