// The emulator's event queue (emu.EVENT_*): entries kept in time order, at most kDepth of them;
// later ones are dropped and counted. Its sources (links, the controller's log as the firmware
// popped it, the firmware's failovers, faults fired, the tenant's job) are the block's
// (emu_block.h), which stamps and pushes their entries.
#pragma once

#include <mxtb/emu_regs.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>

namespace mxtb::sim {

// One entry (EVENT_HEAD).
struct EmuEventEntry {
  uint64_t time_ns;
  uint32_t info;  // kind 7:0, a 15:8, b 23:16, c 31:24
  uint32_t data;
};

inline uint32_t event_info(emu::EmuEvent kind, uint32_t a, uint32_t b, uint32_t c) {
  return static_cast<uint32_t>(kind) | (a & 0xFF) << 8 | (b & 0xFF) << 16 | (c & 0xFF) << 24;
}

class EventQueue {
 public:
  static constexpr size_t kDepth = 65536;

  void push(double t_ns, uint32_t info, uint32_t data) {
    if (events_.size() >= kDepth) {
      ++dropped_;
      return;
    }
    EmuEventEntry e{static_cast<uint64_t>(std::llround(t_ns)), info, data};
    // Sources report late (links are collected after each run): keep the queue in time order.
    auto it = events_.end();
    while (it != events_.begin() && std::prev(it)->time_ns > e.time_ns) --it;
    events_.insert(it, e);
  }
  // Removes the n oldest (fewer when fewer are queued).
  void pop(uint32_t n) {
    for (uint32_t i = 0; i < n && !events_.empty(); ++i) events_.pop_front();
  }
  bool empty() const { return events_.empty(); }
  size_t size() const { return events_.size(); }
  const EmuEventEntry& front() const { return events_.front(); }
  uint32_t dropped() const { return dropped_; }

 private:
  std::deque<EmuEventEntry> events_;
  uint32_t dropped_ = 0;
};

}  // namespace mxtb::sim
