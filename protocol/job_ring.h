// The tenant job's ring as the emulator's registers hold it (protocol/emu_regs.json): JOB_RING,
// 4 bits a rank in one word (8 ranks, XPUs 0..14), and JOB_RANKS, 8 bits a rank in 16 words (64
// ranks, XPUs 0..254). Rank r sits at bits (r * B) % 32 up of word r * B / 32; an entry of all
// ones ends the list. One owner for both sides: the host packs (host/fabric/board.cpp), the
// emulator unpacks (sim/emulator/emu_block.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mxtb::protocol {

// A Job event's data word (emu_regs.json, EmuEvent Job): the collective's sequence number in the
// job in 23:0, the job (JOB_SELECT) in 31:24.
constexpr uint32_t kJobEventSeqMask = 0x00FFFFFFu;
constexpr int kJobEventJobShift = 24;
constexpr uint32_t job_event_data(uint64_t seq, int job) {
  return static_cast<uint32_t>(seq & kJobEventSeqMask) | static_cast<uint32_t>(job) << kJobEventJobShift;
}
constexpr uint32_t job_event_seq(uint32_t data) { return data & kJobEventSeqMask; }
constexpr int job_event_job(uint32_t data) { return static_cast<int>(data >> kJobEventJobShift); }

// The largest XPU an entry of `bits` bits can name (all ones is the end).
constexpr int job_ring_max_xpu(int bits) { return (1 << bits) - 2; }

// `ring` in `words` words of `bits`-bit entries; the caller checks that it fits (at most
// words * 32 / bits ranks, each 0..job_ring_max_xpu(bits)).
inline std::vector<uint32_t> pack_job_ring(const std::vector<int>& ring, int bits, size_t words) {
  std::vector<uint32_t> out(words, 0xFFFFFFFFu);
  const uint32_t mask = (1u << bits) - 1;
  for (size_t r = 0; r < ring.size(); ++r) {
    uint32_t& w = out[r * static_cast<size_t>(bits) / 32];
    const unsigned shift = (r * static_cast<size_t>(bits)) % 32;
    w = (w & ~(mask << shift)) | (static_cast<uint32_t>(ring[r]) & mask) << shift;
  }
  return out;
}

// The ranks of `words` up to the first entry of all ones.
inline std::vector<int> unpack_job_ring(const uint32_t* words, size_t n_words, int bits) {
  std::vector<int> ring;
  const uint32_t mask = (1u << bits) - 1;
  for (size_t r = 0; r < n_words * 32 / static_cast<size_t>(bits); ++r) {
    const uint32_t x = (words[r * static_cast<size_t>(bits) / 32] >> ((r * static_cast<size_t>(bits)) % 32)) & mask;
    if (x == mask) break;
    ring.push_back(static_cast<int>(x));
  }
  return ring;
}

}  // namespace mxtb::protocol
