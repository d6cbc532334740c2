// The emulated server under SystemC, with the controller firmware running inside the simulation.
// As for the link pair, simulated time is the master clock and one thread advances the RTL in
// batches; a batch also ends the clock a bus transaction completes or the controller's interrupt
// rises, so the firmware's thread sees every access cost its cycles and wakes on the right clock.
#pragma once

#include "firmware/hal.h"
#include "sim/server/server_sim.h"

#include <systemc>

#include <cstdint>
#include <functional>

namespace mxtb::sim {

class ServerClock : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ServerClock);
  ServerClock(sc_core::sc_module_name name, ServerSim& sim, uint64_t max_batch = 1000);
  sc_core::sc_time period() const { return period_; }
  const sc_core::sc_event& irq_event() const { return irq_event_; }
  const sc_core::sc_event& bus_event() const { return bus_event_; }
  const sc_core::sc_event& link_event() const { return link_event_; }  // a link changed state
  const sc_core::sc_event& board_event() const { return board_event_; }  // ServerSim::board_event
  void stop_when(std::function<bool()> done) { done_ = std::move(done); }
  // Lockstep: while the host is between requests the kernel pauses, and a batch started then
  // would compute the server up to max_batch cycles ahead of simulated time, so the next request
  // would meet it late. hold() (from a process, before it pauses the kernel) keeps the next batch
  // from starting; release() (before the kernel runs again) lets it go.
  void hold() { held_ = true; }
  void release() {
    held_ = false;
    resume_.notify(sc_core::SC_ZERO_TIME);
  }
  // One bus master at a time: the firmware and a host both reach the controller's one AXI port.
  sc_core::sc_mutex& bus_mutex() { return bus_mutex_; }

  // In a rack (sim/rack/rack_sim.h) the server may not run past the end of the rack's window until
  // the window's fibre samples are exchanged: reaching `window.end`, the clock counts itself in
  // `window.arrived`, notifies `window.arrival` and waits for `window.opened`.
  struct Window {
    uint64_t end = 0;
    int arrived = 0;
    sc_core::sc_event arrival, opened;
  };
  void bound_by(Window* w) { window_ = w; }
  static constexpr int kRackYields = 4;

 private:
  void run();
  ServerSim& sim_;
  uint64_t max_batch_;
  sc_core::sc_time period_;
  sc_core::sc_event irq_event_, bus_event_, link_event_, board_event_, resume_;
  bool held_ = false;
  sc_core::sc_mutex bus_mutex_;
  std::function<bool()> done_;
  Window* window_ = nullptr;
};

// The firmware's HAL in the emulator: AXI4-Lite transactions on the controller, the interrupt
// line, simulated time. Must be called from a SystemC thread.
class ScHal : public firmware::Hal {
 public:
  ScHal(ServerSim& sim, ServerClock& clock) : sim_(sim), clock_(clock) {}
  uint32_t read32(uint32_t addr) override;
  void write32(uint32_t addr, uint32_t value) override;
  bool wait_irq(uint64_t timeout_ns) override;
  uint64_t now_ns() override;
  void compute(uint64_t ns) override;
  uint64_t bus_cycles() const { return bus_cycles_; }
  uint64_t bus_errors() const { return bus_errors_; }

 private:
  AxilResult transact();
  ServerSim& sim_;
  ServerClock& clock_;
  uint64_t bus_cycles_ = 0, bus_errors_ = 0;
};

}  // namespace mxtb::sim
