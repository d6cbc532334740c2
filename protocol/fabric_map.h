// The server's fabric map: which XPU lane sits on which mesh port, and which circuits a tenant's
// logical 2-D torus needs. Turning "logical position p is physical XPU x" into the mesh's port
// permutation (both directions of every circuit) and into each lane's expected peer identity is
// the one place where a failover's spare substitution happens. ServerShape is the one definition
// of the server's shape: firmware, emulator and host take it from here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mxtb::protocol {

struct ServerShape {
  int xpus = 5;            // physical XPUs, spares included
  int lanes_per_xpu = 4;   // lanes 0:+x, 1:-x, 2:+y, 3:-y for a 2-D torus
  int mesh_ports = 32;     // XPU lanes first (xpu * lanes + lane), then external fibres
  int links() const { return xpus * lanes_per_xpu; }  // one link layer per XPU lane
  bool operator==(const ServerShape& o) const {
    return xpus == o.xpus && lanes_per_xpu == o.lanes_per_xpu && mesh_ports == o.mesh_ports;
  }
  bool operator!=(const ServerShape& o) const { return !(*this == o); }
};

// A lane's rate: the link layer's 64-bit word every cycle of the board clock (rtl/link's tx_data_i,
// rx_data_o), 10 Gb/s at 156.25 MHz, the prototype's NIC ports. The one place a lane's rate comes
// from: the restore, the collectives' limits and the report all derive it from the clock.
inline constexpr int kLaneWordBits = 64;
inline double lane_gbps(double clock_mhz) { return kLaneWordBits * clock_mhz / 1000.0; }

struct LaneId {
  int xpu = -1;
  int lane = -1;
  bool operator==(const LaneId& o) const { return xpu == o.xpu && lane == o.lane; }
};

// A tenant's logical torus of dim_x x dim_y positions, placed on physical XPUs.
struct TorusPlacement {
  int dim_x = 2, dim_y = 2;
  std::vector<int> xpu_of_position;  // position (x + dim_x * y) -> physical XPU
};

struct FabricMap {
  std::vector<int> port_target;     // mesh input port -> output port, -1 unused
  std::vector<LaneId> expected_peer;  // per mesh port with an XPU lane: the lane it should train with
};

class FabricMapError : public std::exception {
 public:
  explicit FabricMapError(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

int port_of(const ServerShape& s, LaneId lane);
LaneId lane_of_port(const ServerShape& s, int port);  // xpu -1 for an external fibre

// Circuits of the torus: position p's +x lane to its +x neighbour's -x lane, and likewise for y.
// Throws FabricMapError naming the problem (an XPU used twice, out of range, too few lanes).
FabricMap torus_map(const ServerShape& s, const TorusPlacement& t);

// Bandwidth steered to a ring (Morphlux): every lane of the ring's XPUs into the ring, the first
// half of an XPU's lanes to its successor's second half, so that each hop gets lanes / 2 circuits
// (two XPUs: all of their lanes, to each other). Throws FabricMapError as torus_map does.
FabricMap ring_map(const ServerShape& s, const std::vector<int>& ring);

// A ring through every position of the torus over its own edges (its collectives' ring order):
// a row-major snake when dim_y is 1 or even, a column-major one when dim_x is even. Throws
// FabricMapError for an odd x odd torus (none is built here).
std::vector<int> ring_positions(const TorusPlacement& t);
// ring_positions() as the tenant's XPUs.
std::vector<int> ring_xpus(const TorusPlacement& t);

// The same tenant with physical XPU `failed` replaced by `spare`.
TorusPlacement substitute(const TorusPlacement& t, int failed, int spare);

}  // namespace mxtb::protocol
