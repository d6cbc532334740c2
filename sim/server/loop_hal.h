// The firmware's HAL (firmware/hal.h) on the emulated server's plain loop, without SystemC: what
// benchmarks and tests run the firmware on.
#pragma once

#include "firmware/hal.h"
#include "sim/server/server_sim.h"

#include <cstdint>

namespace mxtb::sim {

// The firmware's HAL on a plain loop (no SystemC): every access is an AXI4-Lite transaction on
// the controller at its cycle cost, waits and computations step the server. Time is the server's.
class LoopHal : public firmware::Hal {
 public:
  explicit LoopHal(ServerSim& sim) : sim_(sim) {}
  uint32_t read32(uint32_t addr) override;
  void write32(uint32_t addr, uint32_t value) override;
  bool wait_irq(uint64_t timeout_ns) override;
  uint64_t now_ns() override;
  void compute(uint64_t ns) override;

 private:
  AxilResult transact();
  void run_until_cycle(uint64_t cycle);
  ServerSim& sim_;
};

}  // namespace mxtb::sim
