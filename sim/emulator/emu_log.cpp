// EmuLog (emu_log.h): the emulator's stderr lines, one at a time, IPbus faults rate-limited.
#include "sim/emulator/emu_log.h"

#include <fmt/format.h>

#include <cstdio>

namespace mxtb::sim {

const char* mode_name(emu::TimeMode m) {
  switch (m) {
    case emu::TimeMode::Lockstep: return "lockstep";
    case emu::TimeMode::Paced: return "paced";
    case emu::TimeMode::Free: return "free";
  }
  return "?";
}

void EmuLog::line(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  fmt::print(stderr, "{} [{}]: {}\n", who_, mode_, text);
}

void EmuLog::ipbus_fault(protocol::ipbus::Fault f, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = ++faults_;
  if (n <= 20 || n % 1000 == 0)
    fmt::print(stderr, "{} [{}]: ipbus {}: {}{}\n", who_, mode_, protocol::ipbus::to_string(f), what,
               n == 20 ? " (further faults: every 1000th is logged)" : "");
}

}  // namespace mxtb::sim
