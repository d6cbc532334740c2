// One direction of an optical lane between two link endpoints: latency, a bit offset (the
// receiver's block boundary is unknown), random bit errors, block erasures, and dark windows
// in which no light arrives. Plain C++, advanced one cycle at a time by the harness.
#pragma once

#include "sim/link/link_codec.h"

#include <cstdint>
#include <random>
#include <vector>

namespace mxtb::sim {

// Independent bit errors at a rate, placed by drawing the gap to the next error so that a clean
// lane costs nothing per word. Shared by the link pair's lanes and the server's lanes.
class BitErrors {
 public:
  // Draws from `rng`, which must outlive this.
  explicit BitErrors(std::mt19937_64& rng) : rng_(rng) {}
  void set_ber(double ber);  // [0, 1); throws std::invalid_argument otherwise
  double ber() const { return ber_; }
  Raw66 apply(Raw66 w);
  uint64_t flipped() const { return flipped_; }

 private:
  double ber_ = 0.0;
  std::mt19937_64& rng_;
  uint64_t bits_to_next_error_ = UINT64_MAX;
  uint64_t flipped_ = 0;
};

struct LaneChannelConfig {
  uint32_t latency_cycles = 4;  // >= 1: what is sent in cycle t arrives in cycle t + latency
  uint32_t bit_offset = 0;      // 0..65: shift of the bit stream against the 66-bit words
  double ber = 0.0;             // probability that each bit is flipped
  double erasure_rate = 0.0;    // probability that a 66-bit word arrives as random bits
  uint64_t seed = 1;
};

struct LaneChannelStats {
  uint64_t words = 0;
  uint64_t bits_flipped = 0;
  uint64_t erasures = 0;
  uint64_t dark_cycles = 0;
};

class LaneChannel {
 public:
  explicit LaneChannel(const LaneChannelConfig& cfg);
  LaneChannel(const LaneChannel&) = delete;  // errors_ draws from rng_
  LaneChannel& operator=(const LaneChannel&) = delete;

  struct Output {
    Raw66 raw;
    bool signal_detect;
  };
  // Takes what the transmitter drives this cycle, returns what the receiver sees this cycle.
  Output step(const Raw66& in, bool laser_on);

  // Fault injection: while dark, no light arrives whatever is sent.
  void set_dark(bool dark) { dark_ = dark; }
  bool dark() const { return dark_; }
  void set_ber(double ber);
  const LaneChannelConfig& config() const { return cfg_; }
  const LaneChannelStats& stats() const { return stats_; }

 private:
  struct Slot {
    Raw66 raw;
    bool light;
  };
  Raw66 corrupt(Raw66 w);

  LaneChannelConfig cfg_;
  std::vector<Slot> line_;
  size_t head_ = 0;
  unsigned __int128 prev_bits_ = 0;
  bool dark_ = false;
  std::mt19937_64 rng_;
  BitErrors errors_;
  LaneChannelStats stats_;
};

}  // namespace mxtb::sim
