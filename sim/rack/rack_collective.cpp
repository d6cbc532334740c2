// The rack's collective (rack_collective.h): its numbering, its ring order and its rings.
#include "sim/rack/rack_collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim::rack {

protocol::ServerShape rack_numbering(const protocol::RackShape& shape) {
  protocol::ServerShape s = shape.server;
  s.xpus = shape.server.xpus * shape.servers();
  return s;
}

int rack_xpu(const protocol::RackShape& shape, const protocol::RackXpu& x) { return x.server * shape.server.xpus + x.xpu; }

std::vector<int> torus_ring_positions(int dim_x, int dim_y) {
  if (dim_x < 1 || dim_y < 1 || dim_x * dim_y < 2)
    throw protocol::RackMapError(fmt::format("a ring over a {}x{} torus: at least 2 positions needed", dim_x, dim_y));
  std::vector<int> order;
  if (dim_y == 1 || dim_x == 1) {
    for (int p = 0; p < dim_x * dim_y; ++p) order.push_back(p);
    return order;
  }
  const bool transpose = dim_y % 2 != 0;
  if (transpose && dim_x % 2 != 0)
    throw protocol::RackMapError(
        fmt::format("a ring over a {}x{} torus through neighbours only: one dimension must be even", dim_x, dim_y));
  const int X = transpose ? dim_y : dim_x, Y = transpose ? dim_x : dim_y;  // Y even
  auto at = [&](int x, int y) { return transpose ? y + dim_x * x : x + dim_x * y; };
  order.push_back(at(0, 0));
  for (int y = 0; y < Y; ++y)
    for (int i = 1; i < X; ++i) order.push_back(at(y % 2 == 0 ? i : X - i, y));
  for (int y = Y - 1; y >= 1; --y) order.push_back(at(0, y));
  return order;
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
