// The mxtb program's one command-line parser: --flag VALUE pairs, switches and list flags, with
// errors that name the flag and what was wrong. main.cpp turns a UsageError into the one usage
// message (exit 2). docs/cli.md.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::app {

using ArgList = std::vector<std::string>;

// Bad command-line input: main.cpp prints "mxtb CMD: error: WHAT" and the command's usage, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bad input that is no command-line mistake (a file's content, a name a library refused):
// main.cpp prints "mxtb CMD: error: WHAT" without the usage, exit 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The repository root (traces/ lives below it): $MXTB_ROOT, else the source tree built from.
std::string source_root();

struct ArgSpec {
  std::set<std::string> values;    // --flag VALUE
  std::set<std::string> switches;  // --flag
  std::set<std::string> lists;     // --flag V [V...] (until the next --flag; commas also separate)
  bool positional = false;         // whether bare words are allowed
};

class Args {
 public:
  // Throws UsageError for an unknown flag, a missing value, or a bare word where none is allowed.
  Args(const ArgList& args, const ArgSpec& spec);
  // The common case: value flags and switches, no bare words.
  Args(const ArgList& args, std::set<std::string> values, std::set<std::string> switches)
      : Args(args, ArgSpec{std::move(values), std::move(switches), {}, false}) {}

  bool has(const std::string& flag) const;
  std::string str(const std::string& flag, const std::string& def = "") const;
  const std::vector<std::string>& list(const std::string& flag) const;  // empty when not given
  const std::vector<std::string>& positional() const { return positional_; }

  // Numbers: the whole value must parse, and lie in [min, max]; errors name the flag and value.
  uint64_t u64(const std::string& flag, uint64_t def, uint64_t min = 0, uint64_t max = UINT64_MAX) const;
  int64_t i64(const std::string& flag, int64_t def, int64_t min, int64_t max) const;
  double real(const std::string& flag, double def, double min = -1e300, double max = 1e300) const;
  // One of `choices`; the error lists them.
  std::string choice(const std::string& flag, const std::string& def, const std::vector<std::string>& choices) const;
  // Flags that must not be given together; the error names both.
  void exclusive(const std::string& a, const std::string& b) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::set<std::string> switches_on_;
  std::vector<std::string> positional_;
};

// A list flag's XPU numbers (--tenant 0,1,3,2; --job-xpus ...): UsageError naming a value that is not one.
std::vector<int> parse_xpus(const Args& args, const std::string& flag);

}  // namespace mxtb::app
