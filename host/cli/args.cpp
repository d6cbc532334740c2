#include "args.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace mxtb::host {

Args::Args(const std::vector<std::string>& args, std::set<std::string> value_flags,
           std::set<std::string> switches) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      positional_.push_back(a);
    } else if (value_flags.count(a)) {
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", a));
      values_[a] = args[++i];
    } else if (switches.count(a)) {
      switches_on_.insert(a);
    } else {
      throw UsageError(fmt::format("unknown option {}", a));
    }
  }
}

std::string Args::str(const std::string& flag, const std::string& def) const {
  auto it = values_.find(flag);
  return it == values_.end() ? def : it->second;
}

uint64_t Args::u64(const std::string& flag, uint64_t def) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno == ERANGE)
    throw UsageError(fmt::format("{} wants a non-negative integer, got '{}'", flag, s));
  return v;
}

double Args::real(const std::string& flag, double def) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0')
    throw UsageError(fmt::format("{} wants a number, got '{}'", flag, it->second));
  return v;
}

std::string source_root() {
  if (const char* r = std::getenv("MXTB_ROOT")) return r;
  return MXTB_SOURCE_DIR;
}

}  // namespace mxtb::host
