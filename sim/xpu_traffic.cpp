#include "xpu_traffic.h"

#include <fmt/format.h>

namespace mxtb::sim {

namespace {
uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t message_word(uint64_t stream_seed, uint64_t msg, uint32_t word) {
  if (word == 0) return msg ^ mix(stream_seed);
  return mix(mix(stream_seed ^ mix(msg)) + word);
}

uint32_t message_length(uint64_t stream_seed, uint64_t msg, uint32_t min_words, uint32_t max_words) {
  uint64_t span = uint64_t{max_words} - min_words + 1;
  return min_words + static_cast<uint32_t>(mix(stream_seed * 31 + msg) % span);
}

TrafficSource::TrafficSource(uint64_t stream_seed, const TrafficConfig& cfg, uint64_t rng_seed)
    : seed_(stream_seed), cfg_(cfg), rng_(rng_seed) {}

TrafficSource::Drive TrafficSource::drive() {
  if (!in_msg_) {
    bool limit = cfg_.max_messages != 0 && msg_ >= cfg_.max_messages;
    if (stopped_ || limit) return {false, 0, false};
    if (cfg_.load < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng_) >= cfg_.load)
      return {false, 0, false};
    in_msg_ = true;
    word_ = 0;
    len_ = message_length(seed_, msg_, cfg_.min_words, cfg_.max_words);
  }
  return {true, message_word(seed_, msg_, word_), word_ + 1 == len_};
}

void TrafficSource::fire() {
  ++words_;
  if (++word_ == len_) {
    in_msg_ = false;
    ++msg_;
    ++sent_;
  }
}

Scoreboard::Scoreboard(uint64_t stream_seed, const TrafficConfig& cfg, uint64_t rng_seed)
    : seed_(stream_seed), cfg_(cfg), rng_(rng_seed) {}

bool Scoreboard::ready() {
  return cfg_.rx_ready >= 1.0 || std::uniform_real_distribution<double>(0, 1)(rng_) < cfg_.rx_ready;
}

void Scoreboard::resync(uint64_t stream_seed) {
  seed_ = stream_seed;
  resyncing_ = true;
  at_message_start_ = false;
  ++resyncs_;
}

void Scoreboard::deliver(uint64_t data, bool last, uint64_t cycle) {
  if (resyncing_) {
    if (!at_message_start_) {
      ++skipped_;
      at_message_start_ = last;
      return;
    }
    resyncing_ = false;
    msg_ = data ^ mix(seed_);
    word_ = 0;
  }
  uint32_t len = message_length(seed_, msg_, cfg_.min_words, cfg_.max_words);
  uint64_t want = message_word(seed_, msg_, word_);
  bool want_last = word_ + 1 == len;
  ++words_;
  if (data != want || last != want_last) {
    if (errors_++ == 0) {
      first_error_ = fmt::format(
          "cycle {}: message {} word {}: got {:#018x} last={}, expected {:#018x} last={}", cycle,
          msg_, word_, data, last, want, want_last);
    }
    // Resynchronize on the received end of message so one fault is not reported a thousand times.
    if (last) {
      ++msg_;
      word_ = 0;
    }
    return;
  }
  if (want_last) {
    ++msg_;
    ++messages_;
    word_ = 0;
  } else {
    ++word_;
  }
}

}  // namespace mxtb::sim
