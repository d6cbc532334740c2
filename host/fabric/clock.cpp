#include "host/fabric/clock.h"

#include "protocol/board_map.h"

#include <algorithm>
#include <ctime>
#include <thread>

namespace mxtb::host::fabric {

namespace er = mxtb::emu::reg;
using protocol::emulator;

uint64_t WallClock::now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
}

void WallClock::wait_ns(uint64_t ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool is_emulator(Client& c) {
  try {
    return c.read(emulator(er::id::kOffset)) == er::id::kReset;
  } catch (const TransactionError&) {
    return false;
  }
}

EmulatorClock::EmulatorClock(Client& c) : c_(c) {
  if (!is_emulator(c)) throw std::runtime_error(c.target() + " has no emulator control block: it is no mxtb emulator");
  auto m = mxtb::emu::to_time_mode(c.read(emulator(er::time_mode::kOffset)) & er::time_mode::kModeMask);
  mode_ = m ? (*m == mxtb::emu::TimeMode::Lockstep ? "lockstep" : *m == mxtb::emu::TimeMode::Paced ? "paced" : "free") : "?";
  lockstep_ = m == mxtb::emu::TimeMode::Lockstep;
}

uint64_t EmulatorClock::now_ns() {
  auto w = c_.read_block(emulator(er::time_ns_lo::kOffset), 2);
  return uint64_t{w[0]} | uint64_t{w[1]} << 32;
}

void EmulatorClock::wait_ns(uint64_t ns) {
  // In pieces, so that every request finishes within a bounded wall time and a lost reply costs
  // one piece.
  while (ns > 0) {
    uint32_t step = static_cast<uint32_t>(std::min<uint64_t>(ns, kTimeControlStepNs));
    c_.queue_write(emulator(er::advance_ns::kOffset), {step});
    c_.dispatch(time_control_timeout(c_, step));
    ns -= step;
  }
}

void EmulatorClock::charge_ns(uint64_t ns) {
  if (lockstep_) wait_ns(ns);
}

std::unique_ptr<Clock> make_clock(Client& c) {
  if (is_emulator(c)) return std::make_unique<EmulatorClock>(c);
  return std::make_unique<WallClock>();
}

std::chrono::milliseconds time_control_timeout(const Client& c, uint64_t ns) {
  // The emulated server runs 0.1-0.4 ms of simulated time per wall second here (traced models
  // for waveforms about a third as fast): allow 1 ms of wall per 10 ns, at least the usual timeout.
  auto wall = std::chrono::milliseconds(ns / 10 + 1);
  return std::max(wall, c.options().timeout);
}

}  // namespace mxtb::host::fabric
