// The board's IPbus side as RTL inside the emulator (`mxtb sim --ipbus-target rtl`): the verilated
// board_bus (rtl/board/board_bus.sv: the IPbus transactor, the AXI4-Lite decoder and the scratch
// RAM as a block RAM, as the board top has them) takes each datagram as an AXI4-Stream, clock by
// clock; this class is its environment: the UDP core's stream in and out, and the slaves behind
// its two ports out, the controller's register slave and the emulator's control block, whose
// accesses it hands to a Bus in IPbus word addresses. docs/ipbus-rtl.md ("In the emulator").
//
// Time. The board runs on its clock. It touches the rest of the emulated server only through
// those ports, so its cycles are computed ahead and paid in simulated time in one wait before
// each access that reaches the server's RTL (the Bus says which: BusResult::synced) and after the
// datagram (Outcome::unpaid_cycles); such an access's own cycles (the controller's AXI4-Lite
// handshake) pass in simulated time inside the Bus, the first of them being the cycle the board
// took the request in, and the board is clocked the rest, already paid, while it waits for the
// response: the join is cycle for cycle the board top's, where the controller sits on the same
// bus (tested against the top in rtl_board). The emulator's Bus answers the emulator-only
// control block without syncing: RUN_UNTIL may run simulated time for milliseconds, during which
// the board's clock is held, not counted against the transactor's AXI_TIMEOUT.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace mxtb::sim {

class IpbusRtlEndpoint {
 public:
  struct BusResult {
    bool ok = true;       // false: SLVERR (the transactor answers the access with a bus error)
    uint32_t data = 0;    // read data
    uint64_t cycles = 0;  // board cycles the access took, its request's cycle to its response's
    // true: the Bus advanced simulated time by unpaid_cycles, then by `cycles` with the access;
    // false: it touched nothing the server's clock runs (the emulator's block) and passed no time.
    bool synced = false;
  };
  class Bus {
   public:
    virtual ~Bus() = default;
    // One word. An access that reaches the rest of the server first advances simulated time by
    // `unpaid_cycles` board cycles (those before the cycle the board offered it in), so that it
    // starts at the board's time.
    virtual BusResult access(bool write, uint32_t word_addr, uint32_t data, uint64_t unpaid_cycles) = 0;
  };

  struct Outcome {
    std::optional<std::vector<uint8_t>> reply;  // nullopt: dropped, no reply
    uint8_t kind = 3;                           // the stat port: 0 control, 1 status, 2 resend, 3 dropped
    uint8_t fault = 15;                         // protocol/ipbus/target.h's Fault as a number, 15 none
    uint64_t cycles = 0;                        // board cycles from the first beat offered to the reply's last
    uint64_t unpaid_cycles = 0;                 // of them, still to pass in simulated time
  };

  IpbusRtlEndpoint();
  ~IpbusRtlEndpoint();
  IpbusRtlEndpoint(const IpbusRtlEndpoint&) = delete;
  IpbusRtlEndpoint& operator=(const IpbusRtlEndpoint&) = delete;

  // One datagram (1..65535 bytes) through the board's IPbus side. Throws RtlAssertionFailure when
  // one of its assertions fails, std::runtime_error naming the datagram when it does not finish within
  // `cycle_bound` clocks (a hung transactor).
  Outcome handle(const std::vector<uint8_t>& datagram, Bus& bus, uint64_t cycle_bound = 10'000'000);

  uint64_t cycle() const;  // board cycles since reset

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The transactions a control reply answers that reached the bus (success or a bus error): what
// the C++ target counts as `transactions` (protocol/ipbus/target.h).
uint32_t executed_transactions(const std::vector<uint8_t>& reply);

// Whether a request is the testbench's alone: a well-formed control packet each of whose
// transactions addresses the emulator's control block, which no board has. Such a datagram runs
// through the RTL like any other, but the emulator does not pay its board cycles in simulated
// time: on a board it would not exist (docs/ipbus-rtl.md, "In the emulator").
bool addresses_only_emulator_block(const std::vector<uint8_t>& request);

}  // namespace mxtb::sim
