// Per-step conformance against a reference trace (CSV, see docs/file-formats.md): every row's
// state is set in its own env of one batch, its action applied, and the result compared.
#pragma once

#include <cstdint>
#include <string>

#include "core/csv.h"
#include "core/registry.h"

namespace cugym {

struct TraceError {
  double max_error = 0.0;  // max |got - expected| / max(1, |expected|)
  int64_t line = 0;        // CSV line of the worst entry (the header is line 1)
  std::string column;      // its column
};

struct ReplayReport {
  std::string env_id;
  Device device = Device::kCpu;
  int64_t rows = 0;
  TraceError next_state, next_obs, reward;
  int64_t terminated_mismatches = 0;
  int64_t first_mismatch_line = 0;  // 0 when none

  bool Pass(double tolerance) const {
    return next_state.max_error <= tolerance && next_obs.max_error <= tolerance && reward.max_error <= tolerance &&
           terminated_mismatches == 0;
  }
};

// Throws std::invalid_argument when the trace does not fit the env (missing or extra columns,
// an action outside the action space, no rows).
ReplayReport ReplayTrace(const Registry& registry, const std::string& env_id, const CsvTable& trace, Device device);

}  // namespace cugym
