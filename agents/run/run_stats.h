// Statistics over independent training runs (seeds), after Agarwal et al. 2021, "Deep RL at the
// Edge of the Statistical Precipice": the interquartile mean, the mean, percentile-bootstrap 95%
// intervals over runs (with one task the paper's stratified bootstrap is a plain one: resample
// the runs with replacement, recompute, take the 2.5th and 97.5th percentiles), and quartiles.
// The one implementation: summary.json (batch_summary.h), cugym.stats and cugym.report in Python
// (python/src/stats.cpp) and the benchmarks (bench/dqn_seeds.py) all compute with it.
#pragma once

#include <utility>
#include <vector>

namespace cugym::agent {

// A statistic of runs' scores: Iqm or Mean.
using RunStatistic = double (*)(std::vector<double>);

// Interquartile mean: the mean of the middle half, floor(n / 4) runs cut from each end
// (scipy.stats.trim_mean(x, 0.25), which rliable uses). NaN for no runs.
double Iqm(std::vector<double> x);
double Mean(std::vector<double> x);
// The q-th percentile (0 <= q <= 100) of x, interpolated linearly as numpy.percentile's default.
// NaN for an empty x.
double Percentile(std::vector<double> x, double q);

// 95% percentile-bootstrap intervals of `statistic` over runs, one per point of a learning curve:
// runs[r][p] is run r's score at point p (every run of the same length); each of the 2,000
// resamples draws runs (one generator, seed 0) and takes the statistic at every point of the same
// drawn runs. Returns {low, high}, each of one value per point. Throws std::invalid_argument for
// no runs or runs of different lengths.
std::pair<std::vector<double>, std::vector<double>> BootstrapBand(const std::vector<std::vector<double>>& runs,
                                                                  RunStatistic statistic);
// The interval of one score per run (a curve of one point).
std::pair<double, double> Bootstrap(const std::vector<double>& x, RunStatistic statistic);

}  // namespace cugym::agent
