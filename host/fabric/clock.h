// The one clock host software reads. On the emulator it is simulated time through the control
// block: in lockstep mode waiting advances the simulation and the host's own compute time is
// charged to it, so software phases appear in the timeline at their real cost. On a real board
// it is the wall clock. docs/protocol.md.
#pragma once

#include "host/fabric/client.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace mxtb::host::fabric {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() = 0;
  // Lets `ns` pass (advances the simulation in lockstep; sleeps on a board).
  virtual void wait_ns(uint64_t ns) = 0;
  // The host just spent `ns` of its own compute: charged to simulated time in lockstep, already
  // passed everywhere else.
  virtual void charge_ns(uint64_t ns) = 0;
  virtual std::string mode() const = 0;  // "lockstep", "paced", "free" or "wall"
};

class WallClock : public Clock {
 public:
  uint64_t now_ns() override;
  void wait_ns(uint64_t ns) override;
  void charge_ns(uint64_t) override {}
  std::string mode() const override { return "wall"; }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

class EmulatorClock : public Clock {
 public:
  explicit EmulatorClock(Client& c);  // reads the time mode; throws when the target is no emulator
  uint64_t now_ns() override;
  void wait_ns(uint64_t ns) override;
  void charge_ns(uint64_t ns) override;
  std::string mode() const override { return mode_; }

 private:
  Client& c_;
  std::string mode_;
  bool lockstep_ = false;
};

// True when the target has the emulator control block (a board answers a bus error there).
bool is_emulator(Client& c);
// EmulatorClock on the emulator, WallClock on a board.
std::unique_ptr<Clock> make_clock(Client& c);

// The longest single time-control request the host library sends (ADVANCE_NS, RUN_UNTIL).
inline constexpr uint64_t kTimeControlStepNs = 20'000;

// Per-attempt timeout for waiting `ns` of simulated time: the emulator runs slower than real
// time, so give it generously long (and never less than the client's usual timeout).
std::chrono::milliseconds time_control_timeout(const Client& c, uint64_t ns);

}  // namespace mxtb::host::fabric
