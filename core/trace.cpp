// Reference-trace replay.
#include "core/trace.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/memory.h"

namespace cugym {
namespace {

std::vector<int64_t> Columns(const CsvTable& trace, const std::string& prefix, int64_t count, const std::string& what) {
  std::vector<int64_t> cols;
  for (int64_t k = 0; k < count; ++k) {
    std::string name = prefix + std::to_string(k);
    int64_t col = trace.Find(name);
    if (col < 0)
      throw std::invalid_argument("trace has no column '" + name + "' (" + what + " has " + std::to_string(count) +
                                  " values)");
    cols.push_back(col);
  }
  if (trace.Find(prefix + std::to_string(count)) >= 0)
    throw std::invalid_argument("trace has a column '" + prefix + std::to_string(count) + "' but " + what +
                                " has only " + std::to_string(count) + " values");
  return cols;
}

int64_t Column(const CsvTable& trace, const std::string& name) {
  int64_t col = trace.Find(name);
  if (col < 0) throw std::invalid_argument("trace has no column '" + name + "'");
  return col;
}

void Compare(const CsvTable& trace, int64_t row, int64_t col, double got, TraceError* error) {
  double expected = trace.at(row, col);
  if (std::isnan(expected)) return;
  double err = std::fabs(got - expected) / std::max(1.0, std::fabs(expected));
  if (std::isnan(err)) err = INFINITY;
  if (error->line == 0 || err > error->max_error) {
    error->max_error = err;
    error->line = row + 2;
    error->column = trace.header[col];
  }
}

template <class T>
std::vector<T> ToHost(const T* device_ptr, int64_t count, Device device) {
  std::vector<T> out(count);
  CopyBytes(out.data(), Device::kCpu, device_ptr, device, count * sizeof(T));
  return out;
}

}  // namespace

ReplayReport ReplayTrace(const Registry& registry, const std::string& env_id, const CsvTable& trace, Device device) {
  const EnvSpec& spec = registry.Get(env_id).spec;
  const std::string what = env_id;
  std::vector<int64_t> state_cols = Columns(trace, "state_", spec.state_dim, what + "'s state");
  std::vector<int64_t> next_state_cols = Columns(trace, "next_state_", spec.state_dim, what + "'s state");
  std::vector<int64_t> next_obs_cols = Columns(trace, "next_obs_", spec.obs_dim(), what + "'s observation");
  const bool discrete = spec.action_space.is_discrete();
  std::vector<int64_t> action_cols = discrete ? std::vector<int64_t>{Column(trace, "action")}
                                              : Columns(trace, "action_", spec.action_dim(), what + "'s action");
  const int64_t reward_col = Column(trace, "reward");
  const int64_t terminated_col = Column(trace, "terminated");
  const int64_t rows = trace.rows();
  if (rows == 0) throw std::invalid_argument("trace has a header but no rows");

  std::vector<float> states(rows * spec.state_dim);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < spec.state_dim; ++k)
      states[r * spec.state_dim + k] = static_cast<float>(trace.at(r, state_cols[k]));
  }

  std::unique_ptr<VectorEnv> env = MakeVectorEnv(registry, env_id, rows, device);
  env->set_autoreset(false);  // keep the state each row reaches, terminal or not
  env->Reset(0);
  env->SetStates(0, rows, states);
  // The actions stay allocated until the results are read back below: the step is asynchronous
  // on the GPU.
  Buffer<int32_t> int_actions;
  Buffer<float> float_actions;
  if (discrete) {
    std::vector<int32_t> actions(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double a = trace.at(r, action_cols[0]);
      if (!(a >= 0 && a < static_cast<double>(spec.action_space.n)) || a != std::floor(a))
        throw std::invalid_argument("trace line " + std::to_string(r + 2) + ": action " + std::to_string(a) +
                                    " is not in " + spec.action_space.ToString());
      actions[r] = static_cast<int32_t>(a);
    }
    int_actions = Buffer<int32_t>(device, rows);
    int_actions.FromHost(actions.data(), rows);
    env->Step(int_actions.data());
  } else {
    const int64_t dim = spec.action_dim();
    std::vector<float> actions(rows * dim);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < dim; ++k) actions[r * dim + k] = static_cast<float>(trace.at(r, action_cols[k]));
    }
    float_actions = Buffer<float>(device, rows * dim);
    float_actions.FromHost(actions.data(), rows * dim);
    env->Step(float_actions.data());
  }

  const std::vector<float> next_states = env->GetStates(0, rows);
  const std::vector<float> obs = ToHost(env->obs(), rows * spec.obs_dim(), device);
  const std::vector<float> rewards = ToHost(env->rewards(), rows, device);
  const std::vector<uint8_t> terminated = ToHost(env->terminated(), rows, device);

  ReplayReport report;
  report.env_id = env_id;
  report.device = device;
  report.rows = rows;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < spec.state_dim; ++k)
      Compare(trace, r, next_state_cols[k], next_states[r * spec.state_dim + k], &report.next_state);
    for (int64_t k = 0; k < spec.obs_dim(); ++k)
      Compare(trace, r, next_obs_cols[k], obs[r * spec.obs_dim() + k], &report.next_obs);
    Compare(trace, r, reward_col, rewards[r], &report.reward);
    bool expected_terminated = trace.at(r, terminated_col) != 0.0;
    if (expected_terminated != (terminated[r] != 0)) {
      if (report.terminated_mismatches++ == 0) report.first_mismatch_line = r + 2;
    }
  }
  return report;
}

}  // namespace cugym
