// The rack's collective (rack_collective.h): its numbering, its ring order and its rings.
#include "sim/rack/rack_collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim::rack {

protocol::ServerShape rack_numbering(const protocol::RackShape& shape) {
  protocol::ServerShape s = shape.server;
  s.xpus = shape.server.xpus * shape.servers();
  s.mesh_ports = s.links();  // every port of the numbering is a lane: its fibres are inside it
  return s;
}

std::vector<Ring> rack_ring_plan(const protocol::RackShape& shape, const protocol::RackMap& map, const std::vector<int>& order) {
  const int n = static_cast<int>(order.size());
  if (n < 2) throw std::invalid_argument(fmt::format("a ring needs at least 2 XPUs, not {}", n));
  const int lanes = shape.server.lanes_per_xpu;
  auto link_of = [&](const protocol::RackLane& l) { return (l.server * shape.server.xpus + l.xpu) * lanes + l.lane; };
  auto xpu_of = [&](const protocol::RackLane& l) { return l.server * shape.server.xpus + l.xpu; };
  std::vector<std::vector<RingHop>> hops(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    const int from = order[static_cast<size_t>(p)], to = order[static_cast<size_t>((p + 1) % n)];
    for (const protocol::RackCircuit& c : map.circuits) {
      if (xpu_of(c.a) == from && xpu_of(c.b) == to) hops[static_cast<size_t>(p)].push_back({link_of(c.a), link_of(c.b)});
      else if (xpu_of(c.b) == from && xpu_of(c.a) == to) hops[static_cast<size_t>(p)].push_back({link_of(c.b), link_of(c.a)});
    }
    std::sort(hops[static_cast<size_t>(p)].begin(), hops[static_cast<size_t>(p)].end(),
              [](const RingHop& a, const RingHop& b) { return a.tx_link < b.tx_link; });
    if (hops[static_cast<size_t>(p)].empty())
      throw std::invalid_argument(fmt::format("no circuit from rack XPU {} to rack XPU {}: the ring cannot be formed", from, to));
  }
  return rings_over(order, hops);
}

}  // namespace mxtb::sim::rack
