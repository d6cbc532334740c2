// A collective across a rack's servers (`mxtb collective --rack FILE`, docs/rack.md): the rack
// tenant's XPUs as the ranks of one ring collective, its rings over the tenant's circuits, the
// cross-server hops through both meshes and a fibre. The collective is the single server's
// (sim/collective/collective.h) on the rack's numbering: XPU x of server s is rack XPU
// s * xpus + x and its lane l rack link (s * xpus + x) * lanes + l, so one RingCollective holds
// every rank and checks every element, and each board's lanes reach it through a ServerSlice.
// A rank's sends and receives touch only its own lanes' state, so the boards may step in any order
// within a window: the result and the cycles do not depend on it.
#pragma once

#include "protocol/rack_map.h"
#include "sim/collective/collective.h"
#include "sim/server/lane_program.h"

#include <cstdint>
#include <vector>

namespace mxtb::sim::rack {

// The sweep to run on the rack tenant once every circuit of its rings is Active.
struct RackCollectiveOptions {
  CollectiveOp op = CollectiveOp::AllReduce;
  DataType type = DataType::F32;
  std::vector<uint64_t> sizes;  // bytes of the whole buffer (nccl-tests' size), each a whole number of elements per rank
  uint64_t seed = 1;
  uint32_t grain_words = 1;
};

// The rack's numbering as one server's shape: every server's XPUs in a row, every port a lane.
protocol::ServerShape rack_numbering(const protocol::RackShape& shape);
using protocol::rack_xpu;
using protocol::torus_ring_positions;

// Rings over `order` (rack XPUs, ring order) on the map's circuits (rings_over: as many as the hop
// with the fewest circuits allows, and their reverses). Throws std::invalid_argument naming a hop
// without a circuit.
std::vector<Ring> rack_ring_plan(const protocol::RackShape& shape, const protocol::RackMap& map, const std::vector<int>& order);

// One board's lanes of a program on the rack's numbering (a rack collective, or the rack tenant's
// job): its link l is the program's rack link offset + l.
class ServerSlice : public LaneProgram {
 public:
  ServerSlice(LaneProgram& program, int offset) : program_(program), offset_(offset) {}
  bool owns(int link) const override { return program_.owns(offset_ + link); }
  Drive drive(int link) override { return program_.drive(offset_ + link); }
  void fire(int link) override { program_.fire(offset_ + link); }
  void deliver(int link, uint64_t data, bool last, uint64_t cycle) override { program_.deliver(offset_ + link, data, last, cycle); }

 private:
  LaneProgram& program_;
  const int offset_;
};

}  // namespace mxtb::sim::rack
