#include "sim/link/lane_channel.h"

#include <stdexcept>
#include <string>

namespace mxtb::sim {

namespace {
using u128 = unsigned __int128;
constexpr u128 kMask66 = (u128{1} << 66) - 1;

u128 to_bits(const Raw66& r) { return (u128{r.hi} << 64) | r.lo; }
Raw66 from_bits(u128 b) {
  return Raw66{static_cast<uint64_t>(b), static_cast<uint8_t>((b >> 64) & 3u)};
}
}  // namespace

LaneChannel::LaneChannel(const LaneChannelConfig& cfg) : cfg_(cfg), rng_(cfg.seed), errors_(rng_) {
  if (cfg.latency_cycles < 1)
    throw std::invalid_argument("lane channel: latency_cycles must be >= 1");
  if (cfg.bit_offset > 65)
    throw std::invalid_argument("lane channel: bit_offset must be 0..65, got " +
                                std::to_string(cfg.bit_offset));
  if (!(cfg.erasure_rate >= 0.0 && cfg.erasure_rate <= 1.0))
    throw std::invalid_argument("lane channel: erasure_rate must be in [0, 1]");
  line_.assign(cfg.latency_cycles, Slot{Raw66{}, false});
  set_ber(cfg.ber);
}

void BitErrors::set_ber(double ber) {
  if (!(ber >= 0.0 && ber < 1.0)) throw std::invalid_argument("ber (bit error rate) must be in [0, 1), got " + std::to_string(ber));
  ber_ = ber;
  bits_to_next_error_ = ber > 0.0 ? std::geometric_distribution<uint64_t>(ber)(rng_) : UINT64_MAX;
}

Raw66 BitErrors::apply(Raw66 w) {
  if (ber_ <= 0.0) return w;
  u128 bits = to_bits(w);
  uint64_t pos = 0;
  while (bits_to_next_error_ < 66 - pos) {
    pos += bits_to_next_error_;
    bits ^= u128{1} << pos;
    ++flipped_;
    ++pos;
    bits_to_next_error_ = std::geometric_distribution<uint64_t>(ber_)(rng_);
  }
  bits_to_next_error_ -= 66 - pos;
  return from_bits(bits);
}

void LaneChannel::set_ber(double ber) {
  errors_.set_ber(ber);
  cfg_.ber = ber;
}

Raw66 LaneChannel::corrupt(Raw66 w) {
  if (cfg_.erasure_rate > 0.0 && std::uniform_real_distribution<double>(0, 1)(rng_) < cfg_.erasure_rate) {
    ++stats_.erasures;
    return from_bits((u128{rng_()} << 64 | rng_()) & kMask66);
  }
  Raw66 out = errors_.apply(w);
  stats_.bits_flipped = errors_.flipped();
  return out;
}

LaneChannel::Output LaneChannel::step(const Raw66& in, bool laser_on) {
  Slot out = line_[head_];
  line_[head_] = Slot{in, laser_on};
  head_ = (head_ + 1) % line_.size();
  ++stats_.words;

  bool light = out.light && !dark_;
  if (!light) {
    if (dark_) ++stats_.dark_cycles;
    prev_bits_ = 0;
    return Output{Raw66{}, false};
  }
  u128 bits = to_bits(out.raw);
  if (cfg_.bit_offset != 0) {
    u128 shifted = ((bits << cfg_.bit_offset) | (prev_bits_ >> (66 - cfg_.bit_offset))) & kMask66;
    prev_bits_ = bits;
    bits = shifted;
  }
  return Output{corrupt(from_bits(bits)), true};
}

}  // namespace mxtb::sim
