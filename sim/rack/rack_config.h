// A rack emulated as one system (docs/rack.md): its servers (each a whole board: controller RTL,
// firmware, link layers, mesh), the fibres between their meshes with each fibre's latency and
// loss, the tenant whose torus spans them, the run, and the faults of the fibres. Plain values;
// apps/mxtb/scenario.cpp loads them from a rack file.
#pragma once

#include "protocol/rack_map.h"
#include "sim/server/server_sim.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim::rack {

// A rack that cannot be built as configured; the message names the value.
struct RackError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Light in standard single-mode fibre: group index 1.468 at 1550 nm, c / 1.468 = 2.04e8 m/s,
// 4.9 ns a metre (the fibre makers' datasheets, e.g. Corning SMF-28).
constexpr double kFibreNsPerMetre = 4.9;

struct FibreLine {
  double metres = 2.0;      // a patch cord between servers of one rack (our assumption; the paper gives none)
  double retimer_ns = 0.0;  // Morphlux's path is optical end to end (lane SerDes, mesh, fibre, mesh, SerDes): no retimer
  double loss_db = 3.0;     // two fibre-to-chip couplings of ~1.5 dB (edge couplers of a photonic interposer)
};

struct FibreFault {
  enum class Kind { Cut, Dark } kind = Kind::Cut;  // cut: dark from then on; dark: for `cycles`
  int fibre = 0;                                   // index into the wiring
  uint64_t at_cycle = 0;
  uint64_t cycles = 0;
  bool dark_at(uint64_t cycle) const { return cycle >= at_cycle && (kind == Kind::Cut || cycle < at_cycle + cycles); }
};

// The meshes' extinction-ratio floor in a rack. A path through one 32-port mesh passes 9
// elements, each leaking the floor of another circuit into it (SXR about ER - 10 log10 9): at the
// server's 30 dB it reaches 20.95 dB against the receivers' 20 dB limit. A path between servers
// passes 18 elements and a fibre's loss: 17.9 dB at 30 dB, garbled (measured: docs/rack.md), so no
// lane could train across a fibre. 35 dB (the floor of dual-MZI switch elements) gives 22.9 dB.
constexpr double kRackExtinctionDb = 35.0;

struct RackConfig {
  RackConfig() { server.mesh.extinction_db = kRackExtinctionDb; }
  std::string name = "rack";
  uint64_t seed = 1;  // server s runs with server_seed(seed, s): server 0 with the rack's own
  protocol::RackShape shape;
  std::vector<protocol::RackFibre> wiring;  // protocol::torus_wiring(shape) unless listed by hand
  std::vector<FibreLine> lines;             // per fibre of the wiring
  ServerConfig server;                      // every server's: clock, mesh, traffic, engine (seed and fibre ports per server)
  std::string calibration_file;             // the mesh's calibration, for every server's firmware
  double settle_taus = 5;                   // the firmware's settle timer, in the mesh's time constants
  // A spare-ready bring-up (spare_ready.h; docs/rack.md): each circuit between two servers on
  // the fibre, and each board's map routed the way, that leave the most substitutions of a tenant
  // XPU by its server's spare clean. false: the first free fibres (protocol::rack_tenants_map) and
  // the firmware's routing from phase 1's states.
  bool spare_ready = true;
  protocol::RackPlacement tenant;           // protocol::whole_rack_placement(shape) by default
  // Tenants beside the first (docs/rack.md, "Several tenants"): each its own torus on its own XPUs,
  // their circuits on the fibres the first leaves; served with a job, tenant k runs job k.
  std::vector<protocol::RackPlacement> co_tenants;
  double run_us = 250;                      // simulated time from power-on
  uint32_t window = 0;                      // cycles a window; 0: the shortest fibre's latency (at most that)
  std::vector<FibreFault> faults;
};

// Every tenant in order: the first (RackConfig::tenant), then the co-tenants. Their circuits
// together are the rack's bring-up map (protocol::rack_tenants_map).
std::vector<protocol::RackPlacement> rack_tenants(const RackConfig& cfg);
uint64_t server_seed(uint64_t rack_seed, int server);
// A fibre's latency in the lane clock's cycles, rounded to the nearest (the blocks cross in whole
// cycles). RackError when below one cycle: the conservative window needs at least one.
uint32_t fibre_latency_cycles(const RackConfig& cfg, int fibre);
// The rack's window: RackConfig::window, else the shortest fibre's latency, so that nothing sent
// in a window is due in it. A rack without fibres: 64 cycles.
uint32_t window_cycles(const RackConfig& cfg);
// The first rack-wide XPU number of server s (its board's straps): s x XPUs a server.
int xpu_base(const RackConfig& cfg, int server);
// Server s's configuration: the rack's template with its own seed, fibre ports and XPU numbers;
// the XPUs' streams drawn from the rack's seed.
ServerConfig server_config(const RackConfig& cfg, int server);
// Everything checked before anything starts; RackError naming the value otherwise.
void check_rack(const RackConfig& cfg);

}  // namespace mxtb::sim::rack
