// Flag parsing for the cugym subcommands and the benchmark programs.
#include "cli/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace cugym::cli {
namespace {

// The flags of the command line parsed last (a process runs one command).
std::vector<std::string>& GivenFlags() {
  static std::vector<std::string> given;
  return given;
}

}  // namespace

int64_t ParseInt(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
    throw std::invalid_argument(flag + ": expected an integer, got '" + text + "'");
  return value;
}

double ParseDouble(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
    throw std::invalid_argument(flag + ": expected a number, got '" + text + "'");
  return value;
}

Args::Args(const std::string& program, std::vector<FlagSpec> flags, int argc, char** argv, int first)
    : program_(program), flags_(std::move(flags)) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (std::size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    if (name.rfind("--", 0) != 0)
      throw std::invalid_argument("unexpected argument '" + arg + "' (see " + program_ + " --help)");
    const FlagSpec& spec = Spec(name);
    if (spec.value.empty()) {
      if (inline_value) throw std::invalid_argument(name + " takes no value");
      values_[name] = {"1"};
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) throw std::invalid_argument(name + " needs a value (" + spec.value + ")");
      value = argv[++i];
    }
    if (spec.repeatable) {
      values_[name].push_back(value);
    } else {
      values_[name] = {value};
    }
  }
  GivenFlags().clear();
  for (const auto& [name, unused] : values_) GivenFlags().push_back(name);
}

std::string WithFlagNames(const std::string& message) {
  const std::size_t end = message.find_first_not_of("abcdefghijklmnopqrstuvwxyz_");
  if (end == 0 || end == std::string::npos || (message[end] != ' ' && message[end] != ':')) return message;
  std::string flag = "--" + message.substr(0, end);
  std::replace(flag.begin(), flag.end(), '_', '-');
  const std::vector<std::string>& given = GivenFlags();
  if (std::find(given.begin(), given.end(), flag) == given.end()) return message;
  return flag + message.substr(end);
}

const FlagSpec& Args::Spec(const std::string& name) const {
  for (const FlagSpec& flag : flags_) {
    if (flag.name == name) return flag;
  }
  throw std::invalid_argument("unknown flag '" + name + "' (see " + program_ + " --help)");
}

std::string Args::Usage(const std::string& summary) const {
  std::string out = "usage: " + program_ + " [flags]\n" + summary + "\n\nflags:\n";
  for (const FlagSpec& flag : flags_) {
    std::string left =
        "  " + flag.name + (flag.value.empty() ? "" : " " + flag.value) + (flag.repeatable ? " ..." : "");
    if (left.size() < 26) left.resize(26, ' ');
    out += left + " " + flag.help + (flag.fallback.empty() ? "" : " (default " + flag.fallback + ")") + "\n";
  }
  return out + "  --help                   show this help\n";
}

std::string Args::String(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() ? it->second.back() : Spec(name).fallback;
}

std::vector<std::string> Args::Strings(const std::string& name) const {
  Spec(name);
  auto it = values_.find(name);
  return it != values_.end() ? it->second : std::vector<std::string>{};
}

std::string Args::Required(const std::string& name) const {
  std::string value = String(name);
  if (value.empty()) throw std::invalid_argument(name + " is required");
  return value;
}

int64_t Args::Int(const std::string& name) const { return ParseInt(name, Required(name)); }
double Args::Double(const std::string& name) const { return ParseDouble(name, Required(name)); }

uint64_t Args::Seed(const std::string& name) const {
  const int64_t seed = Int(name);
  if (seed < 0) throw std::invalid_argument(name + " must be >= 0, got " + std::to_string(seed));
  return static_cast<uint64_t>(seed);
}

}  // namespace cugym::cli
