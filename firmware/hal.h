// The firmware's hardware abstraction: all it may do to the world. On the board these are a
// soft processor's bus accesses and interrupt line; in the emulator (sim/server/server_sc.h) every
// access is an AXI4-Lite transaction on the verilated controller with its cycle cost, and time is
// simulated time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mxtb::firmware {

// An access the controller answered with an error response (SLVERR, DECERR): a write it refused
// changed nothing. The firmware handles the ones the register map documents (a commit or its
// staging refused while the controller is busy or safe) and lets any other reach its caller.
struct BusError : std::runtime_error {
  BusError(const std::string& what, uint32_t addr, uint32_t resp) : std::runtime_error(what), addr(addr), resp(resp) {}
  uint32_t addr;
  uint32_t resp;  // the AXI response code
};

class Hal {
 public:
  virtual ~Hal() = default;
  // Both throw BusError when the controller answers with an error response.
  virtual uint32_t read32(uint32_t addr) = 0;
  virtual void write32(uint32_t addr, uint32_t value) = 0;
  // Returns true when the controller's interrupt line is high, false after timeout_ns without it.
  virtual bool wait_irq(uint64_t timeout_ns) = 0;
  virtual uint64_t now_ns() = 0;
  // Charges the processor time of a computation (the emulator cannot measure a soft core's).
  virtual void compute(uint64_t ns) = 0;
};

}  // namespace mxtb::firmware
