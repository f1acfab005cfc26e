// Python bindings of the run statistics (agents/run/run_stats.h), which cugym.stats wraps: Python's
// figures are summary.json's, from the same code.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "agents/run/run_stats.h"
#include "python/src/module.h"

namespace nb = nanobind;

namespace cugym::python {
namespace {

agent::RunStatistic StatisticNamed(const std::string& name) {
  if (name == "iqm") return agent::Iqm;
  if (name == "mean") return agent::Mean;
  throw std::invalid_argument("statistic must be 'iqm' or 'mean', got '" + name + "'");
}

}  // namespace

void BindStats(nb::module_& m) {
  m.def(
      "iqm", [](std::vector<double> x) { return agent::Iqm(std::move(x)); }, nb::arg("scores"));
  m.def(
      "mean", [](std::vector<double> x) { return agent::Mean(std::move(x)); }, nb::arg("scores"));
  m.def(
      "percentile", [](std::vector<double> x, double q) { return agent::Percentile(std::move(x), q); },
      nb::arg("values"), nb::arg("q"));
  m.def(
      "bootstrap_band",
      [](const std::vector<std::vector<double>>& runs, const std::string& statistic) {
        return agent::BootstrapBand(runs, StatisticNamed(statistic));
      },
      nb::arg("runs"), nb::arg("statistic"),
      "95% percentile-bootstrap intervals of the statistic over runs[r][p], per point p: (low, high).");
}

}  // namespace cugym::python
