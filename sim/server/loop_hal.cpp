#include "sim/server/loop_hal.h"

#include <fmt/format.h>

#include <cmath>

namespace mxtb::sim {

AxilResult LoopHal::transact() {
  while (!sim_.bus_result_ready()) sim_.step(1000);
  return *sim_.take_bus_result();
}

uint32_t LoopHal::read32(uint32_t addr) {
  sim_.start_read(addr);
  AxilResult r = transact();
  if (r.resp != 0) throw firmware::BusError(fmt::format("firmware read of {:#06x}: bus error {}", addr, r.resp), addr, r.resp);
  return r.data;
}

void LoopHal::write32(uint32_t addr, uint32_t value) {
  sim_.start_write(addr, value);
  AxilResult r = transact();
  if (r.resp != 0) throw firmware::BusError(fmt::format("firmware write of {:#06x}: bus error {}", addr, r.resp), addr, r.resp);
}

void LoopHal::run_until_cycle(uint64_t cycle) {
  while (sim_.cycle() < cycle) sim_.step(cycle - sim_.cycle());
}

bool LoopHal::wait_irq(uint64_t timeout_ns) {
  if (sim_.irq()) return true;
  const uint64_t until = sim_.cycle() + static_cast<uint64_t>(std::ceil(static_cast<double>(timeout_ns) / sim_.period_ns()));
  while (sim_.cycle() < until) {
    sim_.step(until - sim_.cycle());
    if (sim_.irq()) return true;
  }
  return sim_.irq();
}

uint64_t LoopHal::now_ns() { return static_cast<uint64_t>(std::llround(sim_.now_ns())); }

void LoopHal::compute(uint64_t ns) {
  run_until_cycle(sim_.cycle() + static_cast<uint64_t>(std::ceil(static_cast<double>(ns) / sim_.period_ns())));
}

}  // namespace mxtb::sim
