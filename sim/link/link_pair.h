// A link pair: two verilated link endpoints (A, B) joined by two lane channels, an XPU traffic
// source and scoreboard on each side, and an optional third endpoint (C) that A's lane can be
// moved to: unplanned (swap_peer: an impostor A does not expect) or planned (move_peer: the
// controller re-points A's lane and its expectation, as bandwidth steering does, and may bring it
// back to B). C has its own XPU traffic and scoreboard. Advanced cycle by cycle from plain C++;
// sim/link/link_pair_sc.h puts it under SystemC.
#pragma once

#include "sim/link/lane_channel.h"
#include "sim/link/xpu_traffic.h"

#include <mxtb/link_defs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::sim {

// A fault or control action at a cycle. Lane: 0 = A->B, 1 = B->A, 2 = both (A's lane to
// whichever peer it is connected to).
struct LinkAction {
  enum class Kind { DarkOn, DarkOff, SetBer, SwapPeer, MovePeer, Disable, Enable, Retrain };
  uint64_t cycle = 0;
  Kind kind = Kind::DarkOn;
  int lane = 2;        // DarkOn, DarkOff, SetBer
  char endpoint = 'a'; // Disable, Enable, Retrain: which endpoint; MovePeer: the new peer, 'b' or 'c'
  double value = 0.0;  // SetBer
};

struct LinkPairConfig {
  std::string name = "link-pair";
  uint64_t seed = 1;
  double clock_mhz = 156.25;
  uint64_t traffic_cycles = 200000;  // cycles with traffic offered
  uint64_t drain_cycles = 100000;    // most cycles allowed afterwards to deliver and settle
  EndpointIdentity a{1, 0}, b{2, 0}, impostor{7, 3};  // the impostor is endpoint C
  bool check_peer = true;
  LaneChannelConfig ab, ba;
  TrafficConfig traffic_ab, traffic_ba;
  std::vector<LinkAction> actions;  // sorted by cycle
  // Expectations the verdict checks.
  link::LinkState expect_state_a = link::LinkState::Active;
  link::LinkState expect_state_b = link::LinkState::Active;
  std::optional<link::Reason> expect_reason_a;
  bool expect_all_delivered = true;
  // false: the endpoints built without assertions (Vlink_endpoint_noassert), only for `mxtb bench
  // link`, which reports what the assertions cost. Ignored with a waveform (the traced models
  // have them).
  bool assertions = true;
};

struct TraceOptions {
  std::string fst_path;      // empty: no waveform
  uint64_t from_cycle = 0;   // dump window [from, to)
  uint64_t to_cycle = UINT64_MAX;
};

struct Transition {
  uint64_t cycle;
  char endpoint;
  link::LinkState from, to;
  link::Reason reason;
};

struct EndpointReport {
  link::LinkState state;
  link::Reason reason;
  EndpointIdentity peer;
  uint64_t frames_tx, frames_rx, crc_errors, replays, retrains, bad_blocks;
};

// One XPU's stream: "ab" is A's, delivered to whichever peer it was connected to; "ba" is the
// stream of A's peer at the end of the run (B, or C after a planned move), as A received it.
struct DirectionReport {
  uint64_t messages_sent, messages_delivered, words_delivered, errors;
  std::string first_error;
  uint64_t peer_moves = 0;  // planned moves of A's lane, which this stream's scoreboards followed
  bool last_delivered = true;  // the source's last message arrived (what a moved stream must do)
};

struct LinkPairResult {
  uint64_t cycles;
  EndpointReport a, b;
  std::optional<EndpointReport> c;  // when the scenario has a third endpoint
  char peer = 'b';                   // A's planned peer at the end
  DirectionReport ab, ba;
  std::vector<Transition> transitions;
  LaneChannelStats ch_ab, ch_ba;
  bool drained;
  std::vector<std::string> failures;  // empty: the scenario passed
  bool passed() const { return failures.empty(); }
};

class LinkPair {
 public:
  // apply_actions_itself: false when an external process (the SystemC fault injector) applies
  // the scenario's actions by calling apply().
  LinkPair(const LinkPairConfig& cfg, const TraceOptions& trace = {}, bool apply_actions_itself = true);
  ~LinkPair();
  LinkPair(const LinkPair&) = delete;
  LinkPair& operator=(const LinkPair&) = delete;

  void step(uint64_t cycles);
  uint64_t cycle() const;
  double period_ns() const { return 1000.0 / cfg_.clock_mhz; }

  // The run as a sequence of action points: act() does what is due now (actions, the end of the
  // traffic phase, the drain check); cycles_to_next_action() says how far the next one is.
  void act();
  uint64_t cycles_to_next_action() const;
  bool finished() const { return finished_; }
  void apply(const LinkAction& a);
  // Plain C++ loop harness: act, step, act, ... until finished.
  void run();

  LinkPairResult result() const;
  const LinkPairConfig& config() const { return cfg_; }
  link::LinkState state(char endpoint) const;

  struct Impl;  // the verilated models, channels and XPUs (link_pair.cpp)

 private:
  LinkPairConfig cfg_;
  bool apply_actions_;
  std::unique_ptr<Impl> impl_;
  size_t next_action_ = 0;
  bool traffic_phase_ = true;
  bool finished_ = false;
  bool drained_ = false;
  uint64_t drain_start_ = 0;
};

// How often the drain phase checks whether everything was delivered.
inline constexpr uint64_t kDrainCheckCycles = 1024;

}  // namespace mxtb::sim
