// The one clock host software reads. On the emulator it is simulated time through the control
// block: in lockstep mode waiting advances the simulation and the host's own compute time is
// charged to it, so software phases appear in the timeline at their real cost. On a real board
// it is the wall clock. docs/protocol.md.
#pragma once

#include "host/fabric/client.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
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
  // Whether charge_ns adds to this clock (lockstep), so that measuring compute is worth a rerun.
  virtual bool charges_compute() const = 0;
  virtual std::string mode() const = 0;  // "lockstep", "paced", "free" or "wall"

  // Runs `f`, a deterministic computation, and charges its cost (least_cpu_ns) where compute is
  // charged; elsewhere it runs once, since on a board the host's compute is real time. Returns
  // what it charged (0 where nothing is).
  template <class F>
  uint64_t charge_compute(F&& f);
};

class WallClock : public Clock {
 public:
  uint64_t now_ns() override;
  void wait_ns(uint64_t ns) override;
  void charge_ns(uint64_t) override {}
  bool charges_compute() const override { return false; }
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
  bool charges_compute() const override { return lockstep_; }
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

// The calling thread's CPU time.
uint64_t thread_cpu_ns();

// What a deterministic computation costs the host: the least CPU time of `runs` runs of it.
// Wall time is no measure on a loaded machine (it includes other processes' slices). Nor is one
// run's CPU time on a virtual machine that does not account steal time, as these do: the slices
// the hypervisor gave other guests count as the thread's own. Of 200,000 runs of a 16 us loop on
// a loaded CI machine, 64 read over 100 us of CPU time and one 27 ms; charged to board time, one
// such read expires the controller's 200 us host watchdog in the middle of a failover. The noise
// only ever adds, so the least of a few runs is the cost (docs/failover.md, "host compute").
template <class F>
uint64_t least_cpu_ns(F&& f, int runs = 3, const std::function<uint64_t()>& cpu_ns = thread_cpu_ns) {
  if (runs < 1) throw std::invalid_argument("least_cpu_ns: runs must be at least 1");
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < runs; ++i) {
    const uint64_t t0 = cpu_ns();
    f();
    const uint64_t t1 = cpu_ns();
    least = std::min(least, t1 > t0 ? t1 - t0 : 0);
  }
  return std::max<uint64_t>(least, 1);
}

template <class F>
uint64_t Clock::charge_compute(F&& f) {
  if (!charges_compute()) {
    f();
    return 0;
  }
  const uint64_t ns = least_cpu_ns(f);
  charge_ns(ns);
  return ns;
}

// Per-attempt timeout for waiting `ns` of simulated time: the emulator runs slower than real
// time, so give it generously long (and never less than the client's usual timeout).
std::chrono::milliseconds time_control_timeout(const Client& c, uint64_t ns);

}  // namespace mxtb::host::fabric
