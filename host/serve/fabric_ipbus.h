// FabricLinks over the emulated server (`mxtb sim` through the fabric client): circuits are
// counted from the controller's ACTIVE_MAP and LINK_STATUS, extra circuits are placed by handing
// the firmware a new port map through the mailbox, and each reconfiguration's delay is what the
// emulated controller, mesh and link layers take, measured in emulator time. docs/serve.md.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/fabric_map.h"
#include "host/serve/serve.h"

namespace mxtb::host::fabric {
class Board;
}

namespace mxtb::host::serve {

struct EmulatorFabricConfig {
  protocol::ServerShape shape;  // 5 XPUs x 4 lanes, 32-port mesh (the emulated server)
  // The emulated XPU has 4 lanes, the modeled accelerator 16: each emulated circuit stands for
  // this many modeled circuits of lane_gbps each (1 base + 3 extra emulated = 4 + 12 modeled).
  int modeled_per_circuit = 4;
  double lane_gbps = 200;
  uint64_t link_up_timeout_ns = 3'000'000;  // emulator time for moved circuits to become Active
  uint64_t poll_ns = 2'000;                 // how much emulator time passes between looks
  // live_circuits reads the board at most once per this much serving time for a pair (and after
  // every map change): a scheduler polls link state, it does not read it before every transfer.
  double read_every_s = 1e-3;
};

class EmulatorFabricLinks : public FabricLinks {
 public:
  // Does not touch the board; place_base() commits the base map.
  EmulatorFabricLinks(fabric::Board& board, EmulatorFabricConfig cfg = {});

  // The base placement (mesh port -> port, -1 unused; both directions of every circuit):
  // XPU 0 (serving) and 1 (peer) share one circuit, their other lanes go to XPUs 2 and 3, which
  // also connect to each other; XPU 4 (the spare) is unmapped. Per XPU pair, circuits:
  // 0-1: 1, 0-2: 1, 0-3: 2, 1-2: 2, 1-3: 1, 2-3: 1.
  static std::vector<int> base_map(const protocol::ServerShape& s);
  // The map with up to n more lanes of a and b connected to each other, taken from their other
  // circuits; the lanes those circuits ended on are connected to each other (unused when both are
  // on one XPU). Returns the map; `added` says how many circuits a-b it adds.
  static std::vector<int> with_extra(const protocol::ServerShape& s, const std::vector<int>& map, int a, int b, int n,
                                     int* added);

  // Commits the base map and waits until its circuits are Active; throws std::runtime_error naming
  // the firmware's answer or the links that stayed down. Returns the measured delay in seconds.
  double place_base();

  int live_circuits(int xpu_a, int xpu_b, double now_s) const override;
  double lane_gbps() const override { return cfg_.lane_gbps; }
  double request_extra_circuits(int xpu_a, int xpu_b, int n, double now_s) override;
  double release(int xpu_a, int xpu_b, double now_s) override;

  // Circuits from a to b (emulated lanes) whose link is Active, read from the board now.
  int emulated_circuits(int xpu_a, int xpu_b);
  const std::vector<int>& port_map() const { return map_; }
  // Every committed map's delay (seconds of emulator time), place_base included.
  const std::vector<double>& measured_delays_s() const { return delays_s_; }
  uint64_t board_reads() const { return reads_; }

 private:
  // Commits `map`, waits for every lane whose circuit changed (and now ends on another XPU) to
  // retrain to Active; returns the emulator time from the command to all of them Active.
  double commit(const std::vector<int>& map);

  fabric::Board& board_;
  EmulatorFabricConfig cfg_;
  std::vector<int> base_, map_;
  std::vector<int> pending_ports_;  // a's lanes whose new circuits carry from pending_until_s_
  double pending_until_s_ = 0;
  std::vector<double> delays_s_;
  mutable uint64_t reads_ = 0;
  struct Reading {
    int a = -1, b = -1;
    double at_s = 0;
    int circuits = 0;
    bool valid = false;
  };
  mutable Reading last_;
};

}  // namespace mxtb::host::serve
