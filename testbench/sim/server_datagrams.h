// IPbus datagrams through the emulated server's board top (ServerSim::start_datagram), as the
// emulator sends them, for the server's tests: packets built word by word, one run to its outcome,
// the emulator's block answered by a function after a delay in clocks.
#pragma once

#include "sim/server/server_sim.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace mxtb::sim::test {

// IPbus 2.0 words (big-endian on the wire): a control packet header (id 0: no resend buffer), a
// transaction header, with info code Request.
inline uint32_t control_header(uint32_t id = 0) { return 0x200000F0u | (id & 0xFFFF) << 8; }
inline uint32_t tx_header(uint32_t type, uint32_t words, uint32_t id) { return 0x2000000Fu | (id & 0xFFF) << 16 | (words & 0xFF) << 8 | (type & 0xF) << 4; }
enum TxCode : uint32_t { kRead = 0, kWrite = 1, kNonIncRead = 2, kNonIncWrite = 3, kRmwBits = 4, kRmwSum = 5 };

inline std::vector<uint8_t> to_bytes(const std::vector<uint32_t>& words) {
  std::vector<uint8_t> b;
  for (uint32_t w : words)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(w >> s));
  return b;
}
inline std::vector<uint32_t> to_words(const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> w;
  for (size_t i = 0; i + 3 < bytes.size(); i += 4)
    w.push_back(uint32_t{bytes[i]} << 24 | uint32_t{bytes[i + 1]} << 16 | uint32_t{bytes[i + 2]} << 8 | bytes[i + 3]);
  return w;
}

struct EmulatorBlock {
  uint64_t delay_cycles = 0;  // clocks the server runs before the answer
  std::function<std::pair<bool, uint32_t>(const EmuAccess&)> answer = [](const EmuAccess& a) {
    return std::pair<bool, uint32_t>{true, a.write ? 0u : 0xE0000000u | a.offset};
  };
};

// Starts the datagram at the server's current clock and runs the server until its outcome.
inline DatagramOutcome run_datagram(ServerSim& sim, const std::vector<uint8_t>& datagram, const EmulatorBlock& emu = {},
                                    uint64_t bound = 1'000'000) {
  sim.start_datagram(datagram);
  const uint64_t start = sim.cycle();
  for (;;) {
    if (sim.cycle() - start > bound) throw std::runtime_error("run_datagram: no outcome within the bound");
    sim.step(bound);
    if (auto o = sim.take_datagram_outcome()) return *o;
    if (const auto& a = sim.emulator_access()) {
      const EmuAccess access = *a;
      const uint64_t until = sim.cycle() + emu.delay_cycles;
      while (sim.cycle() < until) sim.step(until - sim.cycle());
      const auto [ok, data] = emu.answer(access);
      sim.answer_emulator(ok, data);
    }
  }
}

}  // namespace mxtb::sim::test
