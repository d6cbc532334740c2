// A restore of an XPU's state onto a spare over the RTL links: the XPUs holding the copy (the
// sources) send it over every circuit they have to the spare, in messages of `message_words`, and
// the spare checks every word against the state it should get (a pure function of the seed, the
// spare and the word's place in the state) and every end-of-message flag. The state is split over
// the circuits in equal shares, one per circuit, so they all carry theirs at once.
#pragma once

#include "protocol/fabric_map.h"
#include "sim/collective/collective.h"
#include "sim/server/lane_program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mxtb::sim {

struct TransferSpec {
  std::vector<RingHop> circuits;  // tx: a source's lane, rx: the destination's lane
  int dest = -1;
  uint64_t bytes = 0;             // the whole state moved (a multiple of 8: whole lane words)
  uint64_t seed = 1;
  uint32_t message_words = 256;
};

// Word `index` of the state that XPU `dest` receives.
uint64_t state_word(uint64_t seed, int dest, uint64_t index);

// The circuits from any of `sources` to `dest` in `port_target` (mesh port -> port, XPU lanes first).
std::vector<RingHop> transfer_circuits(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                                       const std::vector<int>& sources, int dest);

class StateTransfer : public LaneProgram {
 public:
  StateTransfer(TransferSpec spec, const protocol::ServerShape& shape);  // std::invalid_argument naming a bad spec

  bool owns(int link) const override;
  Drive drive(int link) override;
  void fire(int link) override;
  void deliver(int link, uint64_t data, bool last, uint64_t cycle) override;
  bool wants_attention() const override { return done(); }
  uint64_t messages_delivered() const override { return messages_; }

  void start(uint64_t cycle) { start_cycle_ = cycle; }
  bool done() const { return received_ == words_; }
  uint64_t start_cycle() const { return start_cycle_; }
  uint64_t end_cycle() const { return end_cycle_; }  // the last word's delivery
  uint64_t wrong() const { return wrong_; }           // words that arrived different or out of place
  const std::string& first_error() const { return first_error_; }
  bool message_open(int link) const;
  const TransferSpec& spec() const { return spec_; }

 private:
  struct Share {
    uint64_t first = 0, words = 0;  // its words of the state: [first, first + words)
    uint64_t sent = 0, got = 0;
  };
  TransferSpec spec_;
  uint64_t words_ = 0, received_ = 0, wrong_ = 0, messages_ = 0;
  uint64_t start_cycle_ = 0, end_cycle_ = 0;
  std::vector<Share> shares_;            // per circuit
  std::vector<int> tx_share_, rx_share_;  // per link: its circuit, -1
  std::string first_error_;
};

}  // namespace mxtb::sim
