// XPU side of a lane: a traffic source that offers messages to an endpoint's tx_* interface and
// a scoreboard that checks every message delivered on the far endpoint's rx_* interface:
// exactly once, in order, every word and the end-of-message flag intact. Message n's words are a
// pure function of (stream seed, n, word index), so any loss, duplicate, reorder or corruption
// shows as a mismatch. Word 0 is n XOR a key of the stream, so a scoreboard that resynchronizes
// (its lane now carries another XPU's stream after a failover) can learn where that stream is.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace mxtb::sim {

struct TrafficConfig {
  double load = 1.0;             // probability that a new message is offered when idle
  uint32_t min_words = 1;
  uint32_t max_words = 24;       // messages longer than a link frame are split by the link
  double rx_ready = 1.0;         // probability that the receiving XPU accepts a word this cycle
  uint64_t max_messages = 0;     // 0: unlimited
};

uint64_t message_word(uint64_t stream_seed, uint64_t msg, uint32_t word);
uint32_t message_length(uint64_t stream_seed, uint64_t msg, uint32_t min_words, uint32_t max_words);

// One message's words and length as above, with the hashing they share done once.
class MessageWords {
 public:
  MessageWords(uint64_t stream_seed, uint64_t msg, uint32_t min_words, uint32_t max_words);
  bool is(uint64_t stream_seed, uint64_t msg) const { return seed_ == stream_seed && msg_ == msg; }
  uint64_t word(uint32_t w) const;
  uint32_t length() const { return length_; }

 private:
  uint64_t seed_, msg_, first_, key_;
  uint32_t length_;
};

class TrafficSource {
 public:
  TrafficSource(uint64_t stream_seed, const TrafficConfig& cfg, uint64_t rng_seed);

  struct Drive {
    bool valid;
    uint64_t data;
    bool last;
  };
  Drive drive();                   // what to put on tx_* this cycle
  void fire();                     // the endpoint accepted the driven word
  void stop() { stopped_ = true; } // offer no new message (finish the current one)
  bool in_message() const { return in_msg_; }  // words of a message accepted, its last not yet
  uint64_t messages_sent() const { return sent_; }
  uint64_t words_sent() const { return words_; }

  // The state a rollback must restore (the fast server engine's speculative windows); the
  // generator only when it is drawn from (a load below 1), since copying it costs 2.5 KB.
  struct Checkpoint {
    bool in_msg, stopped;
    uint64_t msg;
    uint32_t word, len;
    uint64_t sent, words;
    std::optional<std::mt19937_64> rng;
  };
  void save(Checkpoint& c) const;
  void restore(const Checkpoint& c);

 private:
  uint64_t seed_;
  TrafficConfig cfg_;
  std::mt19937_64 rng_;
  bool in_msg_ = false;
  bool stopped_ = false;
  uint64_t msg_ = 0;
  uint32_t word_ = 0, len_ = 0;
  uint64_t sent_ = 0, words_ = 0;
  std::optional<MessageWords> cache_;  // the current message's
};

class Scoreboard {
 public:
  Scoreboard(uint64_t stream_seed, const TrafficConfig& cfg, uint64_t rng_seed);
  bool ready();                                   // rx_ready this cycle
  void deliver(uint64_t data, bool last, uint64_t cycle);  // rx_valid && rx_ready
  uint64_t messages() const { return messages_; }
  uint64_t words() const { return words_; }
  uint64_t errors() const { return errors_; }
  // Messages that never arrived, and their words (with the rest of one cut short): a later
  // message's first word where another word was expected names how many went missing; the gap
  // counts as one error and checking goes on strictly from the message that arrived. An earlier
  // message's first word (one delivered again) is one error, and that message is skipped.
  uint64_t messages_lost() const { return messages_lost_; }
  uint64_t words_lost() const { return words_lost_; }
  const std::string& first_error() const { return first_error_; }

  // The lane now carries `stream_seed`'s stream, starting anywhere: skip to the end of the message
  // in flight, then take the next message's number from its first word and check strictly again.
  void resync(uint64_t stream_seed);
  uint64_t resyncs() const { return resyncs_; }
  uint64_t skipped_words() const { return skipped_; }
  // The number of the message it expects next (after a resync, once it has learnt where the
  // stream is): equal to the source's messages_sent() once the source's last message arrived.
  uint64_t next_message() const { return msg_; }
  bool resyncing() const { return resyncing_; }

  // As TrafficSource::Checkpoint: the generator only when drawn from (rx_ready below 1).
  struct Checkpoint {
    bool resyncing, at_message_start, skipping;
    uint64_t resyncs, skipped, seed, msg;
    uint32_t word;
    uint64_t messages, words, errors, messages_lost, words_lost;
    std::string first_error;
    std::optional<std::mt19937_64> rng;
  };
  void save(Checkpoint& c) const;
  void restore(const Checkpoint& c);

 private:
  bool resyncing_ = false, at_message_start_ = false;
  bool skipping_ = false;  // a message delivered again: its words up to its last are skipped
  uint64_t resyncs_ = 0, skipped_ = 0;
  uint64_t seed_;
  TrafficConfig cfg_;
  std::mt19937_64 rng_;
  uint64_t msg_ = 0;
  uint32_t word_ = 0;
  uint64_t messages_ = 0, words_ = 0, errors_ = 0, messages_lost_ = 0, words_lost_ = 0;
  // Where another word was expected: the number of the other message (earlier or later) whose
  // first word `data` is, else nullopt.
  std::optional<uint64_t> named_message(uint64_t data) const;
  void error(uint64_t cycle, const std::string& what);
  std::string first_error_;
  std::optional<MessageWords> cache_;  // the expected message's
};

}  // namespace mxtb::sim
