// The rack's topology (docs/rack.md): servers in a 2-D torus of servers, each server's mesh with
// fibre ports towards its neighbours, and the circuits a tenant's torus of XPUs needs when it
// spans servers. What the emulator wires and what host software plans from: both take it from
// here, as they take a server's shape from protocol/fabric_map.h.
//
// The paper's rack is a 4x4x4 torus of 64 XPUs, 16 servers of 4. Here a server's 4 tenant XPUs
// form a 2x2 block of the rack's XPU torus and the servers a torus of servers, so 16 servers as
// 4x4 give an 8x8 torus of 64 XPUs: the paper's third dimension is folded into the second (a
// 2-D torus of servers has 4 neighbours, the paper's 3-D one 6).
#pragma once

#include "protocol/fabric_map.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::protocol {

struct RackMapError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct RackShape {
  ServerShape server;           // every server's
  int servers_x = 2, servers_y = 2;
  int fibres_per_neighbour = 3;  // duplex fibres between directly adjacent servers
  int servers() const { return servers_x * servers_y; }
  int server_at(int x, int y) const;  // torus coordinates, wrapped
};

// Directions of a torus, in the lanes' order: 0 +x, 1 -x, 2 +y, 3 -y.
enum Direction { kPlusX = 0, kMinusX = 1, kPlusY = 2, kMinusY = 3 };
const char* direction_name(int d);  // "+x", ...

// One end of a fibre: a server and a fibre port of its mesh (at or beyond the lanes' ports).
struct FibreEnd {
  int server = -1;
  int port = -1;
  bool operator==(const FibreEnd& o) const { return server == o.server && port == o.port; }
};
// A duplex fibre (a strand each way) between two servers' fibre ports. `direction`: from a
// towards b in the torus of servers, or -1 for a fibre the rack file lists by hand.
struct RackFibre {
  FibreEnd a, b;
  int direction = -1;
};

int fibre_ports(const ServerShape& s);  // mesh ports beyond the lanes'
// The fibre port of a server on the side of direction `d`, fibre number `f` there.
int neighbour_port(const RackShape& r, int d, int f);
// The torus of servers' wiring: F fibres from each server's +x side to its +x neighbour's -x side,
// and from +y to -y. A dimension of one server has no fibres (its wrap stays inside the server).
// Throws RackMapError when 4 sides x F fibres do not fit the fibre ports.
std::vector<RackFibre> torus_wiring(const RackShape& r);
// Throws RackMapError naming the fibre and the value: a server that does not exist, a port that is
// not a fibre port, a port joined twice, a fibre joining a server to itself at one port.
void check_wiring(const RackShape& r, const std::vector<RackFibre>& wiring);

// An XPU of the rack, and a lane of one.
struct RackXpu {
  int server = -1;
  int xpu = -1;
  bool operator==(const RackXpu& o) const { return server == o.server && xpu == o.xpu; }
};
struct RackLane {
  int server = -1;
  int xpu = -1;
  int lane = -1;
  bool operator==(const RackLane& o) const { return server == o.server && xpu == o.xpu && lane == o.lane; }
};
std::string to_string(const RackLane& l);  // "server 2 XPU 1 lane 0"

// A tenant's torus of dim_x x dim_y positions on the rack's XPUs; 0 x 0 with no XPUs: no tenant.
struct RackPlacement {
  int dim_x = 4, dim_y = 4;
  std::vector<RackXpu> xpu_of_position;  // position (x + dim_x * y)
};
// Every server's XPUs 0-3 as a 2x2 block (XPU bx + 2 by at block position (bx, by)): the rack's
// XPU torus of (2 servers_x) x (2 servers_y). The servers' other XPUs are spares.
RackPlacement whole_rack_placement(const RackShape& r);

// A circuit between two lanes: inside one server's mesh, or through both meshes and a fibre.
struct RackCircuit {
  RackLane a, b;
  int fibre = -1;  // index into the wiring; -1 inside a server
};
struct RackMap {
  std::vector<std::vector<int>> port_target;      // per server: mesh input port -> output port, -1 unused
  std::vector<std::vector<RackLane>> expected_peer;  // per server, per lane port: whom it must train with
  std::vector<RackCircuit> circuits;
};
// The circuits of the tenant's torus (position p's +x lane to its +x neighbour's -x lane, and
// likewise for y), each server's port map with both directions of each, a cross-server circuit on a
// free fibre joining the two servers (the one on the matching side first). Throws RackMapError
// naming the problem: an XPU used twice or not there, two neighbours in servers no fibre joins, more
// circuits between two servers than fibres. With `keep` (the map running now), a circuit between
// the same two lanes as one of `keep`'s stays on its fibre, and one that keeps one lane of a
// circuit of `keep` and whose other end is in the same server as before (an XPU replaced by
// another of its server) takes that circuit's fibre: the far server's mesh stays as it is.
RackMap rack_torus_map(const RackShape& r, const std::vector<RackFibre>& wiring, const RackPlacement& t,
                       const RackMap* keep = nullptr);
// The circuits of several tenants' tori together (each as above), on the rack's fibres shared
// among them: an XPU of two tenants is refused naming both, as are more circuits between two
// servers than their fibres, counting every tenant's. With `keep`, every circuit of it that is
// still wanted stays on its fibre: placing one tenant again moves no other tenant's circuit.
RackMap rack_tenants_map(const RackShape& r, const std::vector<RackFibre>& wiring, const std::vector<RackPlacement>& tenants,
                         const RackMap* keep = nullptr);

// The rack's numbering of its XPUs, as a job's ranks name them: server s's XPU x is
// s * XPUs + x (every server's XPUs in a row).
int rack_xpu(const RackShape& shape, const RackXpu& x);

// A Hamiltonian cycle of a dim_x x dim_y torus of positions (x + dim_x y), each step to a torus
// neighbour: along row 0, back and forth over columns 1.. of the other rows, home down column 0.
// Needs an even dimension (or a line); throws RackMapError naming the dimensions otherwise.
std::vector<int> torus_ring_positions(int dim_x, int dim_y);

// The tenant's XPUs (rack numbering) in the ring order above: the ring its job runs on.
std::vector<int> rack_ring_xpus(const RackShape& shape, const RackPlacement& t);

}  // namespace mxtb::protocol
