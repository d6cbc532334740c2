// Minimal command-line parsing shared by mxtb's subcommands: --flag VALUE pairs and switches,
// with errors that name the flag.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::host {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The repository root (traces/ lives below it): $MXTB_ROOT, else the source tree built from.
std::string source_root();

class Args {
 public:
  // value_flags take one argument; switches take none. Anything else is an error.
  Args(const std::vector<std::string>& args, std::set<std::string> value_flags,
       std::set<std::string> switches);
  bool has(const std::string& flag) const { return values_.count(flag) || switches_on_.count(flag); }
  std::string str(const std::string& flag, const std::string& def = "") const;
  uint64_t u64(const std::string& flag, uint64_t def) const;
  double real(const std::string& flag, double def) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_on_;
  std::vector<std::string> positional_;
};

}  // namespace mxtb::host
