// The emulator's log: its lines on stderr, each prefixed "mxtb sim [<time mode>]: " (a rack's board:
// "mxtb rack server N [<time mode>]: "), one at a time
// whichever thread writes (the simulation thread, the socket thread's faults, the stall watchdog).
// The IPbus faults it is told of are rate-limited: the first 20, then every 1000th.
#pragma once

#include "protocol/ipbus/target.h"

#include <mxtb/emu_regs.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

namespace mxtb::sim {

const char* mode_name(emu::TimeMode m);  // "lockstep", "paced", "free"

class EmuLog {
 public:
  explicit EmuLog(emu::TimeMode mode, std::string who = "mxtb sim") : who_(std::move(who)), mode_(mode_name(mode)) {}
  const char* mode() const { return mode_; }
  // One line (without its newline), from any thread.
  void line(const std::string& text);
  // A dropped packet or an error reply, with its reason, from any thread.
  void ipbus_fault(protocol::ipbus::Fault f, const std::string& what);

 private:
  const std::string who_;
  const char* mode_;
  std::mutex mu_;
  uint64_t faults_ = 0;  // under mu_
};

}  // namespace mxtb::sim
