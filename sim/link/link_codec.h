// Software reference of the lane link layer's coding: CRC-32, the x^58+x^39+1 scrambler, 66b
// lane words and control blocks. Written bit-serially and byte-wise, independently of the RTL's
// XOR masks, so the RTL can be checked against it; also used by test drivers that speak to an
// endpoint block by block. Formats: docs/link-layer.md and docs/generated/link-defs.md.
#pragma once

#include <mxtb/link_defs.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mxtb::sim {

// 66 bits of lane, bit 0 first in time: bits 1:0 the sync header, bits 65:2 the payload.
struct Raw66 {
  uint64_t lo = 0;  // bits 63:0
  uint8_t hi = 0;   // bits 65:64

  static Raw66 block(uint8_t sync, uint64_t payload) {
    return Raw66{(payload << 2) | (sync & 3u), static_cast<uint8_t>(payload >> 62)};
  }
  uint8_t sync() const { return lo & 3u; }
  uint64_t payload() const { return (lo >> 2) | (uint64_t{hi} << 62); }
  bool operator==(const Raw66& o) const { return lo == o.lo && hi == o.hi; }
  bool operator!=(const Raw66& o) const { return !(*this == o); }
};

// A lane's identity: which XPU, which of its lanes.
struct EndpointIdentity {
  uint16_t xpu = 0;
  uint8_t lane = 0;
};

// zlib/Ethernet CRC-32 of a byte string (init all ones, final inversion).
uint32_t crc32(const uint8_t* data, size_t len);
// The raw CRC register advanced over one 64-bit word (little-endian bytes), no inversions:
// the function the RTL's crc32_d64 computes.
uint32_t crc32_advance(uint32_t state, uint64_t word);

// Bit-serial self-synchronizing scrambler/descrambler; bit 0 of a word is first in time.
class Scrambler58 {
 public:
  explicit Scrambler58(uint64_t state = (uint64_t{1} << 58) - 1) : state_(state) {}
  uint64_t scramble(uint64_t plain);
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;  // last 58 scrambled bits, bit 57 newest
};

class Descrambler58 {
 public:
  explicit Descrambler58(uint64_t state = 0) : state_(state) {}
  uint64_t descramble(uint64_t line);

 private:
  uint64_t state_;
};

// Control-block payload with its 24-bit check (bits 63:40). Every type but Idle, TS1 and TS2 is
// bound to its sender: the check covers the sender's identity in the word's top 24 bits.
bool ctl_bound(link::CtlType type);
uint64_t make_ctl(link::CtlType type, uint32_t fields, EndpointIdentity sender = {});
struct Ctl {
  link::CtlType type;
  uint32_t fields;  // bits 39:8
};
// nullopt when the check fails (for bound types: also when `sender` did not send it) or the type
// is unknown.
std::optional<Ctl> parse_ctl(uint64_t payload, EndpointIdentity sender = {});

// Plain-text blocks of one frame: SOF, the payload words, EOF with the frame CRC, which starts
// from the SOF's word with the sender's identity in its top 24 bits.
struct Block {
  uint8_t sync;
  uint64_t payload;
};
std::vector<Block> encode_frame(uint16_t seq, const std::vector<uint64_t>& words, bool eom, EndpointIdentity sender);

}  // namespace mxtb::sim
