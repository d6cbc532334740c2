#include "sim/server/server_sc.h"

#include "sim/common/sc_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

using sc_core::sc_time;
using sc_core::SC_NS;

ServerClock::ServerClock(sc_core::sc_module_name name, ServerSim& sim, uint64_t max_batch)
    : sc_module(name), sim_(sim), max_batch_(std::max<uint64_t>(1, max_batch)), period_(sim.period_ns(), SC_NS) {
  SC_THREAD(run);
}

void ServerClock::run() {
  // Guarded: a failed RTL assertion in step() stops the simulation and reaches the caller of
  // sc_start() as itself (rethrow_process_error), not as SystemC's report of an uncaught exception.
  guard_process([this] {
    for (;;) {
      // Whatever else is due at this instant (the firmware's next access, a fault) goes first. In a
      // rack several clocks share the kernel, and each one's yield is the others' pending activity:
      // there a clock yields a few delta cycles only, which is what its firmware needs to react
      // (woken one delta after the batch, it starts its access in the same delta).
      for (int yields = 0; sc_core::sc_pending_activity_at_current_time() && (!window_ || yields < kRackYields); ++yields)
        wait(sc_core::SC_ZERO_TIME);
      while (held_) wait(resume_);
      if (done_ && done_()) {
        sc_core::sc_stop();
        return;
      }
      uint64_t wanted = max_batch_;
      if (window_) {
        if (sim_.cycle() >= window_->end) {
          ++window_->arrived;
          window_->arrival.notify(sc_core::SC_ZERO_TIME);
          wait(window_->opened);
          continue;
        }
        wanted = std::min(wanted, window_->end - sim_.cycle());
      }
      uint64_t ran = sim_.step(next_batch(period_, wanted, window_ ? kRackYields : -1));
      wait(period_ * static_cast<double>(ran));
      if (sim_.bus_result_ready()) bus_event_.notify(sc_core::SC_ZERO_TIME);
      if (sim_.irq_rose()) irq_event_.notify(sc_core::SC_ZERO_TIME);
      if (sim_.link_changed()) link_event_.notify(sc_core::SC_ZERO_TIME);
      if (sim_.board_event()) board_event_.notify(sc_core::SC_ZERO_TIME);
    }
  });
}

AxilResult ScHal::transact() {
  while (!sim_.bus_result_ready()) sc_core::wait(clock_.bus_event());
  auto r = sim_.take_bus_result();
  bus_cycles_ += r->cycles;
  if (r->resp != 0) ++bus_errors_;
  return *r;
}

uint32_t ScHal::read32(uint32_t addr) {
  clock_.bus_mutex().lock();
  sim_.start_read(addr);
  AxilResult r = transact();
  clock_.bus_mutex().unlock();
  if (r.resp != 0) throw firmware::BusError(fmt::format("firmware read of {:#06x}: bus error {}", addr, r.resp), addr, r.resp);
  return r.data;
}

void ScHal::write32(uint32_t addr, uint32_t value) {
  clock_.bus_mutex().lock();
  sim_.start_write(addr, value);
  AxilResult r = transact();
  clock_.bus_mutex().unlock();
  if (r.resp != 0) throw firmware::BusError(fmt::format("firmware write of {:#06x}: bus error {}", addr, r.resp), addr, r.resp);
}

bool ScHal::wait_irq(uint64_t timeout_ns) {
  if (sim_.irq()) return true;
  if (timeout_ns == 0) return false;
  sc_core::wait(sc_time(static_cast<double>(timeout_ns), SC_NS), clock_.irq_event());
  return sim_.irq();
}

uint64_t ScHal::now_ns() { return static_cast<uint64_t>(sc_core::sc_time_stamp().to_seconds() * 1e9 + 0.5); }

void ScHal::compute(uint64_t ns) {
  if (ns) sc_core::wait(sc_time(static_cast<double>(ns), SC_NS));
}

}  // namespace mxtb::sim
