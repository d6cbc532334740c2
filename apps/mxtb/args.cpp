#include "apps/mxtb/args.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace mxtb::app {

Args::Args(const ArgList& args, const ArgSpec& spec) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (!spec.positional) throw UsageError(fmt::format("unexpected argument '{}'", a));
      positional_.push_back(a);
    } else if (spec.values.count(a)) {
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", a));
      values_[a] = args[++i];
    } else if (spec.switches.count(a)) {
      switches_on_.insert(a);
    } else if (spec.lists.count(a)) {
      auto& out = lists_[a];
      size_t before = out.size();
      for (; i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0; ++i) {
        const std::string& v = args[i + 1];
        for (size_t at = 0; at <= v.size();) {
          size_t comma = v.find(',', at);
          if (comma == std::string::npos) comma = v.size();
          if (comma > at) out.push_back(v.substr(at, comma - at));
          at = comma + 1;
        }
      }
      if (out.size() == before) throw UsageError(fmt::format("{} needs at least one value", a));
    } else {
      throw UsageError(fmt::format("unknown option '{}'", a));
    }
  }
}

bool Args::has(const std::string& flag) const {
  return values_.count(flag) || switches_on_.count(flag) || lists_.count(flag);
}

std::string Args::str(const std::string& flag, const std::string& def) const {
  auto it = values_.find(flag);
  return it == values_.end() ? def : it->second;
}

const std::vector<std::string>& Args::list(const std::string& flag) const {
  static const std::vector<std::string> kNone;
  auto it = lists_.find(flag);
  return it == lists_.end() ? kNone : it->second;
}

uint64_t Args::u64(const std::string& flag, uint64_t def, uint64_t min, uint64_t max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || s[0] == '+' || *end != '\0' || errno == ERANGE)
    throw UsageError(fmt::format("{} wants a non-negative integer, got '{}'", flag, s));
  if (v < min || v > max) throw UsageError(fmt::format("{} must be in [{}, {}], got {}", flag, min, max, v));
  return v;
}

int64_t Args::i64(const std::string& flag, int64_t def, int64_t min, int64_t max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) throw UsageError(fmt::format("{} wants an integer, got '{}'", flag, s));
  if (v < min || v > max) throw UsageError(fmt::format("{} must be in [{}, {}], got {}", flag, min, max, v));
  return v;
}

double Args::real(const std::string& flag, double def, double min, double max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') throw UsageError(fmt::format("{} wants a number, got '{}'", flag, s));
  if (!(v >= min && v <= max)) throw UsageError(fmt::format("{} must be in [{}, {}], got {}", flag, min, max, s));
  return v;
}

std::string Args::choice(const std::string& flag, const std::string& def, const std::vector<std::string>& choices) const {
  std::string v = str(flag, def);
  for (const auto& c : choices)
    if (v == c) return v;
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  throw UsageError(fmt::format("{} must be {}, got '{}'", flag, list, v));
}

void Args::exclusive(const std::string& a, const std::string& b) const {
  if (has(a) && has(b)) throw UsageError(fmt::format("give either {} or {}, not both", a, b));
}

std::string source_root() {
  if (const char* r = std::getenv("MXTB_ROOT"); r && *r) return r;
  return MXTB_SOURCE_DIR;
}

std::vector<int> parse_xpus(const Args& args, const std::string& flag) {
  std::vector<int> xpus;
  for (const auto& v : args.list(flag)) {
    if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError(fmt::format("{} '{}': not an XPU number", flag, v));
    xpus.push_back(std::stoi(v));
  }
  return xpus;
}

}  // namespace mxtb::app
