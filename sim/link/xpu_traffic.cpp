#include "sim/link/xpu_traffic.h"

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

// message_word() and message_length() of one message, with what every word shares computed once.
MessageWords::MessageWords(uint64_t stream_seed, uint64_t msg, uint32_t min_words, uint32_t max_words)
    : seed_(stream_seed),
      msg_(msg),
      first_(msg ^ mix(stream_seed)),
      key_(mix(stream_seed ^ mix(msg))),
      length_(message_length(stream_seed, msg, min_words, max_words)) {}

uint64_t MessageWords::word(uint32_t w) const { return w == 0 ? first_ : mix(key_ + w); }

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
  if (!cache_ || !cache_->is(seed_, msg_)) cache_.emplace(seed_, msg_, cfg_.min_words, cfg_.max_words);
  return {true, cache_->word(word_), word_ + 1 == len_};
}

void TrafficSource::fire() {
  ++words_;
  if (++word_ == len_) {
    in_msg_ = false;
    ++msg_;
    ++sent_;
  }
}

void TrafficSource::save(Checkpoint& c) const {
  c.in_msg = in_msg_;
  c.stopped = stopped_;
  c.msg = msg_;
  c.word = word_;
  c.len = len_;
  c.sent = sent_;
  c.words = words_;
  if (cfg_.load < 1.0) c.rng = rng_;
}

void TrafficSource::restore(const Checkpoint& c) {
  in_msg_ = c.in_msg;
  stopped_ = c.stopped;
  msg_ = c.msg;
  word_ = c.word;
  len_ = c.len;
  sent_ = c.sent;
  words_ = c.words;
  if (c.rng) rng_ = *c.rng;
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
  if (skipping_) {  // a message delivered again, to its end
    ++skipped_;
    skipping_ = !last;
    return;
  }
  if (!cache_ || !cache_->is(seed_, msg_)) cache_.emplace(seed_, msg_, cfg_.min_words, cfg_.max_words);
  ++words_;
  if (data != cache_->word(word_)) {
    const std::optional<uint64_t> named = named_message(data);
    if (named && *named < msg_) {
      error(cycle, fmt::format("message {} word {}: got message {}'s first word again", msg_, word_, *named));
      skipping_ = !last;
      return;
    }
    if (named) {
      // Messages lost (the one in progress cut short if words of it came): one error, their words
      // counted, and this word checked as the first of the message it names.
      uint64_t lost = cache_->length() - word_;
      for (uint64_t m = msg_ + 1; m < *named; ++m) lost += message_length(seed_, m, cfg_.min_words, cfg_.max_words);
      error(cycle, fmt::format("message {} word {}: got message {}'s first word: {} words of {} messages lost", msg_, word_,
                               *named, lost, *named - msg_));
      messages_lost_ += *named - msg_;
      words_lost_ += lost;
      msg_ = *named;
      word_ = 0;
      cache_.emplace(seed_, msg_, cfg_.min_words, cfg_.max_words);
    }
  }
  const uint32_t len = cache_->length();
  const uint64_t want = cache_->word(word_);
  const bool want_last = word_ + 1 == len;
  if (data != want || last != want_last) {
    error(cycle, fmt::format("message {} word {}: got {:#018x} last={}, expected {:#018x} last={}", msg_, word_, data, last,
                             want, want_last));
    // A corrupted word is one error: the next is checked as the word after it, and the received
    // end of message ends the expected one, so that one fault is not reported a thousand times.
    if (last) {
      ++msg_;
      word_ = 0;
    } else if (word_ + 1 < len) {
      ++word_;
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

// A gap longer than this is taken for corruption: a random word names a message this close to
// the expected one with probability 2^-43.
constexpr uint64_t kMaxGap = uint64_t{1} << 20;

std::optional<uint64_t> Scoreboard::named_message(uint64_t data) const {
  const uint64_t named = data ^ mix(seed_);
  const uint64_t distance = named > msg_ ? named - msg_ : msg_ - named;
  if (named == msg_ || distance > kMaxGap) return std::nullopt;
  return named;
}

void Scoreboard::error(uint64_t cycle, const std::string& what) {
  if (errors_++ == 0) first_error_ = fmt::format("cycle {}: {}", cycle, what);
}

}  // namespace mxtb::sim

namespace mxtb::sim {

void Scoreboard::save(Checkpoint& c) const {
  c.resyncing = resyncing_;
  c.skipping = skipping_;
  c.at_message_start = at_message_start_;
  c.resyncs = resyncs_;
  c.skipped = skipped_;
  c.seed = seed_;
  c.msg = msg_;
  c.word = word_;
  c.messages = messages_;
  c.words = words_;
  c.errors = errors_;
  c.messages_lost = messages_lost_;
  c.words_lost = words_lost_;
  c.first_error = first_error_;
  if (cfg_.rx_ready < 1.0) c.rng = rng_;
}

void Scoreboard::restore(const Checkpoint& c) {
  resyncing_ = c.resyncing;
  skipping_ = c.skipping;
  at_message_start_ = c.at_message_start;
  resyncs_ = c.resyncs;
  skipped_ = c.skipped;
  seed_ = c.seed;
  msg_ = c.msg;
  word_ = c.word;
  messages_ = c.messages;
  words_ = c.words;
  errors_ = c.errors;
  messages_lost_ = c.messages_lost;
  words_lost_ = c.words_lost;
  first_error_ = c.first_error;
  if (c.rng) rng_ = *c.rng;
}

}  // namespace mxtb::sim
