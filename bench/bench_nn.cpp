// Gradient updates per second of cugym's nn for a DQN learner: per update a target-network
// forward with max over actions on the next observations, then forward, loss, backward and Adam
// on the minibatch (cugym::agent::QLearner), on the CPU and on the GPU (eager and replayed from a CUDA graph).
// Optionally also the training step alone (forward, loss, backward, Adam) and greedy action
// selection (forward + argmax) at a few batch sizes, K networks updated as one
// (--replicas: QLearnerOptions::replicas, the K agents of a batch of seeds; a call then updates all
// K, each on its own minibatch), and nets with a LayerNorm before each ReLU (--layer-norm on: PQN's).
//
//   cugym_bench_nn [--device cpu|cuda|all] [--nets 4-120-84-2,8-256-256-4] [--batch 128]
//                  [--losses mse,huber] [--parts update,train,act] [--act-batches 1,128]
//                  [--replicas 1,32,1024] [--layer-norm off,on] [--seconds 1] [--json]
//
// A net is its layer sizes joined by '-'; HxWxCcK in front adds a 3 x 3 convolution with K
// channels on H x W x C images (NHWC): MinAtar's network is 10x10x4c16-128-6.
// PQN's MinAtar network, 10x10x4c16-128-6 with --layer-norm on at --batch 128, puts 8,192 rows of
// 16 channels through the convolution's LayerNorm per minibatch: its parameter gradient is a
// reduction over few long columns (Backend::LayerNormBackward).
//
// MSE rows run without gradient clipping (CleanRL's DQN), Huber rows with max_grad_norm 10
// (Stable-Baselines3's); replicated rows (K > 1) take no clipping, so Huber rows are MSE's only. The CPU's BLAS threads
// follow OPENBLAS_NUM_THREADS (default: all cores). Each figure is the median of 5 timed repeats after a warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/common/q_learner.h"
#include "cli/args.h"
#include "core/device.h"
#include "core/json_writer.h"
#include "core/memory.h"
#include "nn/checkpoint.h"

namespace {

using cugym::Buffer;
using cugym::Device;
using cugym::JsonNumber;
using cugym::JsonObject;
using cugym::cli::Args;
namespace nn = cugym::nn;

struct Options {
  std::string device;
  std::vector<std::string> nets, losses, parts;
  std::vector<int> act_batches, replicas;
  std::vector<bool> layer_norms;
  int batch = 0;
  double seconds = 0;
  bool json = false;
  bool help = false;  // --help: the usage was printed, nothing else to do
};

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// Flags through cli/args.h, as the cugym subcommands read theirs. Throws std::invalid_argument.
Options Parse(int argc, char** argv) {
  const Args args("cugym_bench_nn",
                  {{"--device", "D", "cpu, cuda or all", "all"},
                   {"--nets", "LIST", "comma-separated layer sizes", "4-120-84-2,8-256-256-4"},
                   {"--batch", "B", "minibatch size", "128"},
                   {"--losses", "LIST", "mse, huber or both, comma-separated", "mse,huber"},
                   {"--parts", "LIST",
                    "update (target max-Q + train step), train (forward, loss, backward, Adam), "
                    "act (forward + argmax), comma-separated",
                    "update"},
                   {"--act-batches", "LIST", "batch sizes of the act rows", "1,128"},
                   {"--replicas", "LIST", "networks per call (K agents as one), comma-separated", "1"},
                   {"--layer-norm", "LIST", "off, on or both (a LayerNorm before each ReLU), comma-separated", "off"},
                   {"--seconds", "S", "measuring time per figure", "1"},
                   {"--json", "", "one JSON object per row", ""}},
                  argc, argv, 1);
  Options o;
  o.help = args.help();
  if (o.help) {
    std::printf("%s", args.Usage("DQN gradient updates per second of cugym's nn (target max-Q forward + forward,\n"
                                 "loss, backward, Adam), median of 5 repeats.")
                          .c_str());
    return o;
  }
  o.device = args.String("--device");
  o.nets = Split(args.String("--nets"), ',');
  o.losses = Split(args.String("--losses"), ',');
  o.parts = Split(args.String("--parts"), ',');
  for (const std::string& value : Split(args.String("--layer-norm"), ',')) {
    if (value != "off" && value != "on")
      throw std::invalid_argument("--layer-norm takes off and on, got '" + value + "'");
    o.layer_norms.push_back(value == "on");
  }
  for (const std::string& part : o.parts) {
    if (part != "update" && part != "train" && part != "act")
      throw std::invalid_argument("--parts takes update, train and act, got '" + part + "'");
  }
  auto positive = [&](const char* flag, std::vector<int>& out) {
    for (const std::string& b : Split(args.String(flag), ',')) {
      const std::size_t digits = b.find_first_not_of("0123456789");
      if (b.empty() || b.size() > 7 || digits != std::string::npos || std::stoi(b) < 1)
        throw std::invalid_argument(std::string(flag) + " takes positive integers, got '" + b + "'");
      out.push_back(std::stoi(b));
    }
  };
  positive("--act-batches", o.act_batches);
  positive("--replicas", o.replicas);
  const int64_t batch = args.Int("--batch");
  o.seconds = args.Double("--seconds");
  o.json = args.Switch("--json");
  if (o.device != "cpu" && o.device != "cuda" && o.device != "all")
    throw std::invalid_argument("--device must be cpu, cuda or all, got '" + o.device + "'");
  if (batch < 1 || batch > (1 << 20))
    throw std::invalid_argument("--batch must be in 1..1048576, got " + std::to_string(batch));
  if (!(o.seconds > 0)) throw std::invalid_argument("--seconds must be positive, got " + args.String("--seconds"));
  o.batch = static_cast<int>(batch);
  return o;
}

// A net as --nets names it: "4-120-84-2", or "10x10x4c16-128-6" with a convolution in front.
struct Net {
  std::vector<int> sizes;
  nn::ConvSpec conv;
};

Net ParseNet(const std::string& text) {
  Net net;
  std::string linear = text;
  const std::size_t c = text.find('c');
  if (c != std::string::npos) {
    const std::vector<std::string> image = Split(text.substr(0, c), 'x');
    const std::size_t dash = text.find('-', c);
    if (image.size() != 3 || dash == std::string::npos)
      throw std::invalid_argument("net '" + text + "': expected HxWxCcK-hidden-...-out, e.g. 10x10x4c16-128-6");
    const std::vector<int> dims =
        nn::ParseLayerSizes(image[0] + "," + image[1] + "," + image[2] + "," + text.substr(c + 1, dash - c - 1));
    net.conv = nn::ConvSpec{dims[0], dims[1], dims[2], dims[3], 3};
    nn::CheckConvSpec(net.conv, "net '" + text + "'");
    linear = std::to_string(net.conv.in_features()) + text.substr(dash);
  }
  std::replace(linear.begin(), linear.end(), '-', ',');
  net.sizes = nn::ParseLayerSizes(linear);
  return net;
}

struct Result {
  std::string net, loss, device, mode, part, hardware, note;
  int batch = 0, replicas = 1;
  double max_grad_norm = 0;
  double updates_per_second = 0;  // calls (of all K networks); 0 when not measured
  bool layer_norm = false;
};

// One benchmark configuration on one back end.
class Bench {
 public:
  Bench(std::shared_ptr<nn::Backend> backend, const Net& net, int batch, nn::LossKind loss, double clip, int replicas,
        bool layer_norm)
      : backend_(backend), device_(backend->device()), batch_(batch * replicas), in_(net.sizes.front()) {
    const std::vector<int>& sizes = net.sizes;
    cugym::agent::QLearnerOptions o;
    o.layer_sizes = sizes;
    o.conv = net.conv;
    o.layer_norm = layer_norm;
    o.batch_size = batch;
    o.max_act_batch = batch;
    o.loss = loss;
    o.adam.lr = 1e-4;
    o.adam.max_grad_norm = clip;
    o.replicas = replicas;
    for (int r = 0; r < replicas && replicas > 1; ++r) o.replica_seeds.push_back(r + 1);
    trainer_ = std::make_unique<cugym::agent::QLearner>(backend, o);
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> obs(static_cast<std::size_t>(batch_) * in_), next(obs.size());
    std::vector<int32_t> actions(batch_);
    for (float& v : obs) v = u(gen);
    for (float& v : next) v = u(gen);
    for (int32_t& a : actions) a = static_cast<int32_t>(gen() % sizes.back());
    obs_ = Buffer<float>(device_, obs.size());
    next_ = Buffer<float>(device_, next.size());
    actions_ = Buffer<int32_t>(device_, actions.size());
    targets_ = Buffer<float>(device_, batch_);
    greedy_ = Buffer<int32_t>(device_, batch_);
    obs_.FromHost(obs.data(), obs.size());
    next_.FromHost(next.data(), next.size());
    actions_.FromHost(actions.data(), actions.size());
  }

  // The DQN update: targets = max_a Q_target(next_obs) (reward and discount left out: they are a
  // trivial fused pass in the agent), then one training step on (obs, actions, targets).
  void Update() {
    trainer_->TargetMaxQ(nn::ConstBatchView(next_.data(), batch_, in_, device_), nn::AsVector(targets_));
    trainer_->TrainStep(nn::ConstBatchView(obs_.data(), batch_, in_, device_), nn::AsVector(actions_),
                        nn::AsVector(targets_));
  }

  // The training step alone: forward, loss, backward, Adam (targets as they are).
  void Train() {
    trainer_->TrainStep(nn::ConstBatchView(obs_.data(), batch_, in_, device_), nn::AsVector(actions_),
                        nn::AsVector(targets_));
  }

  // Greedy actions for the first `rows` observations (forward + argmax), as an env step needs
  // (rows per replica times the replicas).
  void Act(int rows) {
    trainer_->Act(nn::ConstBatchView(obs_.data(), rows, in_, device_), nn::AsVector(greedy_).Head(rows));
  }

  // Median calls per second of 5 repeats of `part` ("update", "train" or "act" on `act_rows`
  // rows); `graph` replays a captured call.
  double Measure(double seconds, bool graph, const std::string& part = "update", int act_rows = 0) {
    const std::function<void()> call = part == "update"  ? std::function<void()>([this] { Update(); })
                                       : part == "train" ? std::function<void()>([this] { Train(); })
                                                         : std::function<void()>([this, act_rows] { Act(act_rows); });
    std::unique_ptr<nn::Graph> captured;
    if (graph) {
      call();  // eager once first: loads the kernels outside the capture
      captured = backend_->Capture(call);
    }
    auto run = [&](int n) {
      for (int i = 0; i < n; ++i) {
        if (captured)
          captured->Replay();
        else
          call();
      }
      backend_->Synchronize();
    };
    using Clock = std::chrono::steady_clock;
    run(10);  // warm-up
    auto t0 = Clock::now();
    run(20);
    const double per = std::max(1e-7, std::chrono::duration<double>(Clock::now() - t0).count() / 20);
    const int n = std::max(10, static_cast<int>(seconds / 5 / per));
    std::vector<double> rates;
    for (int r = 0; r < 5; ++r) {
      t0 = Clock::now();
      run(n);
      rates.push_back(n / std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(rates.begin(), rates.end());
    const float loss = trainer_->ReadStats().loss;
    if (!(loss == loss)) throw std::runtime_error("the loss went NaN");
    return rates[2];
  }

 private:
  std::shared_ptr<nn::Backend> backend_;
  Device device_;
  int batch_, in_;
  std::unique_ptr<cugym::agent::QLearner> trainer_;
  Buffer<float> obs_, next_, targets_;
  Buffer<int32_t> actions_, greedy_;
};

}  // namespace

int main(int argc, char** argv) {
  Options args;
  std::vector<Result> results;
  try {
    args = Parse(argc, argv);
    if (args.help) return 0;
    for (const std::string& device_name : {std::string("cpu"), std::string("cuda")}) {
      if (args.device != "all" && args.device != device_name) continue;
      const Device device = device_name == "cpu" ? Device::kCpu : Device::kCuda;
      std::shared_ptr<nn::Backend> backend;
      std::string unavailable;
      if (device == Device::kCuda && !cugym::CudaAvailable()) {
        unavailable = "no GPU: " + cugym::CudaUnavailableReason();
      } else {
        backend = nn::MakeBackend(device);
      }
      for (const std::string& net_name : args.nets) {
        const Net net = ParseNet(net_name);
        for (const std::string& loss_name : args.losses) {
          const nn::LossKind loss = nn::ParseLoss(loss_name);
          const double clip = loss == nn::LossKind::kHuber ? 10.0 : 0.0;
          for (const std::string& part : args.parts) {
            // Acting involves no loss: its rows come with the first loss only.
            if (part == "act" && loss_name != args.losses.front()) continue;
            for (const int act_rows : part == "act" ? args.act_batches : std::vector<int>{0}) {
              const int batch = part == "act" ? act_rows : args.batch;
              for (const int replicas : args.replicas) {
                for (const bool layer_norm : args.layer_norms) {
                  for (const char* mode : {"eager", "graph"}) {
                    if (device == Device::kCpu && std::strcmp(mode, "graph") == 0) continue;  // nothing to capture
                    Result r{net_name,    part == "act" ? "-" : nn::LossName(loss),
                             device_name, mode,
                             part,        "",
                             unavailable, batch,
                             replicas,    part == "act" ? 0 : clip,
                             0,           layer_norm};
                    if (backend != nullptr) {
                      r.hardware = backend->Describe();
                      Bench bench(backend, net, std::max(batch, args.batch), loss, clip, replicas, layer_norm);
                      r.updates_per_second =
                          bench.Measure(args.seconds, std::strcmp(mode, "graph") == 0, part, act_rows * replicas);
                    }
                    results.push_back(r);
                    if (args.json) {
                      JsonObject json;
                      json.Str("bench", "nn_" + part)
                          .Str("net", r.net)
                          .Int("batch", r.batch)
                          .Int("replicas", r.replicas)
                          .Bool("layer_norm", r.layer_norm)
                          .Str("loss", r.loss)
                          .Num("max_grad_norm", r.max_grad_norm)
                          .Str("device", r.device)
                          .Str("mode", r.mode)
                          .Str("hardware", r.hardware)
                          .Raw("updates_per_second",
                               r.updates_per_second > 0 ? JsonNumber(r.updates_per_second) : "null")
                          .Str("note", r.note);
                      std::printf("%s\n", json.str().c_str());
                      std::fflush(stdout);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cugym_bench_nn: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cugym_bench_nn: error: %s\n", e.what());
    return 1;
  }
  if (!args.json) {
    std::printf(
        "Calls per second, median of 5. update: target max-Q forward + forward, loss, backward, Adam; train: "
        "without the target forward; act: forward + argmax. K networks per call (--replicas): per net = calls x K\n");
    std::printf("%-16s %-6s %5s %5s %-6s %5s %-5s %-6s %12s %10s %12s\n", "net", "part", "batch", "K", "loss", "clip",
                "dev", "mode", "calls/s", "us/call", "per net/s");
    for (const Result& r : results) {
      std::printf("%-16s %-6s %5d %5d %-6s %5g %-5s %-6s ", (r.net + (r.layer_norm ? "+LN" : "")).c_str(),
                  r.part.c_str(), r.batch, r.replicas, r.loss.c_str(), r.max_grad_norm, r.device.c_str(),
                  r.mode.c_str());
      if (r.updates_per_second > 0)
        std::printf("%12.0f %10.1f %12.0f\n", r.updates_per_second, 1e6 / r.updates_per_second,
                    r.updates_per_second * r.replicas);
      else
        std::printf("%12s %10s %12s  (%s)\n", "-", "-", "-", r.note.c_str());
    }
    std::string shown;
    for (const Result& r : results) {
      if (r.hardware.empty() || shown.find(r.hardware) != std::string::npos) continue;
      std::printf("%s\n", r.hardware.c_str());
      shown += r.hardware + "\n";
    }
  }
  return 0;
}
