// Python bindings of training and trained models: cugym.train() runs agents/run/trainer.h's
// RunTraining, the same run as `cugym train`, with Ctrl-C checked through Python's signal
// machinery; cugym.load_policy() wraps GreedyPolicy.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <sstream>
#include <streambuf>
#include <string>
#include <utility>

#include "agents/common/policy.h"
#include "agents/common/train_config.h"
#include "agents/run/config_source.h"
#include "agents/run/multi_run.h"
#include "agents/run/trainer.h"
#include "core/memory.h"
#include "python/src/actions.h"
#include "python/src/module.h"

namespace nb = nanobind;

namespace cugym::python {
namespace {

TomlValue ToToml(nb::handle value, const std::string& key) {
  TomlValue v;
  if (nb::isinstance<nb::bool_>(value)) {
    v = TomlValue::Bool(nb::cast<bool>(value));
  } else if (nb::isinstance<nb::int_>(value)) {
    v = TomlValue::Integer(nb::cast<int64_t>(value));
  } else if (nb::isinstance<nb::float_>(value)) {
    v = TomlValue::Float(nb::cast<double>(value));
  } else if (nb::isinstance<nb::str>(value)) {
    return TomlValue::String(nb::cast<std::string>(value));
  } else if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    std::vector<TomlValue> items;
    for (nb::handle item : value) items.push_back(ToToml(item, key));
    v = TomlValue::Array(std::move(items));
  } else {
    throw nb::type_error(("config key '" + key + "': expected a bool, int, float, str or list, got " +
                          nb::cast<std::string>(nb::str(value.type())))
                             .c_str());
  }
  v.text = v.ToToml();
  return v;
}

TomlTable ToTable(nb::dict dict) {
  TomlTable table;
  for (auto [key, value] : dict) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    table[name] = ToToml(value, name);
  }
  return table;
}

// Hands each complete line written to it to a Python callable (under the GIL).
class LineSink : public std::stringbuf {
 public:
  explicit LineSink(nb::object write) : write_(std::move(write)) {}
  int sync() override {
    std::string text = str();
    str("");
    if (!text.empty()) {
      nb::gil_scoped_acquire gil;
      write_(text);
    }
    return 0;
  }

 private:
  nb::object write_;
};

// A training loop's stop(), called with the GIL released: Ctrl-C (Python's handler only sets a
// flag while C++ runs) stops the run with a checkpoint; any other pending exception, or an error a
// callback raised (python_error), stops it too and is re-raised after it returns.
bool StopAsked(bool& python_error) {
  nb::gil_scoped_acquire gil;
  if (python_error) return true;
  if (PyErr_CheckSignals() == 0) return false;
  if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
    PyErr_Clear();
  } else {
    python_error = true;
  }
  return true;
}

nb::dict ProgressDict(const agent::MetricsRow& p, int64_t total_steps) {
  nb::dict d;
  d["global_step"] = p.global_step;
  d["wall_time"] = p.wall_time;
  d["episodic_return"] = p.episodic_return;
  d["episodic_length"] = p.episodic_length;
  d["sps"] = p.sps;
  d["mean_return_100"] = p.mean_return_100;
  d["episodes"] = p.episodes;
  d["eval_return"] = p.eval_return;
  for (const auto& [key, value] : p.scalars) d[key.c_str()] = value;  // the algorithm's own columns
  d["total_steps"] = total_steps;
  d["line"] = agent::ProgressLine(p, total_steps);
  return d;
}

nb::dict EvalDict(const agent::TrainEvaluation& e) {
  nb::dict d;
  d["global_step"] = e.global_step;
  d["wall_time"] = e.wall_time;
  d["eval_seconds"] = e.eval_seconds;
  d["mean_return"] = e.result.mean_return;
  d["std_return"] = e.result.std_return;
  d["min_return"] = e.result.min_return;
  d["max_return"] = e.result.max_return;
  d["episodes"] = e.result.episodes;
  return d;
}

// The run as `cugym train` makes it. `on_log(dict)` gets every metrics row, `on_eval(dict)` every
// evaluation during training (a true result stops the run with a checkpoint), `write(str)` the
// notes cugym train prints on stderr. Returns the run's summary.
nb::dict Train(const std::string& resume_dir, const std::string& config_path, nb::object table,
               const std::string& env_id, nb::dict overrides, const std::string& out, const std::string& device,
               nb::object on_log, nb::object on_eval, nb::object write) {
  agent::TrainConfigSource source;
  source.resume_dir = resume_dir;
  source.config_path = config_path;
  if (!table.is_none()) source.table = ToTable(nb::cast<nb::dict>(table));
  source.env_id = env_id;
  source.overrides = ToTable(overrides);
  LineSink sink(write);
  std::ostream notes(&sink);
  const agent::TrainConfig config = agent::ResolveTrainConfig(GlobalRegistry(), source, notes);
  notes.flush();
  agent::TrainRunOptions options;
  options.resume = !resume_dir.empty();
  options.run_dir = options.resume ? resume_dir : out;
  options.device = ResolveDevice(device);

  bool python_error = false;
  agent::TrainRunResult run;
  {
    nb::gil_scoped_release release;
    options.on_log = [&](const agent::MetricsRow& p) {
      nb::gil_scoped_acquire gil;
      if (!on_log.is_none() && !python_error) {
        try {
          on_log(ProgressDict(p, config.total_steps));
        } catch (nb::python_error& e) {
          e.restore();
          python_error = true;  // stop at the next poll and re-raise
        }
      }
    };
    if (!on_eval.is_none()) {
      options.on_eval = [&](const agent::TrainEvaluation& e) {
        nb::gil_scoped_acquire gil;
        if (python_error) return true;
        try {
          return nb::cast<bool>(nb::bool_(on_eval(EvalDict(e))));
        } catch (nb::python_error& error) {
          error.restore();
          python_error = true;  // stop and re-raise
          return true;
        }
      };
    }
    run = agent::RunTraining(
        GlobalRegistry(), config, options, [&] { return StopAsked(python_error); }, notes);
    notes.flush();
  }
  if (python_error) throw nb::python_error();
  nb::dict summary;
  summary["run_dir"] = run.run_dir;
  summary["env_id"] = config.env_id;
  summary["global_step"] = run.global_step;
  summary["interrupted"] = run.interrupted;
  summary["resumed"] = run.resumed;
  summary["checkpoint"] = run.checkpoint;
  summary["model"] = run.model.empty() ? nb::none() : nb::cast(run.model);
  summary["metrics"] = run.run_dir + "/metrics.csv";
  summary["config"] = run.run_dir + "/config.toml";
  if (run.evaluated) {
    nb::dict eval;
    eval["episodes"] = run.eval.episodes;
    eval["mean_return"] = run.eval.mean_return;
    eval["std_return"] = run.eval.std_return;
    eval["min_return"] = run.eval.min_return;
    eval["max_return"] = run.eval.max_return;
    eval["mean_length"] = run.eval.mean_length;
    summary["eval"] = eval;
  } else {
    summary["eval"] = nb::none();
  }
  // The evaluations during training: the best (best.safetensors) and when the threshold came.
  summary["best_model"] = run.best_step >= 0 ? nb::cast(run.run_dir + "/best.safetensors") : nb::none();
  summary["best_step"] = run.best_step >= 0 ? nb::cast(run.best_step) : nb::none();
  summary["best_mean_return"] = run.best_step >= 0 ? nb::cast(run.best.mean_return) : nb::none();
  summary["threshold_step"] = run.threshold_step >= 0 ? nb::cast(run.threshold_step) : nb::none();
  summary["threshold_seconds"] = run.threshold_step >= 0 ? nb::cast(run.threshold_seconds) : nb::none();
  return summary;
}

// Many runs in one process (agents/run/multi_run.h): seeds x the grid of `sweep` (a list of (key,
// [values])). Returns batch_dir, interrupted, and the summary files' paths.
nb::dict TrainMany(const std::string& resume_dir, const std::string& config_path, nb::object table,
                   const std::string& env_id, nb::dict overrides, std::vector<uint64_t> seeds, nb::list sweep,
                   const std::string& out, const std::string& device, int jobs, nb::object lockstep,
                   nb::object on_progress, nb::object write) {
  agent::TrainConfigSource source;
  source.config_path = config_path;
  if (!table.is_none()) source.table = ToTable(nb::cast<nb::dict>(table));
  source.env_id = env_id;
  source.overrides = ToTable(overrides);
  std::vector<agent::SweepAxis> axes;
  for (nb::handle item : sweep) {
    nb::tuple pair = nb::cast<nb::tuple>(item);
    const std::string key = nb::cast<std::string>(pair[0]);
    std::string text = key + "=";
    bool first = true;
    for (nb::handle value : pair[1]) {
      // Numbers as Python writes them (0.98, not 0.97999999999999998): they name the folders.
      const bool number =
          (nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value)) && !nb::isinstance<nb::bool_>(value);
      text += (first ? "" : ",") + (number ? nb::cast<std::string>(nb::repr(value)) : ToToml(value, key).ToToml());
      first = false;
    }
    axes.push_back(agent::ParseSweep(text));  // the same checks as --sweep
  }
  agent::MultiRunOptions options;
  options.resume = !resume_dir.empty();
  options.out_dir = options.resume ? resume_dir : out;
  options.device = ResolveDevice(device);
  options.jobs = jobs;
  if (!lockstep.is_none()) options.lockstep = nb::cast<bool>(lockstep);
  LineSink sink(write);
  std::ostream notes(&sink);
  bool python_error = false;
  agent::MultiRunResult result;
  {
    nb::gil_scoped_release release;
    const auto progress = [&](const agent::MultiRunProgress& p) {
      nb::gil_scoped_acquire gil;
      if (on_progress.is_none() || python_error) return;
      try {
        nb::dict d;
        d["total"] = p.total;
        d["done"] = p.done;
        d["interrupted"] = p.interrupted;
        d["running"] = p.running;
        d["best_eval"] = p.best_eval;
        d["worst_eval"] = p.worst_eval;
        on_progress(d);
      } catch (nb::python_error& e) {
        e.restore();
        python_error = true;
      }
    };
    // RunMany polls it on this (the calling) thread, where Python handles signals.
    result = agent::RunMany(
        GlobalRegistry(), source, seeds, axes, options, progress, [&] { return StopAsked(python_error); }, notes);
    notes.flush();
  }
  if (python_error) throw nb::python_error();
  nb::dict d;
  d["batch_dir"] = options.out_dir;
  d["interrupted"] = result.interrupted;
  d["summary_json"] = result.summary_json.empty() ? nb::none() : nb::cast(result.summary_json);
  d["summary_md"] = result.summary_md.empty() ? nb::none() : nb::cast(result.summary_md);
  return d;
}

// A greedy policy that takes any batch size (the network is rebuilt for a larger batch): int32
// actions (n,) for a Discrete env, float32 (n, action_dim) for a Box env (a PPO gaussian policy).
class PyPolicy {
 public:
  PyPolicy(const std::string& path, const std::string& env_id, const std::string& device)
      : path_(path), device_(ResolveDevice(device)) {
    if (device_ == Device::kCuda) cuda_device_ = CudaCurrentDevice();  // where the network is made
    Build(256, env_id);
  }
  const std::string& env_id() const { return policy_->env_id(); }
  std::string device() const { return DeviceName(device_); }
  int64_t obs_dim() const { return obs_dim_; }
  bool continuous() const { return policy_->continuous(); }

  // obs: (n, obs_dim), or (n, *shape) as the env hands them out (the same C-contiguous rows).
  nb::object Act(nb::ndarray<const float, nb::c_contig> obs) {
    CheckArrayDevice("observations", {obs.device_type(), static_cast<int64_t>(obs.device_id())}, "policy", device_,
                     cuda_device_);
    CheckObsShape(obs);
    const int64_t n = static_cast<int64_t>(obs.shape(0));
    ScopedCudaDevice on_device(device_, cuda_device_);
    if (n > max_batch_) Build(std::max<int64_t>(n, 2 * max_batch_), env_id());
    const bool box = policy_->continuous();
    const int64_t width = policy_->action_dim();
    void* block = AllocateBytes(device_, (box ? sizeof(float) : sizeof(int32_t)) * std::max<int64_t>(n * width, 1));
    nb::capsule owner = device_ == Device::kCuda
                            ? nb::capsule(block, [](void* p) noexcept { FreeBytes(Device::kCuda, p); })
                            : nb::capsule(block, [](void* p) noexcept { FreeBytes(Device::kCpu, p); });
    if (n > 0) {
      nb::gil_scoped_release release;
      if (box)
        policy_->Act(obs.data(), static_cast<float*>(block), n);
      else
        policy_->Act(obs.data(), static_cast<int32_t*>(block), n);
      // All of Act is on the network's stream: the device's other streams are not waited for.
      SynchronizeStream(device_, policy_->native_stream());
    }
    return box ? Wrap<float>(block, {static_cast<size_t>(n), static_cast<size_t>(width)}, owner)
               : Wrap<int32_t>(block, {static_cast<size_t>(n)}, owner);
  }

 private:
  // The actions as a NumPy array on the CPU, else an array-API (DLPack) one on the GPU.
  template <class T>
  nb::object Wrap(void* block, std::initializer_list<size_t> shape, nb::capsule owner) const {
    if (device_ == Device::kCpu) return nb::ndarray<nb::numpy, T>(block, shape, owner).cast();
    return nb::ndarray<nb::array_api, T>(block, shape, owner, {}, nb::dtype<T>(), nb::device::cuda::value, cuda_device_)
        .cast();
  }

  void Build(int64_t max_batch, const std::string& env_id) {
    policy_ = std::make_unique<agent::GreedyPolicy>(GlobalRegistry(), path_, env_id, max_batch, device_);
    const EnvSpec& spec = GlobalRegistry().Get(policy_->env_id()).spec;
    obs_dim_ = spec.obs_dim();
    obs_shape_ = spec.observation_space.shape;
    max_batch_ = max_batch;
  }

  void CheckObsShape(const nb::ndarray<const float, nb::c_contig>& obs) const {
    const size_t rank = obs.ndim();
    const bool flat = rank == 2 && obs.shape(1) == static_cast<size_t>(obs_dim_);
    bool shaped = rank == obs_shape_.size() + 1;
    for (size_t d = 1; shaped && d < rank; ++d) shaped = obs.shape(d) == static_cast<size_t>(obs_shape_[d - 1]);
    if (flat || shaped) return;
    std::string want = "(n, " + std::to_string(obs_dim_) + ")", got = "(";
    if (obs_shape_.size() > 1) {
      want += " or (n";
      for (int64_t d : obs_shape_) want += ", " + std::to_string(d);
      want += ")";
    }
    for (size_t d = 0; d < rank; ++d) got += (d ? ", " : "") + std::to_string(obs.shape(d));
    got += rank == 1 ? ",)" : ")";
    throw nb::value_error(("observations must have shape " + want + " for " + env_id() + ", got " + got).c_str());
  }

  std::string path_;
  Device device_;
  int cuda_device_ = 0;  // CUDA: the GPU the network lives on
  std::unique_ptr<agent::GreedyPolicy> policy_;
  int64_t obs_dim_ = 0;
  std::vector<int64_t> obs_shape_;  // one observation's shape: (obs_dim_,) or e.g. (10, 10, 4)
  int64_t max_batch_ = 0;
};

}  // namespace

void BindTraining(nb::module_& m) {
  m.def("train", &Train, nb::arg("resume_dir"), nb::arg("config_path"), nb::arg("table").none(), nb::arg("env_id"),
        nb::arg("overrides"), nb::arg("out"), nb::arg("device"), nb::arg("on_log").none(), nb::arg("on_eval").none(),
        nb::arg("write"));
  m.def("train_many", &TrainMany, nb::arg("resume_dir"), nb::arg("config_path"), nb::arg("table").none(),
        nb::arg("env_id"), nb::arg("overrides"), nb::arg("seeds"), nb::arg("sweep"), nb::arg("out"), nb::arg("device"),
        nb::arg("jobs"), nb::arg("lockstep").none(), nb::arg("on_progress").none(), nb::arg("write"));
  nb::class_<PyPolicy>(m, "_Policy")
      .def(nb::init<const std::string&, const std::string&, const std::string&>(), nb::arg("path"), nb::arg("env_id"),
           nb::arg("device"))
      .def_prop_ro("env_id", &PyPolicy::env_id)
      .def_prop_ro("device", &PyPolicy::device)
      .def_prop_ro("obs_dim", &PyPolicy::obs_dim)
      .def_prop_ro("continuous", &PyPolicy::continuous)
      .def("act", &PyPolicy::Act, nb::arg("obs"));
}

}  // namespace cugym::python
