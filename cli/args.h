// Command-line flags of one subcommand (or benchmark program): declared up front, so unknown flags
// and bad values are one-line errors (std::invalid_argument) instead of surprises. The one flag
// parser of cugym's programs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cugym::cli {

struct FlagSpec {
  std::string name;   // "--num-envs"
  std::string value;  // metavar, "" for a boolean switch
  std::string help;
  std::string fallback;     // default shown in --help ("" = none)
  bool repeatable = false;  // may be given several times (Strings() returns them all)
};

class Args {
 public:
  // Parses argv[first..argc) against `flags` (plus --help). `program` is how the user invokes it
  // ("cugym train", "cugym_bench_nn"), for --help. Throws std::invalid_argument; the message
  // does not repeat the program name, which the caller's one error line starts with.
  Args(const std::string& program, std::vector<FlagSpec> flags, int argc, char** argv, int first);

  bool help() const { return help_; }
  std::string Usage(const std::string& summary) const;

  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  std::string String(const std::string& name) const;  // the value or the declared default
  std::string Required(const std::string& name) const;
  int64_t Int(const std::string& name) const;
  double Double(const std::string& name) const;
  // A seed: an integer >= 0 (negative values would wrap around to huge unsigned ones).
  uint64_t Seed(const std::string& name) const;
  bool Switch(const std::string& name) const { return Has(name); }
  // Every value of a repeatable flag, in order.
  std::vector<std::string> Strings(const std::string& name) const;

 private:
  const FlagSpec& Spec(const std::string& name) const;

  std::string program_;
  std::vector<FlagSpec> flags_;
  std::map<std::string, std::vector<std::string>> values_;
  bool help_ = false;
};

// A library error in the CLI's terms: a message that starts with a parameter's name ("num_envs
// must be positive", "device cuda: no usable CUDA GPU") names the flag that set it instead
// ("--num-envs ...", "--device cuda: ...") when this command line gave that flag; otherwise (a
// config key set with --set, say) the message is returned as it is. "This command line" is the
// one the last Args parsed.
std::string WithFlagNames(const std::string& message);

// Strict number parsing for flag values: the whole text must be a number.
int64_t ParseInt(const std::string& flag, const std::string& text);
double ParseDouble(const std::string& flag, const std::string& text);

}  // namespace cugym::cli
