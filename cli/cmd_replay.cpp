// `cugym replay`: checks an env against a reference trace (e.g. one generated with Gymnasium by
// scripts/gen_traces.py). Exit 0 within tolerance, 1 on a mismatch, 2 on unusable input.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/csv.h"
#include "core/json_writer.h"
#include "core/trace.h"

namespace cugym::cli {
namespace {

void PrintError(const char* what, const TraceError& error) {
  std::printf("  %-22s %.3g", what, error.max_error);
  if (error.max_error > 0) std::printf("  (line %lld, %s)", static_cast<long long>(error.line), error.column.c_str());
  std::printf("\n");
}

}  // namespace

int RunReplay(const Registry& registry, int argc, char** argv) {
  Args args("cugym replay",
            {{"--env", "ID", "env id (see cugym list)", ""},
             {"--trace", "FILE", "reference trace CSV (docs/file-formats.md)", ""},
             {"--tol", "X", "largest allowed error, scaled by max(1, |expected|)", "1e-4"},
             {"--device", "D", kDeviceHelp, "auto"},
             {"--json", "", "print one JSON object", ""}},
            argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Sets each trace row's state in an env, applies the row's action, and compares next_state,\n"
        "next_obs, reward and terminated with the trace. Exit 0 when every error is within --tol and\n"
        "no terminated flag differs, 1 otherwise, 2 on unusable input.");
    return 0;
  }
  const std::string id = args.Required("--env");
  const std::string path = args.Required("--trace");
  const double tolerance = args.Double("--tol");
  if (tolerance < 0) throw std::invalid_argument("--tol must be >= 0");
  registry.Get(id);
  if (!std::filesystem::exists(path)) throw std::invalid_argument("trace file '" + path + "' does not exist");
  if (std::filesystem::is_directory(path)) throw std::invalid_argument("trace '" + path + "' is a directory");
  const CsvTable trace = ReadNumericCsv(path);
  const Device device = PickDevice(args.String("--device"));
  const ReplayReport report = ReplayTrace(registry, id, trace, device);
  const bool pass = report.Pass(tolerance);

  if (args.Switch("--json")) {
    JsonObject json = ResultJson();
    json.Str("env", id)
        .Str("device", DeviceName(device))
        .Str("trace", path)
        .Int("rows", report.rows)
        .Num("max_error_next_state", report.next_state.max_error)
        .Num("max_error_next_obs", report.next_obs.max_error)
        .Num("max_error_reward", report.reward.max_error)
        .Int("terminated_mismatches", report.terminated_mismatches)
        .Num("tolerance", tolerance)
        .Bool("pass", pass);
    std::cout << json.str() << "\n";
  } else {
    std::printf("replay %s on %s: %lld rows from %s\n", id.c_str(), DeviceName(device),
                static_cast<long long>(report.rows), path.c_str());
    PrintError("next_state max error", report.next_state);
    PrintError("next_obs max error", report.next_obs);
    PrintError("reward max error", report.reward);
    std::printf("  terminated mismatches  %lld", static_cast<long long>(report.terminated_mismatches));
    if (report.terminated_mismatches > 0)
      std::printf("  (first at line %lld)", static_cast<long long>(report.first_mismatch_line));
    std::printf("\n%s (tolerance %g)\n", pass ? "PASS" : "FAIL", tolerance);
  }
  return pass ? 0 : 1;
}

}  // namespace cugym::cli
